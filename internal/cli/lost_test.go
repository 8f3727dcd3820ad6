package cli

// What the tool commands say of what Redis lost, on the real backends: a group registered
// again after its keys vanished (stats, group ls), a topic's backlog drops (topic show).

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/backend"
)

// forget deletes every key of topic, as FLUSHALL or another client's DEL would.
func (f *fixture) forget(topic string) {
	f.t.Helper()
	keys := f.topicKeys(topic)
	require.NotEmpty(f.t, keys)
	require.NoError(f.t, f.c.Del(f.ctx, keys...).Err())
}

// registerAgain registers group again, as its running subscription does when it finds the
// group's keys gone (known: the re-registrations it knows of), and returns what it did.
func (f *fixture) registerAgain(b backend.Backend, topic, group string, known int64) backend.RegisterAgainResult {
	f.t.Helper()
	res, err := b.RegisterAgain(f.ctx, &backend.RegisterAgainParams{Topic: topic, Group: group, Known: known})
	require.NoError(f.t, err)
	require.True(f.t, res.Registered)
	return res
}

func TestStatsAndGroupLsShowReregistrations(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, f *fixture, b backend.Backend) {
		f.group(b, "orders", "billing")
		f.group(b, "orders", "audit")
		f.publish(b, "orders", 2, 0)
		f.forget("orders")
		first := f.registerAgain(b, "orders", "billing", 0)
		require.EqualValues(t, 1, first.Times)
		f.registerAgain(b, "orders", "audit", 0)

		code, out, _ := f.runOn(b, "stats", "--topic", "orders", "--group", "billing")
		require.Equal(t, 0, code)
		//                                  published claimed ... stale        reregistered
		require.Regexp(t, `(?m)^`+b.Name()+`\s+orders\s+billing(\s+\d+){8}\s+1 \(\d[\d.hm]*s ago\)$`, out)
		require.Contains(t, out, "\nWARNING: orders/billing ("+b.Name()+") was registered again once by its subscriptions after its state "+
			"vanished from Redis (a restart without persistence, a failover, FLUSHALL, keys deleted by another client), the latest at "+
			timestamp(first.At)+" (")
		require.Regexp(t, `ago\); messages it held then may be lost\.\n$`, out)
		require.NotContains(t, out, "audit", "--group billing only")

		f.forget("orders")
		second := f.registerAgain(b, "orders", "billing", first.Times)
		require.EqualValues(t, 2, second.Times, "the count goes on from what the subscription knew")
		f.group(b, "orders", "audit") // a new subscriber's registration: not a re-registration
		code, out, _ = f.runOn(b, "group", "ls", "orders")
		require.Equal(t, 0, code)
		require.Regexp(t, `(?m)^billing\s+running\s+0\s+0\s+0\s+0\s+-\s+-\s+2 \(\d[\d.hm]*s ago\)\s+durable$`, out)
		require.Regexp(t, `(?m)^audit\s+running(\s+0){4}\s+-\s+-\s+0\s+durable$`, out)
	})
}

func TestTopicShowCountsBacklogDrops(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"list", "zset"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			// The publisher's backend keeps a backlog of 3; relq reads what it dropped.
			var b backend.Backend
			var err error
			if name == "list" {
				b, err = list.New(f.c, list.Options{Prefix: f.prefix, BacklogLimit: 3})
			} else {
				b, err = zset.New(f.c, zset.Options{Prefix: f.prefix, BacklogLimit: 3})
			}
			require.NoError(t, err)
			res, err := b.Publish(f.ctx, &backend.PublishParams{Topic: "signups", Messages: make([]backend.OutMessage, 5)})
			require.NoError(t, err)
			require.EqualValues(t, 2, res.BacklogDropped)

			code, out, _ := f.runOn(b, "topic", "show", "signups")
			require.Equal(t, 0, code)
			require.Contains(t, out, "  backlog:  3 messages, kept for the first group that registers\n"+
				"  dropped:  2 messages, the backlog's oldest, past its limit while the topic had no group: no group received them\n"+
				"  groups:   0\n")

			f.group(b, "signups", "welcome")
			code, out, _ = f.runOn(b, "topic", "show", "signups")
			require.Equal(t, 0, code)
			require.Contains(t, out, "  backlog:  none\n  dropped:  2 messages, the backlog's oldest,", "the drops stay counted")
			require.Regexp(t, regexp.MustCompile(`(?m)^welcome\s+running\s+3\s`), out, "the group took the 3 kept")
		})
	}
}
