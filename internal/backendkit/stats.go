package backendkit

import (
	"time"

	"github.com/relq/relq/backend"
)

// DecodeStats decodes the reply every adapter's stats.lua starts with: {ready, delayed,
// pending, dead, oldest pending age ms, oldest ready age ms (-1: none), counters HASH as a
// flat field/value list}. Counter fields it does not know are skipped.
func DecodeStats(topic, group string, res []any) backend.Stats {
	s := backend.Stats{
		Topic:            topic,
		Group:            group,
		Ready:            Int(res[0]),
		Delayed:          Int(res[1]),
		Pending:          Int(res[2]),
		Dead:             Int(res[3]),
		OldestPendingAge: age(res[4]),
		OldestReadyAge:   age(res[5]),
	}
	counters, _ := res[6].([]any)
	for i := 0; i+1 < len(counters); i += 2 {
		name, _ := counters[i].(string)
		if f := counterField(&s.Counters, name); f != nil {
			*f = Int(counters[i+1])
		} else if name == "reregistered_at" {
			s.ReregisteredAt = time.UnixMilli(Int(counters[i+1]))
		}
	}
	return s
}

// age converts a millisecond age from stats.lua (-1: none) to a duration.
func age(v any) time.Duration {
	n := Int(v)
	if n < 0 {
		return 0
	}
	return time.Duration(n) * time.Millisecond
}

// counterField maps a field of the counters HASH, as the scripts name it, to its Counters field.
func counterField(c *backend.Counters, name string) *int64 {
	switch name {
	case "published":
		return &c.Published
	case "claimed":
		return &c.Claimed
	case "acked":
		return &c.Acked
	case "nacked":
		return &c.Nacked
	case "reclaimed":
		return &c.Reclaimed
	case "dead_lettered":
		return &c.DeadLettered
	case "stale_acks":
		return &c.StaleAcks
	case "stale_nacks":
		return &c.StaleNacks
	case "reregistered":
		return &c.Reregistered
	}
	return nil
}
