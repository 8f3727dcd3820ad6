package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/relq/relq/backend"
	"github.com/spf13/cobra"
)

func newGroupCommand(env Env) *cobra.Command {
	var conn connOptions
	cmd := parentCommand(&cobra.Command{
		Use:   "group COMMAND",
		Short: "List a topic's groups; pause, resume or delete one",
		Long: `group works on the groups of a topic: each group gets its own copy of every message
published to the topic, and its consumers share them.

  relq group ls     TOPIC
  relq group pause  TOPIC GROUP
  relq group resume TOPIC GROUP
  relq group delete TOPIC GROUP [--yes]

Redis, prefix and backend are chosen as for relq stats (see relq stats --help).`,
	})
	conn.addFlags(cmd)
	cmd.AddCommand(newGroupLsCommand(env, &conn), newGroupPauseCommand(env, &conn, true),
		newGroupPauseCommand(env, &conn, false), newGroupDeleteCommand(env, &conn))
	return cmd
}

func newGroupLsCommand(env Env, conn *connOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "ls TOPIC",
		Aliases: []string{"list"},
		Short:   "List a topic's groups: running or paused, their counts, durable or ephemeral",
		Example: `  relq group ls orders`,
		Args:    argsNamed("TOPIC"),
		RunE: onTopic(env, conn, func(cmd *cobra.Command, t *adminTopic) error {
			out := cmd.OutOrStdout()
			return writeGroups(cmd.Context(), out, widthOf(env, out), t)
		}),
	}
}

// writeGroups prints a table of t's groups: status, counts, ages, re-registrations and kind.
func writeGroups(ctx context.Context, out io.Writer, width int, t *adminTopic) error {
	groups, err := t.admin.ListGroups(ctx, t.ref.topic)
	if err != nil {
		return t.explain("groups of "+t.ref.topic, err)
	}
	if len(groups) == 0 {
		_, err := fmt.Fprintf(out, "No groups on topic %s: what is published to it waits in its backlog (%d now) "+
			"for the first group that registers.\n", t.describe(), t.info.Backlog)
		return err
	}
	tbl := newTable(out, width, "GROUP", "STATUS", "READY", "DELAYED", "PENDING", "DEAD", "OLDEST PENDING", "OLDEST READY",
		"REREGISTERED", "KIND")
	for _, gi := range groups {
		if !relqGroup(gi.Name) {
			continue
		}
		st, err := t.groupStats(ctx, gi.Name)
		if err != nil {
			return err
		}
		status, kind := "running", "durable"
		if gi.Paused {
			status = "paused"
		}
		if gi.Ephemeral {
			kind = "ephemeral, until " + timestamp(gi.Expires)
		}
		tbl.row(gi.Name, status, num(st.Ready), num(st.Delayed), num(st.Pending), num(st.Dead),
			age(st.OldestPendingAge), age(st.OldestReadyAge), reregCell(st), kind)
	}
	return tbl.flush()
}

func newGroupPauseCommand(env Env, conn *connOptions, pause bool) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pause TOPIC GROUP",
		Short: "Stop deliveries to a group; publishes still store messages for it",
		Long: `pause stops deliveries to a group: its consumers' claims return nothing, while
publishes still store messages for it and the leases already taken run their course (their
acks and nacks count). relq group resume undoes it. Pausing a paused group changes nothing.`,
		Example: `  relq group pause orders billing`,
		Args:    argsNamed("TOPIC", "GROUP"),
	}
	if !pause {
		cmd.Use = "resume TOPIC GROUP"
		cmd.Short = "Let a paused group's consumers get messages again"
		cmd.Long = `resume undoes relq group pause: the group's consumers get messages again, those stored
while it was paused first. Resuming a running group changes nothing.`
		cmd.Example = `  relq group resume orders billing`
	}
	cmd.RunE = onGroup(env, conn, func(cmd *cobra.Command, g *adminGroup, _ []string) error {
		ctx, out := cmd.Context(), cmd.OutOrStdout()
		if !pause {
			if err := g.admin.ResumeGroup(ctx, g.ref.topic, g.group); err != nil {
				return g.explain("resume "+g.name(), err)
			}
			_, err := fmt.Fprintf(out, "Resumed %s: its consumers get messages again.\n", g.describe())
			return err
		}
		if err := g.admin.PauseGroup(ctx, g.ref.topic, g.group); err != nil {
			return g.explain("pause "+g.name(), err)
		}
		_, err := fmt.Fprintf(out, "Paused %s: its consumers get nothing until relq group resume %s %s; "+
			"publishes still store messages for it.\n", g.describe(), g.ref.topic, g.group)
		return err
	})
	return cmd
}

func newGroupDeleteCommand(env Env, conn *connOptions) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:     "delete TOPIC GROUP",
		Aliases: []string{"rm"},
		Short:   "Delete a group and every message it holds, for good",
		Long: `delete unregisters a group and deletes everything it holds: its ready, delayed, pending
and dead messages and its counters. Publishes no longer route to it; its running subscribers
stop with ErrGroupDeleted, and their acks of messages they still held are stale. When it was
the topic's last group and the topic has no backlog, every key of the topic goes too.

It says what it deletes and asks for confirmation (y/N, read from standard input) unless
--yes is given; when standard input is not a terminal it refuses without --yes.`,
		Example: `  relq group delete orders billing
  relq group delete orders billing --yes`,
		Args: argsNamed("TOPIC", "GROUP"),
		RunE: onGroup(env, conn, func(cmd *cobra.Command, g *adminGroup, _ []string) error {
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			st, err := g.stats(ctx)
			if err != nil {
				return err
			}
			if err := confirmDelete(env, out, yes, "group delete", fmt.Sprintf("Delete group %s at %s, which holds %s, for good?",
				g.describe(), g.s.where, countsText(st))); err != nil {
				return err
			}
			if err := g.admin.DeleteGroup(ctx, g.ref.topic, g.group); err != nil {
				return g.explain("delete "+g.name(), err)
			}
			fmt.Fprintf(out, "Deleted group %s, which held %s.\n", g.describe(), countsText(st))
			if _, err := g.admin.Topic(ctx, g.ref.topic); errors.Is(err, backend.ErrTopicNotFound) {
				fmt.Fprintf(out, "It was the last group of topic %s, which had no backlog: every key of the topic is gone too, but the group's tombstone, which expires after the backend's TombstoneTTL.\n", g.ref.topic)
			}
			return nil
		}),
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

// countsText is "28 ready, 1 delayed and 1 dead messages", the zeros left out, or "no
// messages".
func countsText(st backend.Stats) string {
	var parts []string
	for _, c := range []struct {
		n    int64
		name string
	}{{st.Ready, "ready"}, {st.Delayed, "delayed"}, {st.Pending, "pending"}, {st.Dead, "dead"}} {
		if c.n > 0 {
			parts = append(parts, num(c.n)+" "+c.name)
		}
	}
	total := st.Ready + st.Delayed + st.Pending + st.Dead
	switch len(parts) {
	case 0:
		return "no messages"
	case 1:
	default:
		parts = append(parts[:len(parts)-2], parts[len(parts)-2]+" and "+parts[len(parts)-1])
	}
	return strings.Join(parts, ", ") + " message" + plural(int(total))
}
