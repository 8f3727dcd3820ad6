package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/partition"
	"github.com/spf13/cobra"
)

func newTopicCommand(env Env) *cobra.Command {
	var conn connOptions
	cmd := parentCommand(&cobra.Command{
		Use:   "topic COMMAND",
		Short: "List topics with their backlog; show or delete one",
		Long: `topic works on the topics under the key prefix.

  relq topic ls
  relq topic show   TOPIC
  relq topic create TOPIC --partitions P
  relq topic delete TOPIC [--yes]

Redis, prefix and backend are chosen as for relq stats (see relq stats --help).`,
	})
	conn.addFlags(cmd)
	cmd.AddCommand(newTopicLsCommand(env, &conn), newTopicShowCommand(env, &conn), newTopicCreateCommand(env, &conn), newTopicDeleteCommand(env, &conn))
	return cmd
}

func newTopicLsCommand(env Env, conn *connOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the topics under a prefix: backend, backlog, groups",
		Long: `ls lists the topics that have a group or a backlog under the key prefix: the backend
that holds each, its backlog (messages published while it had no group, kept for the first
group that registers) and its groups. Like relq topics, it SCANs the keyspace.`,
		Example: `  relq topic ls --prefix shop`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := conn.connect(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer s.Close()
			topics, err := s.listTopics(cmd.Context())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if len(topics) == 0 {
				_, err := fmt.Fprintf(out, "No topics under prefix %q in %s at %s.\n", s.prefix, s.backendsText(), s.where)
				return err
			}
			t := newTable(out, widthOf(env, out), "BACKEND", "TOPIC", "BACKLOG", "GROUPS")
			for _, tp := range topics {
				t.row(tp.ref.label(), tp.ref.topic, num(tp.info.Backlog), oneLine(strings.Join(tp.info.Groups, ", ")))
			}
			return t.flush()
		},
	}
}

func newTopicShowCommand(env Env, conn *connOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "show TOPIC",
		Short:   "Show a topic: its backlog and a table of its groups",
		Example: `  relq topic show orders`,
		Args:    argsNamed("TOPIC"),
		RunE: onTopic(env, conn, func(cmd *cobra.Command, t *adminTopic) error {
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Topic %s\n", t.describe())
			backlog := "none"
			if t.info.Backlog > 0 {
				backlog = fmt.Sprintf("%d message%s, kept for the first group that registers", t.info.Backlog, plural(int(t.info.Backlog)))
			}
			if n, err := partition.Count(cmd.Context(), t.ref.backend.finder, t.ref.topic); err == nil && n > 1 {
				fmt.Fprintf(out, "  partitions: %d (counts below add them up)\n", n)
			}
			fmt.Fprintf(out, "  backlog:  %s\n", backlog)
			fmt.Fprintf(out, "  dropped:  %s\n", droppedText(t.info.BacklogDropped))
			fmt.Fprintf(out, "  groups:   %d\n\n", len(t.info.Groups))
			return writeGroups(cmd.Context(), out, widthOf(env, out), t)
		}),
	}
}

