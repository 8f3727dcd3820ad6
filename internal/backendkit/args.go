package backendkit

import (
	"time"

	"github.com/relq/relq/pubsub"
)

// Millis converts a duration to whole milliseconds for a script, rounding up so that a
// positive duration never becomes zero.
func Millis(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// HeldArgs flattens fencing tokens into ARGV after head: head..., id, attempt, id, attempt, ...
func HeldArgs(head []any, items []pubsub.Held) []any {
	args := append(make([]any, 0, len(head)+2*len(items)), head...)
	for _, it := range items {
		args = append(args, it.ID, it.Attempt)
	}
	return args
}
