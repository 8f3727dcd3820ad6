package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/relq/relq/backend"
	"github.com/spf13/cobra"
)

// Bounds of msg ls --count: a page is one Redis call, O(count · log N).
const (
	msgCountDefault = 20
	msgCountMax     = 1000
)

// maxEmptyPages bounds how many empty pages in a row msg ls reads on its own (a backend may
// skip entries that left the state) before it prints the cursor instead.
const maxEmptyPages = 10

func newMsgCommand(env Env) *cobra.Command {
	var conn connOptions
	cmd := parentCommand(&cobra.Command{
		Use:   "msg COMMAND",
		Short: "List a group's messages by state; show, delete or run one",
		Long: `msg works on the messages of one group of a topic, in any state: ready (due, waiting
for a consumer), delayed (waiting for their due time: delayed publishes and nack backoff),
pending (claimed, under a consumer's lease) and dead (dead letters).

  relq msg ls   TOPIC GROUP [--state ready|delayed|pending|dead] [--count 20] [--cursor C]
  relq msg show TOPIC GROUP ID [--raw]
  relq msg rm   TOPIC GROUP ID [--yes]
  relq msg run  TOPIC GROUP ID

Redis, prefix and backend are chosen as for relq stats (see relq stats --help).`,
	})
	conn.addFlags(cmd)
	cmd.AddCommand(newMsgLsCommand(env, &conn), newMsgShowCommand(env, &conn),
		newMsgRmCommand(env, &conn), newMsgRunCommand(env, &conn))
	return cmd
}

type msgLsOptions struct {
	state  string
	count  int
	cursor string
}

