package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/relq/relq/pubsub"
)

// deadShowPage is how many dead letters dead show reads per round trip while it looks for
// the one asked for.
const deadShowPage = 100

type deadOptions struct {
	conn  connOptions
	topic string
	group string
}

func newDeadCommand(env Env) *cobra.Command {
	var opts deadOptions
	cmd := parentCommand(&cobra.Command{
		Use:   "dead COMMAND",
		Short: "List, show, requeue or purge a group's dead letters",
		Long: `dead works on the dead letters of one group of one topic: messages that reached
MaxDeliveries, or could not be decoded, kept with the reason, the number of attempts and
when they were dead-lettered, and never delivered again until requeued.

  relq dead ls      --topic T --group G [--limit N] [--offset M]
  relq dead show    --topic T --group G ID
  relq dead requeue --topic T --group G (ID... | --all)
  relq dead purge   --topic T --group G --all [--yes]

Redis, prefix and backend are chosen as for relq stats (see relq stats --help).`,
	})
	opts.conn.addFlags(cmd)
	f := cmd.PersistentFlags()
	f.StringVar(&opts.topic, "topic", "", "the topic (required)")
	f.StringVar(&opts.group, "group", "", "the group (required)")
	cmd.AddCommand(newDeadLsCommand(env, &opts), newDeadShowCommand(env, &opts),
		newDeadRequeueCommand(env, &opts), newDeadPurgeCommand(env, &opts))
	return cmd
}

// deadTarget is the group a dead command works on, its topic resolved.
type deadTarget struct {
	s     *session
	ref   topicRef
	group string
}

// name is "topic/group".
func (d *deadTarget) name() string { return d.ref.topic + "/" + d.group }

// describe is "orders/billing (list backend, prefix "relq")".
func (d *deadTarget) describe() string {
	return fmt.Sprintf("%s (%s backend, prefix %q)", d.name(), d.ref.label(), d.s.prefix)
}

