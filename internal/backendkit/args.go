package backendkit

import (
	"time"

	"github.com/relq/relq/backend"
)

// Millis converts a duration to whole milliseconds for a script, rounding up so that a
// positive duration never becomes zero, and without overflow near the largest Duration.
func Millis(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return ms
}

// HeldArgs flattens fencing tokens into ARGV after head: head..., id, attempt, id, attempt, ...
func HeldArgs(head []any, items []backend.Held) []any {
	args := append(make([]any, 0, len(head)+2*len(items)), head...)
	for _, it := range items {
		args = append(args, it.ID, it.Attempt)
	}
	return args
}
