package faults

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
)

// On a full Redis (maxmemory reached, policy noeviction) every backend operation that frees or
// keeps memory works, and only what adds data fails, with backend.ErrRedisFull. After the
// setup, maxmemory is set to 1 byte, so Redis stays over its limit whatever the operations
// free.
func TestRedisFullOperations(t *testing.T) {
	t.Parallel()
	for _, bc := range faultBackends {
		t.Run(bc.name, func(t *testing.T) {
			t.Parallel()
			server := redistest.Start(t, redistest.Options{Args: []string{"--maxmemory-policy", "noeviction"}})
			admin := server.Client(t)
			b := newFullBackend(t, bc, server.Client(t), redistest.Prefix(t))
			ctx := context.Background()
			const topic, group, quiet = "work", "workers", "quiet"
			require.NoError(t, b.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: topic, Group: group}))
			require.NoError(t, b.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: quiet, Group: group}))
			_, err := b.Publish(ctx, &backend.PublishParams{Topic: topic, Messages: payloadMessages(20, 100)})
			require.NoError(t, err)
			claim := func(consumer string, n int, lease time.Duration) []backend.Delivery {
				t.Helper()
				ds, err := b.Claim(ctx, &backend.ClaimParams{Topic: topic, Group: group, Consumer: consumer, Count: n, Lease: lease})
				require.NoError(t, err)
				require.Len(t, ds, n)
				return ds
			}
			nack := func(items ...backend.NackItem) backend.NackResult {
				t.Helper()
				res, err := b.Nack(ctx, &backend.NackParams{Topic: topic, Group: group, Consumer: "c1", Items: items, MaxDeliveries: 10})
				require.NoError(t, err, "nack")
				return res
			}
			// Before Redis is full: two dead letters, and a lease that expires at once.
			dead := claim("c1", 2, time.Minute)
			require.Equal(t, 2, nack(deadLetter(dead[0]), deadLetter(dead[1])).DeadLettered)
			claim("gone", 1, time.Millisecond)

			require.NoError(t, admin.ConfigSet(ctx, "maxmemory", "1").Err())
			_, err = b.Publish(ctx, &backend.PublishParams{Topic: topic, Messages: payloadMessages(1, 100)})
			require.ErrorIs(t, err, backend.ErrRedisFull, "publish")
			require.NoError(t, b.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: topic, Group: group}),
				"registering a group that exists")
			require.ErrorIs(t, b.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: topic, Group: "new"}), backend.ErrRedisFull,
				"registering a new group adds data")

			ds := claim("c1", 6, time.Minute)
			held := make([]backend.Held, len(ds))
			for i, d := range ds {
				held[i] = backend.Held{ID: d.ID, Attempt: d.Attempt}
			}
			lost, err := b.Extend(ctx, &backend.ExtendParams{Topic: topic, Group: group, Consumer: "c1", Items: held, Lease: time.Minute})
			require.NoError(t, err, "extend")
			require.Empty(t, lost)

			ack := func(h backend.Held) backend.AckResult {
				t.Helper()
				res, err := b.Ack(ctx, &backend.AckParams{Topic: topic, Group: group, Consumer: "c1", Items: []backend.Held{h}})
				require.NoError(t, err, "ack")
				return res
			}
			require.Equal(t, backend.AckResult{Acked: 1}, ack(held[0]))
			require.Equal(t, backend.AckResult{Stale: 1}, ack(held[0]), "an ack that only counts a stale item")

			require.Equal(t, 1, nack(backend.NackItem{ID: ds[1].ID, Attempt: ds[1].Attempt}).Requeued, "nack to retry now")
			require.Equal(t, 1, nack(backend.NackItem{ID: ds[2].ID, Attempt: ds[2].Attempt, Delay: time.Hour}).Requeued, "nack with a delay")
			require.Equal(t, 1, nack(deadLetter(ds[3])).DeadLettered, "nack to the dead letters")
			require.Equal(t, 1, nack(backend.NackItem{ID: ds[4].ID, Attempt: ds[4].Attempt, Release: true}).Requeued, "release")
			require.Equal(t, 1, nack(backend.NackItem{ID: ds[5].ID, Attempt: ds[5].Attempt + 1}).Stale, "a nack that only counts a stale item")

			rec, err := b.Reclaim(ctx, &backend.ReclaimParams{Topic: topic, Group: group, MaxDeliveries: 10, OrphanLease: time.Minute})
			require.NoError(t, err, "reclaim")
			require.Equal(t, 1, rec.Reclaimed)

			n, err := b.RequeueDeadLetters(ctx, &backend.RequeueParams{Topic: topic, Group: group, IDs: []string{dead[0].ID}})
			require.NoError(t, err, "requeue")
			require.Equal(t, 1, n)
			n, err = b.PurgeDeadLetters(ctx, &backend.PurgeParams{Topic: topic, Group: group, IDs: []string{dead[0].ID, dead[1].ID}})
			require.NoError(t, err, "purge by IDs")
			require.Equal(t, 1, n, "dead[0] was requeued: skipped")
			n, err = b.PurgeDeadLetters(ctx, &backend.PurgeParams{Topic: topic, Group: group, All: true})
			require.NoError(t, err, "purge")
			require.Equal(t, 1, n)

			// A blocking claim with nothing ready (list: BLMOVE, which a full Redis refuses)
			// waits out its Block and returns nothing, without an error.
			ds, err = b.Claim(ctx, &backend.ClaimParams{Topic: quiet, Group: group, Consumer: "c1", Count: 1,
				Lease: time.Minute, Block: 300 * time.Millisecond})
			require.NoError(t, err, "blocking claim with nothing ready")
			require.Empty(t, ds)

			st, err := b.Stats(ctx, &backend.StatsParams{Topic: topic, Group: group})
			require.NoError(t, err)
			require.Zero(t, st.Dead, "%+v", st)
			_, err = b.Publish(ctx, &backend.PublishParams{Topic: topic, Messages: payloadMessages(1, 100)})
			require.ErrorIs(t, err, backend.ErrRedisFull, "Redis stayed full throughout")
		})
	}
}

func deadLetter(d backend.Delivery) backend.NackItem {
	return backend.NackItem{ID: d.ID, Attempt: d.Attempt, DeadLetter: true, Reason: "test"}
}