// open connects and checks that the topic and the group exist.
func (o *deadOptions) open(ctx context.Context, env Env) (*deadTarget, error) {
	if o.topic == "" || o.group == "" {
		return nil, errors.New("--topic and --group are required (relq topics lists them)")
	}
	s, err := o.conn.connect(ctx, env)
	if err != nil {
		return nil, err
	}
	ref, err := s.resolve(ctx, o.topic)
	if err == nil {
		_, err = s.groups(ctx, ref, o.group)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return &deadTarget{s: s, ref: ref, group: o.group}, nil
}

// total reads how many dead letters the group holds.
func (d *deadTarget) total(ctx context.Context) (int64, error) {
	st, err := d.ref.backend.Stats(ctx, &pubsub.StatsParams{Topic: d.ref.topic, Group: d.group})
	if err != nil {
		return 0, d.s.explain(fmt.Errorf("stats of %s: %w", d.name(), err))
	}
	return st.Dead, nil
}

func (d *deadTarget) page(ctx context.Context, offset, count int) ([]pubsub.DeadLetter, error) {
	dls, err := d.ref.backend.DeadLetters(ctx, &pubsub.DeadLettersParams{
		Topic: d.ref.topic, Group: d.group, Offset: offset, Count: count})
	if err != nil {
		return nil, d.s.explain(fmt.Errorf("dead letters of %s: %w", d.name(), err))
	}
	return dls, nil
}

func newDeadLsCommand(env Env, opts *deadOptions) *cobra.Command {
	var limit, offset int
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List a group's dead letters, oldest first, a page at a time",
		Long: `ls lists a group's dead letters, oldest first: the delivery ID, how many attempts it had,
when it was dead-lettered (Redis clock, shown in local time), the message UUID and the reason.
--limit and --offset page through them; the last line says how to get the next page.`,
		Example: `  relq dead ls --topic orders --group billing
  relq dead ls --topic orders --group billing --limit 50 --offset 50`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 || offset < 0 {
				return errors.New("--limit must be at least 1 and --offset at least 0")
			}
			ctx := cmd.Context()
			d, err := opts.open(ctx, env)
			if err != nil {
				return err
			}
			defer d.s.Close()
			total, err := d.total(ctx)
			if err != nil {
				return err
			}
			dls, err := d.page(ctx, offset, limit)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch {
			case total == 0 && len(dls) == 0:
				fmt.Fprintf(out, "No dead letters in %s.\n", d.describe())
				return nil
			case len(dls) == 0:
				fmt.Fprintf(out, "No dead letters from offset %d in %s: it holds %d.\n", offset, d.describe(), total)
				return nil
			}
			fmt.Fprintf(out, "Dead letters of %s: %d-%d of %d, oldest first\n\n",
				d.describe(), offset+1, offset+len(dls), total)
			t := newTable(out, widthOf(env, out), "ID", "ATTEMPTS", "DEAD-LETTERED AT", "UUID", "REASON")
			for _, dl := range dls {
				uuid := oneLine(dl.Envelope.UUID)
				if dl.Raw != nil {
					uuid = "(undecodable)"
				}
				t.row(oneLine(dl.ID), fmt.Sprint(dl.Attempts), timestamp(dl.DeadAt), uuid, oneLine(dl.Reason))
			}
			if err := t.flush(); err != nil {
				return err
			}
			if next := offset + len(dls); int64(next) < total {
				fmt.Fprintf(out, "\nMore: --offset %d\n", next)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 20, "how many to list")
	cmd.Flags().IntVar(&offset, "offset", 0, "how many of the oldest to skip")
	return cmd
}

func newDeadShowCommand(env Env, opts *deadOptions) *cobra.Command {
	var raw bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one dead letter in full: UUID, metadata, payload, reason",
		Long: `show prints one dead letter in full. The payload is printed as text when it is valid
UTF-8 without control characters, else as a hex dump; control characters in metadata and
reasons are shown escaped, so nothing in a message can drive the terminal. --raw writes the
payload bytes alone, unchanged, for a file or a pipe.`,
		Example: `  relq dead show --topic orders --group billing 42
  relq dead show --topic orders --group billing 42 --raw > payload.bin`,
		Args: argsNamed("ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			d, err := opts.open(ctx, env)
			if err != nil {
				return err
			}
			defer d.s.Close()
			dl, err := d.find(ctx, args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if raw {
				p := dl.Envelope.Payload
				if dl.Raw != nil {
					p = dl.Raw
				}
				_, err := out.Write(p)
				return err
			}
			writeDeadLetter(out, d, dl)
			return nil
		},
	}
	cmd.Flags().BoolVar(&raw, "raw", false, "write only the payload's bytes (the stored entry's, if it cannot be decoded)")
	return cmd
}

// find pages through the dead letters for id.
func (d *deadTarget) find(ctx context.Context, id string) (pubsub.DeadLetter, error) {
	for offset := 0; ; offset += deadShowPage {
		dls, err := d.page(ctx, offset, deadShowPage)
		if err != nil {
			return pubsub.DeadLetter{}, err
		}
		for _, dl := range dls {
			if dl.ID == id {
				return dl, nil
			}
		}
		if len(dls) < deadShowPage {
			return pubsub.DeadLetter{}, fmt.Errorf("no dead letter %q in %s, which holds %d (relq dead ls lists them)",
				id, d.describe(), offset+len(dls))
		}
	}
}

func writeDeadLetter(w io.Writer, d *deadTarget, dl pubsub.DeadLetter) {
	fmt.Fprintf(w, "Dead letter %s of %s\n", oneLine(dl.ID), d.describe())
	field(w, "attempts", fmt.Sprint(dl.Attempts))
	field(w, "dead-lettered at", timestamp(dl.DeadAt))
	field(w, "reason", oneLine(dl.Reason))
	writeEnvelope(w, dl.Envelope, dl.Raw)
}

func newDeadRequeueCommand(env Env, opts *deadOptions) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "requeue (ID... | --all)",
		Short: "Move dead letters back to ready, attempts reset",
		Long: `requeue moves the dead letters given by ID, or all of them with --all, back to the
group's ready queue with their attempts reset, so consumers get them again. IDs that are not
dead letters of the group are reported and make the command fail, after the others are
requeued.`,
		Example: `  relq dead requeue --topic orders --group billing 42 43
  relq dead requeue --topic orders --group billing --all`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return usageError(cmd, "give the IDs of the dead letters to requeue, or --all")
			}
			ctx := cmd.Context()
			d, err := opts.open(ctx, env)
			if err != nil {
				return err
			}
			defer d.s.Close()
			b := d.ref.backend
			ids := slices.Compact(slices.Sorted(slices.Values(args)))
			n, err := b.RequeueDeadLetters(ctx, &pubsub.RequeueParams{Topic: d.ref.topic, Group: d.group, IDs: ids, All: all})
			out := cmd.OutOrStdout()
			if n > 0 || err == nil {
				fmt.Fprintf(out, "Requeued %d dead letter%s of %s: ready again, attempts reset.\n", n, plural(n), d.describe())
			}
			if err != nil {
				return d.s.explain(fmt.Errorf("requeue: %w", err))
			}
			if !all && n < len(ids) {
				return fmt.Errorf("%d of the %d IDs given are not dead letters of %s (relq dead ls lists them)",
					len(ids)-n, len(ids), d.name())
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "requeue every dead letter of the group")
	return cmd
}

