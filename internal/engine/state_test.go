package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/engine"
)

// process is one process's backend over the engine: several on one prefix share its keys.
type process struct {
	b backend.Backend
	e *engine.Engine
}

// eachProcesses runs test in a parallel subtest per backend over the engine with n processes
// on one prefix of its own.
func eachProcesses(t *testing.T, n int, test func(t *testing.T, ps []process)) {
	for _, name := range []string{"list", "zset"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, prefix := adaptertest.Server(t)
			ps := make([]process, n)
			for i := range ps {
				ps[i] = openProcess(t, name, c, prefix)
			}
			test(t, ps)
		})
	}
}

func openProcess(t *testing.T, name string, c redis.UniversalClient, prefix string) process {
	t.Helper()
	if name == "list" {
		l, err := list.New(c, backend.Options{Prefix: prefix})
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
		return process{l, engineOf(l)}
	}
	z, err := zset.New(c, backend.Options{Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { _ = z.Close() })
	return process{z, engineOf(z)}
}

func idleClaim(ctx context.Context, b backend.Backend, topic, group, consumer string, block time.Duration) ([]backend.Delivery, error) {
	return b.Claim(ctx, &backend.ClaimParams{Topic: topic, Group: group, Consumer: consumer, Lease: time.Minute, Block: block})
}

// A consumer's idle state lasts no longer than the consumer: its Leave forgets it, so does a
// Claim cancelled in its wait, and what a consumer leaves when it simply stops claiming is
// dropped once it is older than IdleProbe. A process whose subscriptions come and go keeps
// the state of the live ones only.
func TestIdleStateEndsWithItsConsumer(t *testing.T) {
	t.Parallel()
	eachProcesses(t, 1, func(t *testing.T, ps []process) {
		b, e := ps[0].b, ps[0].e
		ctx := t.Context()

		// An ephemeral member that found nothing, then left.
		join(t, e, "replies", "r", "c1", time.Minute)
		ds, err := idleClaim(ctx, b, "replies", "r", "c1", 20*time.Millisecond)
		require.NoError(t, err)
		require.Empty(t, ds)
		require.Equal(t, 1, e.IdleConsumers(), "an idle consumer's next Claims skip the claim script")
		leave(t, e, "replies", "r", "c1")
		require.Zero(t, e.IdleConsumers(), "the consumer left")

		// A Claim cancelled while it waits.
		ensure(t, e, "orders", "g")
		claimCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := idleClaim(claimCtx, b, "orders", "g", "c2", time.Minute)
			done <- err
		}()
		require.Eventually(t, func() bool { return e.IdleConsumers() == 1 }, 10*time.Second, time.Millisecond, "the Claim waits")
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		require.Zero(t, e.IdleConsumers(), "the cancelled Claim's consumer")

		// Durable consumers that stopped claiming after a Claim that found nothing.
		for i := range 20 {
			_, err := idleClaim(ctx, b, "orders", "g", fmt.Sprintf("gone-%d", i), time.Millisecond)
			require.NoError(t, err)
		}
		require.NotZero(t, e.IdleConsumers())
		deadline := time.Now().Add(engine.IdleProbe + 10*time.Second)
		for e.IdleConsumers() > 1 { // the live consumer's own
			require.True(t, time.Now().Before(deadline), "%d consumers' idle state kept %v after they stopped", e.IdleConsumers(), engine.IdleProbe+10*time.Second)
			_, err := idleClaim(ctx, b, "orders", "g", "live", 50*time.Millisecond)
			require.NoError(t, err)
		}
	})
}

// A publisher caches each topic's registry. When the groups of a topic it published to end
// in another process (a reply topic whose requester left), it never learns it unless it
// publishes there again: such entries are dropped once unused for a while, so a service that
// replies to a topic per request keeps a bounded cache. An entry that can restore a durable
// group is kept: a quiet publisher still restores a group that vanished from Redis.
func TestRegistryCacheForgetsTopicsWhoseGroupsEndedElsewhere(t *testing.T) {
	t.Parallel()
	eachProcesses(t, 2, func(t *testing.T, ps []process) {
		replier, requester := ps[0].e, ps[1].e
		// reply is a request's reply topic: the requester joins an ephemeral group of it, the
		// replier publishes the reply (and so learns the topic's registry), the requester leaves.
		reply := func(topic string) {
			join(t, requester, topic, "r", "c", time.Minute)
			publish(t, replier, topic, "reply")
			leave(t, requester, topic, "r", "c")
		}
		ensure(t, requester, "orders", "billing")
		publish(t, replier, "orders", "o")
		for i := range 20 {
			reply(fmt.Sprintf("reply-%d", i))
		}
		require.Equal(t, 21, replier.CachedTopics())

		// Redis loses the durable group's keys, as a restart without persistence would.
		keys := tagKeys(t, replier, "orders")
		for i := range keys {
			keys[i] = replier.Tag("orders") + ":" + keys[i]
		}
		require.NoError(t, replier.Client().Del(t.Context(), keys...).Err())

		// Only learning a registry adds to the cache, and each one sweeps it: the replies to
		// the requests that follow.
		const idle = 50 * time.Millisecond
		replier.SetRegistryIdle(idle)
		forgotten := func() bool {
			for i := range 20 {
				if replier.CachedVersion(fmt.Sprintf("reply-%d", i)) != "0" {
					return false
				}
			}
			return true
		}
		deadline := time.Now().Add(10 * time.Second)
		for i := 0; !forgotten(); i++ {
			require.True(t, time.Now().Before(deadline), "%d topics still cached", replier.CachedTopics())
			reply(fmt.Sprintf("later-%d", i))
			time.Sleep(idle / 5) // lets the entries age: what is asserted is what stays cached, not when
		}
		require.Equal(t, []string{"billing"}, replier.Cached("orders"), "the durable group's registry is kept")
		res, err := replier.Publish(t.Context(), &backend.PublishParams{Topic: "orders", Messages: messages("o2")})
		require.NoError(t, err)
		require.Equal(t, []string{"billing"}, res.Reregistered, "the vanished group is restored by the publish")
	})
}