func newTopicCreateCommand(env Env, conn *connOptions) *cobra.Command {
	var partitions int
	cmd := &cobra.Command{
		Use:   "create TOPIC --partitions P",
		Short: "Create a topic with partitions, before anything uses it",
		Long: `create records in Redis that TOPIC has P partitions (1 to 1024), each an ordinary topic
with a hash tag of its own, spread evenly over the primaries of a Cluster. Every publisher and
subscriber of relq reads the count at its first use of the topic, so run create before they
start: a topic already in use without partitions cannot be split, and one created with another
count is refused. Creating it again with its own count does nothing. The record is the same
for the list, zset and streams backends. See docs/partitions.md.`,
		Example: `  relq topic create orders --partitions 12 --prefix shop`,
		Args:    argsNamed("TOPIC"),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic := args[0]
			if partitions < 1 || partitions > partition.Max {
				return usageError(cmd, fmt.Sprintf("--partitions %d: want 1 to %d", partitions, partition.Max))
			}
			if err := backend.ValidateName("topic", topic); err != nil {
				return err
			}
			s, err := conn.connect(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer s.Close()
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			be := s.backends[0].finder
			before, err := partition.Count(ctx, be, topic)
			if err != nil {
				return s.explain(err)
			}
			var ce *partition.CountError
			switch err := partition.Create(ctx, be, topic, partitions); {
			case errors.As(err, &ce) && ce.Recorded == 1:
				return fmt.Errorf("topic %q is in use under prefix %q without partitions, and a topic in use is never split: delete it first (relq topic delete %s --prefix %s), or choose another name", topic, s.prefix, topic, s.prefix)
			case errors.As(err, &ce):
				return fmt.Errorf("topic %q already has %d partitions under prefix %q; its count is fixed until the topic is deleted", topic, ce.Recorded, s.prefix)
			case err != nil:
				return s.explain(err)
			}
			switch {
			case partitions == 1:
				_, err = fmt.Fprintf(out, "Topic %s needs no record for 1 partition: every topic has one until it is created with more.\n", topic)
			case before == partitions:
				_, err = fmt.Fprintf(out, "Topic %s already has %d partitions (prefix %q, %s).\n", topic, partitions, s.prefix, s.where)
			default:
				_, err = fmt.Fprintf(out, "Created topic %s with %d partitions (prefix %q, %s). Publishers and subscribers read the count at their first use of it.\n", topic, partitions, s.prefix, s.where)
			}
			return err
		},
	}
	cmd.Flags().IntVar(&partitions, "partitions", 0, "the topic's partition count, 1 to 1024 (required)")
	_ = cmd.MarkFlagRequired("partitions")
	return cmd
}

func newTopicDeleteCommand(env Env, conn *connOptions) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:     "delete TOPIC",
		Aliases: []string{"rm"},
		Short:   "Delete a topic: every key of it, its groups, messages and backlog",
		Long: `delete deletes every key of a topic: its groups with all their messages (ready,
delayed, pending, dead) and counters, and its backlog. Running subscribers of its groups stop
with ErrGroupDeleted. A later publish to the topic creates it again, as a new topic whose
message IDs are above the old ones.

It says what it deletes and asks for confirmation (y/N, read from standard input) unless
--yes is given; when standard input is not a terminal it refuses without --yes.`,
		Example: `  relq topic delete orders
  relq topic delete orders --yes`,
		Args: argsNamed("TOPIC"),
		RunE: onTopic(env, conn, func(cmd *cobra.Command, t *adminTopic) error {
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			held, err := t.held(ctx)
			if err != nil {
				return err
			}
			if err := confirmDelete(env, out, yes, "topic delete", fmt.Sprintf("Delete topic %s at %s for good: %s?",
				t.describe(), t.s.where, held)); err != nil {
				return err
			}
			if err := t.admin.DeleteTopic(ctx, t.ref.topic); err != nil {
				return t.explain("delete topic "+t.ref.topic, err)
			}
			_, err = fmt.Fprintf(out, "Deleted topic %s: %s. A publish to it creates it again, with message IDs above the old ones.\n",
				t.describe(), held)
			return err
		}),
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

// held says what the topic holds: `2 groups (billing, shipping) with 28 ready and 1 dead
// messages, and a backlog of 0`.
func (t *adminTopic) held(ctx context.Context) (string, error) {
	var sum backend.Stats
	for _, g := range t.info.Groups {
		if !relqGroup(g) {
			continue
		}
		st, err := t.groupStats(ctx, g)
		if err != nil {
			return "", err
		}
		sum.Ready += st.Ready
		sum.Delayed += st.Delayed
		sum.Pending += st.Pending
		sum.Dead += st.Dead
	}
	groups := "no groups"
	if n := len(t.info.Groups); n > 0 {
		groups = fmt.Sprintf("%d group%s (%s) with %s", n, plural(n), oneLine(strings.Join(t.info.Groups, ", ")), countsText(sum))
	}
	return fmt.Sprintf("%s, and a backlog of %d", groups, t.info.Backlog), nil
}
