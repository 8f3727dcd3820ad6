package backendkit

import (
	"fmt"
	"time"

	"github.com/relq/relq/backend"
)

// Found says, for the log, what a re-registration (Backend.RegisterAgain) found of its topic: known reports a topic that still knew
// it had had groups (its keys were not all lost), others how many other groups it had.
func Found(known bool, others int64) string {
	switch {
	case !known:
		return "no trace of the topic's groups: its keys were lost (Redis restarted without persistence, " +
			"a failover to a replica that had not synced, FLUSHALL, or keys deleted by another client)"
	case others == 0:
		return "the topic without any group registered: the group's registration was deleted outside relq's Admin API"
	default:
		return fmt.Sprintf("the topic with %d other group(s) but without this one's registration: "+
			"it was deleted outside relq's Admin API", others)
	}
}

// RegainMode checks what RegisterAgainParams says of an ephemeral group and returns the
// regain scripts' ephemeral flag: "1" for an ephemeral group (with a valid consumer and a
// positive TTL), "0" for a durable one.
func RegainMode(p *backend.RegisterAgainParams) (string, error) {
	if !p.Ephemeral {
		return "0", nil
	}
	if err := backend.ValidateName("consumer", p.Consumer); err != nil {
		return "", err
	}
	if p.TTL <= 0 {
		return "", &backend.ConfigError{Field: "RegisterAgainParams.TTL", Reason: "must be positive"}
	}
	return "1", nil
}

// DecodeRegain decodes the reply every adapter's regain.lua starts with: {registered, times,
// at ms, known, other groups, backlog}.
func DecodeRegain(res []any) backend.RegisterAgainResult {
	r := backend.RegisterAgainResult{
		Registered: Int(res[0]) == 1,
		Times:      Int(res[1]),
		Backlog:    Int(res[5]),
	}
	if at := Int(res[2]); at > 0 {
		r.At = time.UnixMilli(at)
	}
	if r.Registered {
		r.Found = Found(Int(res[3]) == 1, Int(res[4]))
	}
	return r
}

// ValidateBacklogPolicy checks a backend's BacklogFull option; "" is BacklogDropOldest.
func ValidateBacklogPolicy(p backend.BacklogPolicy) error {
	switch p {
	case "", backend.BacklogDropOldest, backend.BacklogRefuse:
		return nil
	}
	return &backend.ConfigError{Field: "BacklogFull", Reason: fmt.Sprintf("unknown policy %q: want %q or %q",
		p, backend.BacklogDropOldest, backend.BacklogRefuse)}
}
