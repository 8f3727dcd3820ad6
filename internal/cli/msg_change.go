package cli

import (
	"errors"
	"fmt"

	"github.com/relq/relq/backend"
	"github.com/spf13/cobra"
)

func newMsgRmCommand(env Env, conn *connOptions) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:     "rm TOPIC GROUP ID",
		Aliases: []string{"delete"},
		Short:   "Delete one message from a group, in any state, for good",
		Long: `rm deletes one message from a group for good, whatever its state; the topic's other
groups keep their copy. A consumer that holds it (pending) finds its ack or nack stale.

It says which message and where it is, and asks for confirmation (y/N, read from standard
input) unless --yes is given; when standard input is not a terminal it refuses without --yes.`,
		Example: `  relq msg rm orders billing 42
  relq msg rm orders billing 42 --yes`,
		Args: argsNamed("TOPIC", "GROUP", "ID"),
		RunE: onGroup(env, conn, func(cmd *cobra.Command, g *adminGroup, args []string) error {
			id, out := args[2], cmd.OutOrStdout()
			m, err := g.message(cmd, id)
			if err != nil {
				return err
			}
			if err := confirmDelete(env, out, yes, "msg rm", fmt.Sprintf("Delete message %s (%s) of %s at %s for good?",
				oneLine(id), whereIs(m), g.describe(), g.s.where)); err != nil {
				return err
			}
			err = g.admin.DeleteMessage(cmd.Context(), &backend.MessageParams{Topic: g.ref.topic, Group: g.group, ID: id})
			if errors.Is(err, backend.ErrMessageNotFound) {
				return g.noMessage(id)
			}
			if err != nil {
				return g.explain(fmt.Sprintf("delete message %q of %s", id, g.name()), err)
			}
			_, err = fmt.Fprintf(out, "Deleted message %s of %s.\n", oneLine(id), g.describe())
			return err
		}),
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

func newMsgRunCommand(env Env, conn *connOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "run TOPIC GROUP ID",
		Short: "Make a delayed message due now",
		Long: `run makes a delayed message (a delayed publish, or a nack's backoff) due now: the group's
next claim can take it. A message in another state is left as it is, with an error that says
where it is (relq dead requeue puts a dead letter back).`,
		Example: `  relq msg run reminders default 17`,
		Args:    argsNamed("TOPIC", "GROUP", "ID"),
		RunE: onGroup(env, conn, func(cmd *cobra.Command, g *adminGroup, args []string) error {
			id := args[2]
			err := g.admin.RunMessage(cmd.Context(), &backend.MessageParams{Topic: g.ref.topic, Group: g.group, ID: id})
			switch {
			case errors.Is(err, backend.ErrMessageNotFound):
				return g.noMessage(id)
			case errors.Is(err, backend.ErrNotDelayed):
				return g.notDelayed(cmd, id)
			case err != nil:
				return g.explain(fmt.Sprintf("run message %q of %s", id, g.name()), err)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "Message %s of %s is due now: the group's next claim can take it.\n",
				oneLine(id), g.describe())
			return err
		}),
	}
}

// notDelayed is the error for running a message that is not delayed: it says where it is.
func (g *adminGroup) notDelayed(cmd *cobra.Command, id string) error {
	m, err := g.message(cmd, id)
	if err != nil {
		return fmt.Errorf("message %s of %s is not delayed: only a delayed message can be made due now", oneLine(id), g.describe())
	}
	msg := fmt.Sprintf("message %s of %s is %s, not delayed", oneLine(id), g.describe(), whereIs(m))
	switch m.State {
	case backend.StateReady:
		return errors.New(msg + ": it is due already, the group's next claim can take it")
	case backend.StateDead:
		return fmt.Errorf("%s: relq dead requeue --topic %s --group %s %s puts it back to ready",
			msg, g.ref.topic, g.group, shellQuote(id))
	}
	return errors.New(msg + ": only a delayed message can be made due now")
}

// whereIs is a message's state in words: "ready", "delayed, due ...", "pending, held by c1",
// "a dead letter".
func whereIs(m backend.MessageInfo) string {
	switch m.State {
	case backend.StateDelayed:
		return "delayed, due " + timestamp(m.Due)
	case backend.StatePending:
		return "pending, held by " + oneLine(m.Consumer)
	case backend.StateDead:
		return "a dead letter"
	}
	return string(m.State)
}
