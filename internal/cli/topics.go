package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func newTopicsCommand(env Env) *cobra.Command {
	var opts connOptions
	cmd := &cobra.Command{
		Use:   "topics",
		Short: "List the topics under a prefix, with their backend and groups",
		Long: `topics lists the topics that have at least one group under the key prefix, in a
table: the backend that holds each (list, zset or streams), the topic and its groups.

It SCANs the keyspace (on every primary of a Cluster), so it reads every key name once:
cheap on a small Redis, a few seconds on one with millions of keys.

Redis: --redis-url, else $REDIS_URL, else ` + DefaultRedisURL + `. See relq stats --help.`,
		Example: `  relq topics
  relq topics --redis-url redis://relq-ops:secret@redis.internal:6379 --prefix shop
  relq topics --backend streams`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := opts.connect(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer s.Close()
			refs, err := s.discover(cmd.Context())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if len(refs) == 0 {
				fmt.Fprintf(out, "No topics under prefix %q in %s at %s.\n", s.prefix, s.backendsText(), s.where)
				return nil
			}
			t := newTable(out, widthOf(env, out), "BACKEND", "TOPIC", "GROUPS")
			for _, ref := range refs {
				groups, err := s.groups(cmd.Context(), ref, "")
				if err != nil {
					return err
				}
				t.row(ref.label(), ref.topic, oneLine(strings.Join(groups, ", ")))
			}
			return t.flush()
		},
	}
	opts.addFlags(cmd)
	return cmd
}
