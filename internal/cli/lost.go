package cli

// What the tool commands say of messages Redis lost or a backlog dropped: a group its
// subscriptions registered again after its state vanished (relq stats, group ls), and a
// topic's backlog drops (topic show). Neither fails a command, so this is where an operator
// sees them.

import (
	"fmt"
	"io"
	"time"

	"github.com/relq/relq/backend"
)

// reregCell is a group's re-registrations in a table cell: "0", or "2 (3m0s ago)".
func reregCell(st backend.Stats) string {
	n := st.Counters.Reregistered
	if n == 0 || st.ReregisteredAt.IsZero() {
		return num(n)
	}
	return fmt.Sprintf("%d (%s)", n, ago(st.ReregisteredAt))
}

// writeReregistered prints a warning for each group of rows that was registered again: its
// messages may be lost, which a count alone does not say.
func writeReregistered(w io.Writer, rows []statsRow) {
	for _, r := range rows {
		st := r.st
		if st.Counters.Reregistered == 0 {
			continue
		}
		latest := ""
		if !st.ReregisteredAt.IsZero() {
			latest = fmt.Sprintf(", the latest at %s (%s)", timestamp(st.ReregisteredAt), ago(st.ReregisteredAt))
		}
		fmt.Fprintf(w, "WARNING: %s/%s (%s) was registered again %s by its subscriptions after its state vanished from Redis "+
			"(a restart without persistence, a failover, FLUSHALL, keys deleted by another client)%s; messages it held then may be lost.\n",
			oneLine(st.Topic), oneLine(st.Group), r.ref.label(), times(st.Counters.Reregistered), latest)
	}
}

// droppedText is what topic show says of the messages the topic's backlog dropped.
func droppedText(n int64) string {
	if n == 0 {
		return "none"
	}
	return fmt.Sprintf("%d message%s, the backlog's oldest, past its limit while the topic had no group: no group received them",
		n, plural(int(n)))
}

// ago says how long before now, by this machine's clock, t was: "3m0s ago" ("0s ago" for a t
// a little ahead, from another clock).
func ago(t time.Time) string { return span(time.Since(t)) + " ago" }

// times is "once" or "3 times".
func times(n int64) string {
	if n == 1 {
		return "once"
	}
	return num(n) + " times"
}
