package backend

import (
	"errors"
	"fmt"
	"time"
)

// DeadLetter is one message in a group's dead-letter store.
type DeadLetter struct {
	ID       string
	Topic    string
	Group    string
	Envelope Envelope
	// Raw holds the stored bytes when the entry could not be decoded.
	Raw      []byte
	Reason   string
	Attempts int
	// DeadAt is when it was dead-lettered (Redis clock).
	DeadAt time.Time
}

// DeadLettersParams are the inputs of Backend.DeadLetters. Topic and Group are required;
// the zero Offset and Count read the first page, of 100 (a backend may return fewer per call,
// list and zset at most their BatchSize). A negative Offset reads from the start.
type DeadLettersParams struct {
	Topic  string
	Group  string
	Offset int
	Count  int // zero: 100
}

// RequeueParams are the inputs of Backend.RequeueDeadLetters. They select the dead letters
// to requeue in one of two ways: IDs, or All. The zero value selects nothing and is refused
// with a *SelectionError (matching ErrNothingSelected) rather than read as "all", so that a
// tool passing on what its user chose, possibly nothing, never acts on a whole group by
// mistake; IDs together with All is a *ConfigError. See Validate.
type RequeueParams struct {
	Topic string
	Group string
	// IDs requeues those of them that are dead letters of the group when the requeue runs;
	// an ID that is not one is skipped, and the count returned says how many were requeued.
	IDs []string
	// All requeues every dead letter of the group, IDs left empty.
	All bool
}

// Validate reports whether p selects dead letters to requeue: exactly one of IDs (not empty)
// and All. Every backend checks p with it before it requeues anything; a caller may call it
// first to check a user's input. Topic and Group are checked by the backend, as names.
func (p *RequeueParams) Validate() error {
	switch {
	case len(p.IDs) > 0 && p.All:
		return &ConfigError{Field: "RequeueParams.All", Reason: "must be false when IDs are given"}
	case len(p.IDs) == 0 && !p.All:
		return &SelectionError{Params: "RequeueParams", Reason: "no IDs given and All is false"}
	}
	return nil
}

// PurgeParams are the inputs of Backend.PurgeDeadLetters. They select the dead letters to
// delete in one of two ways: IDs, or All (bounded by Limit when it is positive). The zero
// value selects nothing and is refused with a *SelectionError (matching ErrNothingSelected)
// rather than read as "all": a purge deletes for good, so deleting a whole group takes an
// explicit All. A Limit alone selects nothing either. IDs together with All or a Limit, or a
// negative Limit, is a *ConfigError. See Validate.
type PurgeParams struct {
	Topic string
	Group string
	// IDs, when not empty, purges exactly those of them that are dead letters of the group
	// when the purge runs; the count returned says how many. An ID that is not one (unknown,
	// or requeued and since ready, delayed or pending) is skipped and left as it is; one given
	// twice counts once. Each chunk of at most the backend's batch size is checked and purged
	// in one atomic step, so a letter requeued between listing and purging is never deleted.
	// The topic's other groups keep their copy.
	IDs []string
	// All purges the group's dead letters, oldest first: every one, or at most Limit when it
	// is positive.
	All bool
	// Limit, when positive, bounds All: at most that many dead letters are purged, oldest
	// first, so a tool that showed "N dead letters" deletes no more than those, and none that
	// died after it counted. Zero: no bound. It must be 0 with IDs.
	Limit int
}

// Validate reports whether p selects dead letters to purge: IDs (not empty) with neither
// All nor a Limit, or All with a Limit of zero (every one) or more (at most that many).
// Every backend checks p with it before it deletes anything; a caller may call it first to
// check a user's input. Topic and Group are checked by the backend, as names.
func (p *PurgeParams) Validate() error {
	switch {
	case p.Limit < 0:
		return &ConfigError{Field: "PurgeParams.Limit", Reason: "must not be negative"}
	case len(p.IDs) > 0 && p.All:
		return &ConfigError{Field: "PurgeParams.All", Reason: "must be false when IDs are given"}
	case len(p.IDs) > 0 && p.Limit != 0:
		return &ConfigError{Field: "PurgeParams.Limit", Reason: "must be 0 when IDs are given"}
	case len(p.IDs) == 0 && !p.All && p.Limit > 0:
		return &SelectionError{Params: "PurgeParams", Reason: "a Limit bounds All and selects nothing without it"}
	case len(p.IDs) == 0 && !p.All:
		return &SelectionError{Params: "PurgeParams", Reason: "no IDs given and All is false"}
	}
	return nil
}

// ErrNothingSelected reports a requeue or purge of dead letters whose params select none:
// neither IDs nor All. Nothing was requeued or deleted.
var ErrNothingSelected = errors.New("relq: no dead letter selected")

// SelectionError says which params selected no dead letter, and why. It matches
// ErrNothingSelected with errors.Is, and ErrInvalidConfig too, as every invalid params field
// does.
type SelectionError struct {
	Params string // "RequeueParams" or "PurgeParams"
	Reason string
}

// Error describes the failure for logs and users.
func (e *SelectionError) Error() string {
	return fmt.Sprintf("relq: %s select no dead letter: %s (give IDs, or set All)", e.Params, e.Reason)
}

// Is makes errors.Is(err, ErrNothingSelected) and errors.Is(err, ErrInvalidConfig) true.
func (e *SelectionError) Is(target error) bool {
	return target == ErrNothingSelected || target == ErrInvalidConfig
}