func newDeadPurgeCommand(env Env, opts *deadOptions) *cobra.Command {
	var all, yes bool
	cmd := &cobra.Command{
		Use:   "purge --all [--yes]",
		Short: "Delete all of a group's dead letters for good",
		Long: `purge deletes every dead letter of the group, for good. It says how many and asks for
confirmation (y/N, read from standard input) unless --yes is given; when standard input is
not a terminal, where nobody sees the question, it refuses without --yes.

Purging chosen dead letters by ID is not supported yet: the Backend contract's
PurgeDeadLetters takes no IDs. Requeue the ones to keep first, or purge them all.`,
		Example: `  relq dead purge --topic orders --group billing --all
  relq dead purge --topic orders --group billing --all --yes`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return errors.New("purging chosen dead letters by ID is not supported (the backends' PurgeDeadLetters " +
					"takes no IDs): purge --all, or requeue the ones you want to keep first")
			}
			if !all {
				return errors.New("purge deletes every dead letter of the group: say so with --all")
			}
			ctx := cmd.Context()
			d, err := opts.open(ctx, env)
			if err != nil {
				return err
			}
			defer d.s.Close()
			b := d.ref.backend
			out := cmd.OutOrStdout()
			total, err := d.total(ctx)
			if err != nil {
				return err
			}
			if total == 0 {
				fmt.Fprintf(out, "No dead letters in %s: nothing to purge.\n", d.describe())
				return nil
			}
			all := "all " + num(total) + " dead letters"
			if total == 1 {
				all = "the 1 dead letter"
			}
			ok, err := confirm(env, yes, "dead purge", fmt.Sprintf("Delete %s of %s at %s for good?", all, d.describe(), d.s.where))
			if err != nil {
				return err
			}
			if !ok {
				fmt.Fprintln(out, "Nothing purged.")
				return errNotConfirmed("purge")
			}
			n, err := b.PurgeDeadLetters(ctx, &pubsub.PurgeParams{Topic: d.ref.topic, Group: d.group, Limit: int(total)})
			if n > 0 || err == nil {
				fmt.Fprintf(out, "Purged %d dead letter%s of %s.\n", n, plural(n), d.describe())
			}
			return d.s.explain(err)
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "purge every dead letter of the group (required)")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
