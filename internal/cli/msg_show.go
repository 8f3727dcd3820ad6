package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/relq/relq/backend"
	"github.com/spf13/cobra"
)

func newMsgShowCommand(env Env, conn *connOptions) *cobra.Command {
	var raw bool
	cmd := &cobra.Command{
		Use:   "show TOPIC GROUP ID",
		Short: "Show one message whole: state, lease or due time, metadata, payload, reason",
		Long: `show prints one message of a group whole, wherever it is: its state and what goes with
it (due time, holder and lease, reason), attempts, UUID, metadata sorted by key, and the
payload: indented JSON when it parses, text when it is UTF-8 text, else a hex dump. Control
characters are shown escaped, so nothing in a message can drive the terminal. --raw writes
the payload bytes alone, unchanged, for a file or a pipe.`,
		Example: `  relq msg show orders billing 42
  relq msg show orders billing 42 --raw > payload.bin`,
		Args: argsNamed("TOPIC", "GROUP", "ID"),
		RunE: onGroup(env, conn, func(cmd *cobra.Command, g *adminGroup, args []string) error {
			m, err := g.message(cmd, args[2])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if raw {
				p := m.Envelope.Payload
				if m.Raw != nil {
					p = m.Raw
				}
				_, err := out.Write(p)
				return err
			}
			writeMessage(out, g, m)
			return nil
		}),
	}
	cmd.Flags().BoolVar(&raw, "raw", false, "write only the payload's bytes (the stored entry's, if it cannot be decoded)")
	return cmd
}

// message reads one message of the group.
func (g *adminGroup) message(cmd *cobra.Command, id string) (backend.MessageInfo, error) {
	m, err := g.admin.Message(cmd.Context(), &backend.MessageParams{Topic: g.ref.topic, Group: g.group, ID: id})
	if errors.Is(err, backend.ErrMessageNotFound) {
		return m, g.noMessage(id)
	}
	if err != nil {
		return m, g.explain(fmt.Sprintf("message %q of %s", id, g.name()), err)
	}
	return m, nil
}

// field prints one "  label:   value" line of show, the values aligned.
func field(w io.Writer, label, value string) {
	fmt.Fprintf(w, "  %-18s%s\n", label+":", value)
}

func writeMessage(w io.Writer, g *adminGroup, m backend.MessageInfo) {
	fmt.Fprintf(w, "Message %s of %s\n", oneLine(m.ID), g.describe())
	field(w, "state", string(m.State))
	field(w, "attempts", fmt.Sprint(m.Attempts))
	if g.ref.label() == "zset" {
		field(w, "priority", fmt.Sprint(m.Priority))
	}
	switch m.State {
	case backend.StateDelayed:
		field(w, "due", timestamp(m.Due)+" ("+fromNow(m.Due)+")")
	case backend.StatePending:
		field(w, "consumer", oneLine(m.Consumer))
		if !m.Since.IsZero() {
			field(w, "claimed at", timestamp(m.Since))
		}
		lease := leaseText(m.LeaseLeft)
		if m.LeaseLeft < 0 {
			lease += ": the next reclaim gives it to another consumer"
		}
		field(w, "lease left", lease)
	case backend.StateDead:
		field(w, "dead-lettered at", timestamp(m.DeadAt))
	}
	if m.Reason != "" || m.State == backend.StateDead {
		field(w, "reason", oneLine(m.Reason))
	}
	switch {
	case m.BodyMissing:
		field(w, "body", "missing: only the message's ID is left (its stored body was deleted or evicted)")
	case m.Raw != nil || m.Err != nil:
		if m.Err != nil {
			field(w, "decode error", oneLine(m.Err.Error()))
		}
		writeEnvelope(w, backend.Envelope{}, m.Raw)
	default:
		writeEnvelope(w, m.Envelope, nil)
	}
}

// writeEnvelope prints a message's UUID, metadata (sorted by key) and payload, or the stored
// bytes that could not be decoded (raw, when not nil).
func writeEnvelope(w io.Writer, env backend.Envelope, raw []byte) {
	if raw != nil {
		fmt.Fprintf(w, "  the stored entry could not be decoded (%d bytes, %s):\n", len(raw), bytesKind(raw))
		writeBytes(w, "    ", raw)
		return
	}
	field(w, "uuid", oneLine(env.UUID))
	keys := make([]string, 0, len(env.Metadata))
	for k := range env.Metadata {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	field(w, "metadata", fmt.Sprint(len(keys)))
	width := 0
	for _, k := range keys {
		width = max(width, len(oneLine(k)))
	}
	for _, k := range keys {
		fmt.Fprintf(w, "    %-*s  %s\n", width, oneLine(k), oneLine(env.Metadata[k]))
	}
	field(w, "payload", fmt.Sprintf("%d bytes, %s", len(env.Payload), bytesKind(env.Payload)))
	if len(env.Payload) > 0 {
		writeBytes(w, "    ", env.Payload)
	}
}

// fromNow says when t is from now by this machine's clock ("in 4m59s", "3.0s ago").
func fromNow(t time.Time) string {
	d := time.Until(t)
	if d > 0 {
		return "in " + span(d)
	}
	return span(-d) + " ago"
}
