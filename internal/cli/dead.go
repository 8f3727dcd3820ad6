package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/relq/relq/backend"
	"github.com/spf13/cobra"
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
  relq dead purge   --topic T --group G (ID... | --all) [--yes]

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
	st, err := d.ref.backend.Stats(ctx, &backend.StatsParams{Topic: d.ref.topic, Group: d.group})
	if err != nil {
		return 0, d.s.explain(fmt.Errorf("stats of %s: %w", d.name(), err))
	}
	return st.Dead, nil
}

func (d *deadTarget) page(ctx context.Context, offset, count int) ([]backend.DeadLetter, error) {
	dls, err := d.ref.backend.DeadLetters(ctx, &backend.DeadLettersParams{
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
func (d *deadTarget) find(ctx context.Context, id string) (backend.DeadLetter, error) {
	for offset := 0; ; offset += deadShowPage {
		dls, err := d.page(ctx, offset, deadShowPage)
		if err != nil {
			return backend.DeadLetter{}, err
		}
		for _, dl := range dls {
			if dl.ID == id {
				return dl, nil
			}
		}
		if len(dls) < deadShowPage {
			return backend.DeadLetter{}, fmt.Errorf("no dead letter %q in %s, which holds %d (relq dead ls lists them)",
				id, d.describe(), offset+len(dls))
		}
	}
}

func writeDeadLetter(w io.Writer, d *deadTarget, dl backend.DeadLetter) {
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
			n, err := b.RequeueDeadLetters(ctx, &backend.RequeueParams{Topic: d.ref.topic, Group: d.group, IDs: ids, All: all})
			out := cmd.OutOrStdout()
			if n > 0 || err == nil {
				fmt.Fprintf(out, "Requeued %d dead letter%s of %s: ready again, attempts reset.\n", n, plural(n), d.describe())
			}
			if err != nil {
				return d.s.explain(fmt.Errorf("requeue: %w", err))
			}
			if !all && n < len(ids) {
				return d.notDead(len(ids)-n, len(ids))
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
		Use:   "purge (ID... | --all) [--yes]",
		Short: "Delete dead letters of a group for good: those given by ID, or all",
		Long: `purge deletes the dead letters of the group given by ID, or all of them with --all, for
good; the topic's other groups keep their copy. It says which (or how many) and where, and
asks for confirmation (y/N, read from standard input) unless --yes is given; when standard
input is not a terminal, where nobody sees the question, it refuses without --yes.

By ID, a message is deleted only if it is still a dead letter of the group when the purge
runs (checked and deleted in one atomic step per batch of IDs): an ID that is not one
(unknown, or requeued meanwhile and now ready, delayed or pending) is left as it is, and
makes the command fail, after the others are purged. With --all, only the dead letters
counted for the question are deleted: one that arrives while it waits is kept.`,
		Example: `  relq dead purge --topic orders --group billing 42 43
  relq dead purge --topic orders --group billing --all
  relq dead purge --topic orders --group billing --all --yes`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return usageError(cmd, "give the IDs of the dead letters to purge, or --all to purge every one")
			}
			ctx := cmd.Context()
			d, err := opts.open(ctx, env)
			if err != nil {
				return err
			}
			defer d.s.Close()
			out := cmd.OutOrStdout()
			total, err := d.total(ctx)
			if err != nil {
				return err
			}
			ids := uniqueIDs(args)
			if total == 0 {
				fmt.Fprintf(out, "No dead letters in %s: nothing to purge.\n", d.describe())
				if !all {
					return d.notDead(len(ids), len(ids))
				}
				return nil
			}
			p := &backend.PurgeParams{Topic: d.ref.topic, Group: d.group, IDs: ids}
			what := purgeIDsWhat(ids)
			if all {
				// Only those counted here: a letter that dies while the question waits is kept.
				p.All, p.Limit = true, int(total)
				what = "all " + num(total) + " dead letters"
				if total == 1 {
					what = "the 1 dead letter"
				}
			}
			ok, err := confirm(env, yes, "dead purge", fmt.Sprintf("Delete %s of %s at %s for good?", what, d.describe(), d.s.where))
			if err != nil {
				return err
			}
			if !ok {
				fmt.Fprintln(out, "Nothing purged.")
				return errNotConfirmed("purge")
			}
			n, err := d.ref.backend.PurgeDeadLetters(ctx, p)
			if n > 0 || err == nil {
				fmt.Fprintf(out, "Purged %d dead letter%s of %s.\n", n, plural(n), d.describe())
			}
			if err != nil {
				return d.s.explain(fmt.Errorf("purge: %w", err))
			}
			if !all && n < len(ids) {
				return d.notDead(len(ids)-n, len(ids))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "purge every dead letter of the group")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

// purgeIDsShown is how many IDs the question of dead purge names before "and N more".
const purgeIDsShown = 10

// purgeIDsWhat names the dead letters given by ID in purge's question: "dead letter 42",
// "the 2 dead letters 42, 43", "the 25 dead letters 1, 2, ..., 10 and 15 more".
func purgeIDsWhat(ids []string) string {
	if len(ids) == 1 {
		return "dead letter " + oneLine(ids[0])
	}
	shown := make([]string, 0, purgeIDsShown)
	for _, id := range ids[:min(len(ids), purgeIDsShown)] {
		shown = append(shown, oneLine(id))
	}
	what := fmt.Sprintf("the %d dead letters %s", len(ids), strings.Join(shown, ", "))
	if more := len(ids) - len(shown); more > 0 {
		what += fmt.Sprintf(" and %d more", more)
	}
	return what
}

// uniqueIDs returns ids without repeats, in the order given.
func uniqueIDs(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// notDead is the error for IDs given that were not dead letters of the group: of them, skipped.
func (d *deadTarget) notDead(skipped, of int) error {
	return fmt.Errorf("%d of the %d IDs given are not dead letters of %s (relq dead ls lists them)", skipped, of, d.name())
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
