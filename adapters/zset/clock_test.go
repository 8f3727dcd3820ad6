package zset

import (
	"fmt"
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/stretchr/testify/require"
)

// TestDueCheckUsesTheRedisClock shows that what is due is decided on the Redis clock, whatever
// the consumer's own clock says.
//
// The backend reads no wall clock at all: due times are set and checked with TIME inside the
// scripts, and a sleeping claim measures only the span claim.lua reported ("due in 300 ms"),
// on the monotonic clock. So there is nothing to inject into it; instead the consumer's
// process gets a clock skewed by hours either way, and the test shows what a due check on that
// clock would take, against what Claim takes. Members are seeded with scores computed from
// Redis TIME: due now, due in 300 ms, due in an hour.
func TestDueCheckUsesTheRedisClock(t *testing.T) {
	t.Parallel()
	for _, skew := range []time.Duration{3 * time.Hour, -3 * time.Hour} {
		t.Run(fmt.Sprintf("local clock %+v", skew), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			localNow := func() time.Time { return time.Now().Add(skew) } // the consumer's wrong clock
			k := e.gk("t", "g")
			e.EnsureGroup("t", "g")

			seeded := time.Now()
			redisNow := e.redisNow()
			e.seed(k, "1", redisNow, "due now")
			e.seed(k, "2", redisNow+300, "due in 300ms")
			e.seed(k, "3", redisNow+float64(time.Hour.Milliseconds()), "due in 1h")

			// A due check on the local clock would take all three (clock ahead) or none of them
			// (clock behind).
			local := float64(localNow().UnixMilli())
			var dueLocally []string
			for _, z := range e.zrange(k.ready) {
				if z.Score <= local {
					dueLocally = append(dueLocally, z.Member.(string))
				}
			}
			if skew > 0 {
				require.Equal(t, mems("1", "2", "3"), dueLocally)
			} else {
				require.Empty(t, dueLocally)
			}

			const block = 10 * time.Second
			claim := func(block time.Duration) ([]backend.Delivery, time.Duration) {
				start := time.Now()
				ds, err := e.b.Claim(e.Ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 10, Lease: time.Hour, Block: block})
				require.NoError(t, err)
				return ds, time.Since(start)
			}
			ds, took := claim(block)
			require.Equal(t, []string{"due now"}, adaptertest.Payloads(ds), "exactly the one due now per Redis")
			require.Less(t, took, block/2, "at once")

			ds, _ = claim(block)
			require.Equal(t, []string{"due in 300ms"}, adaptertest.Payloads(ds), "after sleeping until it is due per Redis")
			require.GreaterOrEqual(t, time.Since(seeded), 300*time.Millisecond-5*time.Millisecond, "not early")
			require.Less(t, time.Since(seeded), block/2, "not hours late, nor at the end of Block")

			ds, took = claim(300 * time.Millisecond)
			require.Empty(t, ds, "never the one due in an hour")
			require.GreaterOrEqual(t, took, 300*time.Millisecond-5*time.Millisecond, "the claim slept its Block")
			s := e.Stats("t", "g")
			require.Equal(t, [3]int64{0, 1, 2}, [3]int64{s.Ready, s.Delayed, s.Pending})
		})
	}
}

// seed stores a message as publish.lua would, with priority 0 and a given due time (score).
func (e *env) seed(k groupKeys, id string, score float64, payload string) {
	e.T.Helper()
	require.NoError(e.T, e.C.HSet(e.Ctx, k.bodies, id, backend.EncodeEnvelope(adaptertest.Envelope(payload))).Err())
	require.NoError(e.T, e.C.ZAdd(e.Ctx, k.ready, zmember(score, mem(id))).Err())
}