func newMsgLsCommand(env Env, conn *connOptions) *cobra.Command {
	var opts msgLsOptions
	cmd := &cobra.Command{
		Use:     "ls TOPIC GROUP",
		Aliases: []string{"list"},
		Short:   "List a group's messages in one state, a page at a time",
		Long: `ls lists a group's messages in one state, --count at a time, in the order they are
delivered (ready), fall due (delayed), see their lease expire (pending) or died (dead). Long
payloads and reasons are cut to the width of the terminal (whole, up to 1000 characters,
when the output is not one); relq msg show prints one message whole.

On a terminal it asks before each next page (Enter for more, q to stop). Otherwise, or when
stopped, it prints the cursor of the next page: give it to --cursor to go on. A page costs
one Redis call whatever the size of the queue, except on the list backend, whose ready
messages are in a Redis LIST: there a page cannot start deeper than 10,000 messages.`,
		Example: `  relq msg ls orders billing
  relq msg ls orders billing --state pending
  relq msg ls orders billing --state delayed --count 100 --cursor 1764511200000-17`,
		Args: argsNamed("TOPIC", "GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			state, err := backend.ParseState(opts.state)
			if err != nil {
				return err
			}
			if opts.count < 1 || opts.count > msgCountMax {
				return fmt.Errorf("--count %d: want 1 to %d", opts.count, msgCountMax)
			}
			return onGroup(env, conn, func(cmd *cobra.Command, g *adminGroup, _ []string) error {
				st, err := g.stats(cmd.Context())
				if err != nil {
					return err
				}
				l := &msgLister{g: g, env: env, out: cmd.OutOrStdout(), state: state, opts: opts}
				return l.run(cmd, st)
			})(cmd, args)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.state, "state", "s", "ready", "ready, delayed, pending or dead")
	f.IntVarP(&opts.count, "count", "n", msgCountDefault, fmt.Sprintf("messages per page (at most %d)", msgCountMax))
	f.StringVar(&opts.cursor, "cursor", "", `where to start: the cursor a page printed after "More:" (default: the top)`)
	return cmd
}

// msgLister prints the pages of one msg ls.
type msgLister struct {
	g     *adminGroup
	env   Env
	out   io.Writer
	state backend.MessageState
	opts  msgLsOptions
}

func (l *msgLister) run(cmd *cobra.Command, st backend.Stats) error {
	ctx := cmd.Context()
	var pg *pager
	if l.env.IsTerminal(l.out) {
		pg = newPager(l.env, l.out)
	}
	cursor, shown, empty := l.opts.cursor, 0, 0
	for {
		page, err := l.g.admin.Messages(ctx, &backend.MessagesParams{
			Topic: l.g.ref.topic, Group: l.g.group, State: l.state, Cursor: cursor, Count: l.opts.count})
		if err != nil {
			return l.g.explain(fmt.Sprintf("%s messages of %s", l.state, l.g.name()), err)
		}
		if len(page.Messages) == 0 {
			empty++
		} else {
			if shown == 0 {
				fmt.Fprintf(l.out, "%s of %s: %d in all, %s\n\n", stateTitle[l.state], l.g.describe(), stateCount(st, l.state), stateOrder[l.state])
			} else {
				fmt.Fprintln(l.out)
			}
			empty = 0
			shown += len(page.Messages)
			if err := l.table(page.Messages); err != nil {
				return err
			}
		}
		switch {
		case page.Next == "" && shown == 0 && l.opts.cursor != "":
			_, err = fmt.Fprintf(l.out, "No more %s messages in %s after that cursor.\n", l.state, l.g.describe())
			return err
		case page.Next == "" && shown == 0:
			_, err = fmt.Fprintf(l.out, "No %s messages in %s.\n", l.state, l.g.describe())
			return err
		case page.Next == "":
			return nil
		case empty > 0 && empty < maxEmptyPages:
		case empty > 0 || pg == nil || !pg.more(l.opts.count):
			_, err = fmt.Fprintf(l.out, "\nMore: --cursor %s\n", shellQuote(page.Next))
			return err
		}
		cursor = page.Next
	}
}

var stateTitle = map[backend.MessageState]string{
	backend.StateReady: "Ready messages", backend.StateDelayed: "Delayed messages",
	backend.StatePending: "Pending messages", backend.StateDead: "Dead letters",
}

var stateOrder = map[backend.MessageState]string{
	backend.StateReady: "in delivery order", backend.StateDelayed: "soonest due first",
	backend.StatePending: "soonest lease expiry first", backend.StateDead: "oldest first",
}

func stateCount(st backend.Stats, state backend.MessageState) int64 {
	switch state {
	case backend.StateReady:
		return st.Ready
	case backend.StateDelayed:
		return st.Delayed
	case backend.StatePending:
		return st.Pending
	}
	return st.Dead
}

// table prints one page: the columns depend on the state; the payload or the reason comes
// last, cut to the width.
func (l *msgLister) table(msgs []backend.MessageInfo) error {
	prio := l.g.ref.label() == "zset"
	var head []string
	switch l.state {
	case backend.StateReady:
		head = []string{"ID", "ATTEMPTS"}
	case backend.StateDelayed:
		head = []string{"ID", "DUE", "ATTEMPTS"}
	case backend.StatePending:
		head = []string{"ID", "CONSUMER", "LEASE LEFT", "ATTEMPTS"}
	case backend.StateDead:
		head = []string{"ID", "ATTEMPTS", "DEAD-LETTERED AT"}
	}
	if prio && l.state != backend.StateDead {
		head = append(head, "PRIORITY")
	}
	last := "PAYLOAD"
	if l.state == backend.StateDead {
		last = "REASON"
	}
	t := newTable(l.out, widthOf(l.env, l.out), append(head, "UUID", last)...)
	for _, m := range msgs {
		var row []string
		switch l.state {
		case backend.StateReady:
			row = []string{oneLine(m.ID), fmt.Sprint(m.Attempts)}
		case backend.StateDelayed:
			row = []string{oneLine(m.ID), timestamp(m.Due), fmt.Sprint(m.Attempts)}
		case backend.StatePending:
			row = []string{oneLine(m.ID), oneLine(m.Consumer), leaseText(m.LeaseLeft), fmt.Sprint(m.Attempts)}
		case backend.StateDead:
			row = []string{oneLine(m.ID), fmt.Sprint(m.Attempts), timestamp(m.DeadAt)}
		}
		if prio && l.state != backend.StateDead {
			row = append(row, fmt.Sprint(m.Priority))
		}
		lastCell := payloadCell(m)
		if l.state == backend.StateDead {
			lastCell = oneLine(m.Reason)
		}
		t.row(append(row, uuidCell(m), lastCell)...)
	}
	return t.flush()
}

func uuidCell(m backend.MessageInfo) string {
	switch {
	case m.BodyMissing:
		return "(body missing)"
	case m.Raw != nil || m.Err != nil:
		return "(undecodable)"
	}
	return oneLine(m.Envelope.UUID)
}

func payloadCell(m backend.MessageInfo) string {
	switch {
	case m.BodyMissing:
		return "-"
	case m.Raw != nil || m.Err != nil:
		return oneLine(fmt.Sprintf("(%d bytes: %v)", len(m.Raw), m.Err))
	}
	return bytesCell(m.Envelope.Payload)
}

// leaseText is a lease's time left, or how long ago it expired.
func leaseText(d time.Duration) string {
	if d < 0 {
		return "expired " + span(-d) + " ago"
	}
	return span(d)
}

// span prints a duration as age does, zero as "0s".
func span(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	return age(d)
}

// shellQuote quotes s for a shell when it holds anything but letters, digits and -_.:,/+=@%.
func shellQuote(s string) string {
	s = oneLine(s)
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:,/+=@%", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
