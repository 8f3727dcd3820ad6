package backendkit

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync"
)

// Lanes are the publish lanes of one backend value, which make a publish that the Redis
// client resends after a lost reply store nothing twice, in a bounded number of records.
//
// Each Publish call takes a lane and the next token on it, and frees the lane when it
// returns. The publish script keeps one record per lane, "token:...:ms", in a field of the
// topic's meta HASH (Field): a call whose token is the record's is a resend, and gets the
// stored reply; any other token stores anew and overwrites the record. A lane runs one call at
// a time, so a resend always finds its own call's record, and the records of a process are
// as many as its most concurrent Publish calls, whatever the number of calls. The lane
// fields carry a random instance name, so that two processes (or two backends of one) never
// share a lane. A process that dies leaves its records behind: common.lua's sweep_lanes,
// run by a lane's first call (token "1"), deletes those idle for an hour.
type Lanes struct {
	instance string
	mu       sync.Mutex
	free     []int
	tokens   []uint64 // tokens[n] is the last token given on lane n; there are len(tokens) lanes
}

// NewLanes returns the lanes of a new backend value, under a random instance name.
func NewLanes() *Lanes {
	var id [6]byte
	_, _ = rand.Read(id[:])
	return &Lanes{instance: hex.EncodeToString(id[:])}
}

// Take returns a free lane and the next token on it (the first call on a lane gets "1").
// The caller frees the lane when its call has returned.
func (l *Lanes) Take() (int, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int
	if len(l.free) > 0 {
		n = l.free[len(l.free)-1]
		l.free = l.free[:len(l.free)-1]
	} else {
		n = len(l.tokens)
		l.tokens = append(l.tokens, 0)
	}
	l.tokens[n]++
	return n, strconv.FormatUint(l.tokens[n], 10)
}

// Free gives lane n back once the call that took it has returned.
func (l *Lanes) Free(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.free = append(l.free, n)
}

// Field is the meta HASH field that holds lane n's record: "p:<instance>:<n>" (the
// sweep_lanes pattern is "p:*").
func (l *Lanes) Field(n int) string { return "p:" + l.instance + ":" + strconv.Itoa(n) }
