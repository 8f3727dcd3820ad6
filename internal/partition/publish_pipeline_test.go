package partition_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/partition"
)

// roundTrips counts what a client sends: single commands and pipelines, by command name.
type roundTrips struct {
	mu        sync.Mutex
	single    map[string]int
	pipelines [][]string
}

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.mu.Lock()
		r.single[cmd.Name()]++
		r.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		names := make([]string, len(cmds))
		for i, c := range cmds {
			names[i] = c.Name()
		}
		r.mu.Lock()
		r.pipelines = append(r.pipelines, names)
		r.mu.Unlock()
		return next(ctx, cmds)
	}
}

func (r *roundTrips) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.single, r.pipelines = map[string]int{}, nil
}

// A batch spanning partitions goes to the partitions in one pipeline, and so do its acks (one round trip per
// primary; here, one Redis), not in a call per partition, on every backend; and when the
// scripts are not loaded (SCRIPT FLUSH, a primary just promoted), the parts are published
// alone and nothing is lost or stored twice.
func TestABatchGoesToItsPartitionsInOnePipeline(t *testing.T) {
	t.Parallel()
	for name, newInner := range map[string]func(c redis.UniversalClient, prefix string) (backend.Backend, error){
		"list": func(c redis.UniversalClient, p string) (backend.Backend, error) {
			return list.New(c, list.Options{Prefix: p})
		},
		"zset": func(c redis.UniversalClient, p string) (backend.Backend, error) {
			return zset.New(c, zset.Options{Prefix: p})
		},
		"streams": func(c redis.UniversalClient, p string) (backend.Backend, error) {
			return streams.New(c, streams.Options{Prefix: p})
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t, redistest.Options{}) // its own: SCRIPT FLUSH below
			client := srv.Client(t)
			counts := &roundTrips{}
			counts.reset()
			client.AddHook(counts)
			ctx := context.Background()
			inner, err := newInner(client, redistest.Prefix(t))
			require.NoError(t, err)
			b := partition.Open(inner)
			require.NoError(t, partition.Create(ctx, inner, "orders", 8))
			require.NoError(t, b.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "orders", Group: "g"}))
			batch := func() []backend.OutMessage { return keyed(64, func(i int) string { return "k" + strconv.Itoa(i) }) }
			_, err = b.Publish(ctx, &backend.PublishParams{Topic: "orders", Messages: batch()}) // learns the registry, loads the scripts
			require.NoError(t, err)

			counts.reset()
			_, err = b.Publish(ctx, &backend.PublishParams{Topic: "orders", Messages: batch()})
			require.NoError(t, err)
			counts.mu.Lock()
			var scripts [][]string // pipelines that ran scripts (the bell's SPUBLISH has its own)
			for _, p := range counts.pipelines {
				if slices.Contains(p, "evalsha") {
					scripts = append(scripts, p)
				}
			}
			require.Len(t, scripts, 1, "one round trip: %v", counts.pipelines)
			require.Equal(t, slices.Repeat([]string{"evalsha"}, 8), scripts[0], "a call per partition in it")
			require.Zero(t, counts.single["evalsha"]+counts.single["eval"], "no call of its own: %v", counts.single)
			counts.mu.Unlock()

			// The acks of a batch spanning partitions go in one pipeline too.
			ds, err := b.Claim(ctx, &backend.ClaimParams{Topic: "orders", Group: "g", Consumer: "c", Count: 64, Lease: time.Minute})
			require.NoError(t, err)
			require.Len(t, ds, 64)
			items := make([]backend.Held, len(ds))
			for j, d := range ds {
				items[j] = backend.Held{ID: d.ID, Attempt: d.Attempt}
			}
			first, err := b.Ack(ctx, &backend.AckParams{Topic: "orders", Group: "g", Consumer: "c", Items: items[:1]}) // loads the script
			require.NoError(t, err)
			require.Equal(t, backend.AckResult{Acked: 1}, first)
			touched := map[string]bool{} // partitions, by the IDs' prefix
			for _, it := range items[1:] {
				touched[it.ID[:strings.IndexByte(it.ID, ':')]] = true
			}
			require.Greater(t, len(touched), 1, "the claim spans partitions")
			counts.reset()
			acked, err := b.Ack(ctx, &backend.AckParams{Topic: "orders", Group: "g", Consumer: "c", Items: items[1:]})
			require.NoError(t, err)
			require.Equal(t, backend.AckResult{Acked: 63}, acked)
			counts.mu.Lock()
			require.Len(t, counts.pipelines, 1, "one round trip: %v", counts.pipelines)
			require.Equal(t, slices.Repeat([]string{"evalsha"}, len(touched)), counts.pipelines[0], "an ack call per partition in it")
			require.Zero(t, counts.single["evalsha"]+counts.single["eval"], "no call of its own: %v", counts.single)
			counts.mu.Unlock()

			require.NoError(t, client.ScriptFlush(ctx).Err())
			_, err = b.Publish(ctx, &backend.PublishParams{Topic: "orders", Messages: batch()})
			require.NoError(t, err, "scripts not loaded: each part is published alone")
			s, err := b.Stats(ctx, &backend.StatsParams{Topic: "orders", Group: "g"})
			require.NoError(t, err)
			require.Equal(t, int64(3*64-64), s.Ready, "every message stored once")

		})
	}
}
