package streams

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/redistest"
	"github.com/stretchr/testify/require"
)

// commands records the commands a client sends, as "xread" or "evalsha claim" (scripts by
// name), leaving out the handshake of a new connection.
type commands struct {
	mu   sync.Mutex
	seen []string
}

var scriptNames = map[string]string{claimScript.Hash(): "claim", nackScript.Hash(): "nack", reclaimScript.Hash(): "reclaim"}

func (c *commands) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (c *commands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		name := cmd.Name()
		if name == "hello" || name == "client" || name == "info" {
			return next(ctx, cmd)
		}
		if a := cmd.Args(); (name == "evalsha" || name == "eval") && len(a) > 1 {
			if s, ok := scriptNames[fmt.Sprint(a[1])]; ok {
				name += " " + s
			}
		}
		c.mu.Lock()
		c.seen = append(c.seen, name)
		c.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (c *commands) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = nil
}

func (c *commands) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.seen)
}

// counted returns a backend on the keys of e whose client, on server (the shared one if nil),
// records its commands under a client name that CLIENT LIST shows; the version check is done
// and the claim script loaded.
func (e *env) counted(server *redistest.Server) (*Backend, *commands) {
	e.T.Helper()
	if server == nil {
		server = redistest.Shared(e.T)
	}
	opt, err := redis.ParseURL(server.URL())
	require.NoError(e.T, err)
	opt.ClientName = e.Prefix
	c := redis.NewClient(opt)
	e.T.Cleanup(func() { _ = c.Close() })
	cmds := &commands{}
	c.AddHook(cmds)
	b, err := New(c, Options{Prefix: e.Prefix})
	require.NoError(e.T, err)
	// The XREADs run on connections of their own.
	b.waits.AddHook(cmds)
	require.NoError(e.T, b.check(e.Ctx)) // the version check
	require.NoError(e.T, claimScript.Load(e.Ctx, c).Err())
	cmds.reset()
	return b, cmds
}

// blockedInXREAD waits until n connections named like e's counted client are blocked in XREAD.
func (e *env) blockedInXREAD(n int) { e.T.Helper(); e.WaitBlocked(e.Prefix, "xread", n) }

type claimed struct {
	ds  []backend.Delivery
	err error
	at  time.Time
}

// claimAsync starts a blocking Claim; its result arrives on the channel.
func claimAsync(ctx context.Context, b *Backend, p backend.ClaimParams) <-chan claimed {
	done := make(chan claimed, 1)
	go func() {
		ds, err := b.Claim(ctx, &p)
		done <- claimed{ds, err, time.Now()}
	}()
	return done
}

// An idle consumer's Claims go straight to the XREAD between probes, one claim.lua per
// idleProbe (backendkit.IdleProbe, as for list and zset): one XREAD per Block.
func TestIdleClaimIssuesOneXREADPerBlockAndOneScriptPerProbe(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b, cmds := e.counted(nil)
	e.EnsureGroup("t", "g")
	p := &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 10, Lease: time.Minute, Block: 300 * time.Millisecond}
	claim := func(what string, want ...string) {
		t.Helper()
		cmds.reset()
		ds, err := b.Claim(e.Ctx, p)
		require.NoError(t, err)
		require.Empty(t, ds)
		require.Equal(t, want, cmds.list(), what)
	}

	probed := time.Now() // claim.lua runs after this: the next probe is due IdleProbe later still
	claim("the first Claim probes", "evalsha claim", "xread")
	claim("idle a moment ago: straight to XREAD", "xread")

	// Claims go on with XREAD alone until the probe is due, then one probes again.
	deadline := time.Now().Add(idleProbe + 10*time.Second)
	for {
		cmds.reset()
		ds, err := b.Claim(e.Ctx, p)
		require.NoError(t, err)
		require.Empty(t, ds)
		seen := cmds.list()
		if slices.Contains(seen, "evalsha claim") {
			// A Claim that starts just before the probe is due waits until then first.
			if seen[0] == "xread" {
				seen = seen[1:]
			}
			require.Equal(t, []string{"evalsha claim", "xread"}, seen, "one probe")
			require.GreaterOrEqual(t, time.Since(probed), idleProbe, "not before the probe is due")
			break
		}
		require.Equal(t, []string{"xread"}, seen)
		require.True(t, time.Now().Before(deadline), "no probe within %v", idleProbe+10*time.Second)
	}

	// A publish wakes the XREAD, and the claim after it takes the message: one round trip.
	done := claimAsync(e.Ctx, b, backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 10, Lease: time.Minute, Block: 20 * time.Second})
	e.blockedInXREAD(1)
	cmds.reset()
	e.Publish("t", "wake")
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, []string{"wake"}, adaptertest.Payloads(r.ds))
	require.Equal(t, []string{"evalsha claim"}, cmds.list(), "woken, one claim.lua takes it")
}

// The probe of an idle consumer runs two commands inside Redis besides its EVALSHA: the look
// at the retries and the XREADGROUP. Counted on a server of its own by INFO commandstats,
// which counts the commands scripts run.
func TestIdleProbeRunsThreeCommandsInRedis(t *testing.T) {
	t.Parallel()
	server := redistest.Start(t, redistest.Options{})
	e := newEnv(t)
	b, _ := e.counted(server)
	admin := server.Client(t)
	ctx := e.Ctx
	require.NoError(t, b.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: "t", Group: "g"}))
	_, err := b.Publish(ctx, &backend.PublishParams{Topic: "t", Messages: []backend.OutMessage{{Envelope: adaptertest.Envelope("x")}}})
	require.NoError(t, err)
	p := &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 10, Lease: time.Minute, Block: 10 * time.Millisecond}
	ds, err := b.Claim(ctx, p)
	require.NoError(t, err)
	_, err = b.Ack(ctx, &backend.AckParams{Topic: "t", Group: "g", Consumer: "c", Items: adaptertest.Held(ds...)})
	require.NoError(t, err)

	// The first idle claim learns the group's position and the wake-up stream's.
	_, err = b.Claim(ctx, p)
	require.NoError(t, err)
	// Wait for the next probe, then count one Claim that runs it.
	time.Sleep(idleProbe)
	require.NoError(t, admin.ConfigResetStat(ctx).Err())
	_, err = b.Claim(ctx, p)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"evalsha": 1, "sismember": 1, "zrange": 1, "xreadgroup": 1, "xread": 1}, commandStats(t, admin))
}

// commandStats reads INFO commandstats: calls by command, without the test's own.
func commandStats(t *testing.T, c *redis.Client) map[string]int {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	out := map[string]int{}
	for line := range strings.Lines(info) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		name = strings.TrimPrefix(name, "cmdstat_")
		if name == "info" || strings.HasPrefix(name, "config") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		n, err := strconv.Atoi(calls)
		require.NoError(t, err)
		out[name] = n
	}
	return out
}

// A nack parks the retry where no publish announces it; its wake-up entry wakes another
// consumer's blocked claim, which learns the due time and claims the retry then, not at the
// end of Block nor at its next probe.
func TestANackWakesABlockedClaimForTheRetry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b, cmds := e.counted(nil)
	e.EnsureGroup("t", "g")
	e.Publish("t", "x")
	held := e.Claim("t", "g", "other", 1)

	const block, delay = 20 * time.Second, 200 * time.Millisecond
	done := claimAsync(e.Ctx, b, backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 10, Lease: time.Minute, Block: block})
	e.blockedInXREAD(1)
	nacked := time.Now()
	e.Nack("t", "g", "other", 0, backend.NackItem{ID: held[0].ID, Attempt: 1, Delay: delay})
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, adaptertest.IDs(held), adaptertest.IDs(r.ds))
	require.Equal(t, 2, r.ds[0].Attempt)
	require.GreaterOrEqual(t, r.at.Sub(nacked), delay, "not before it is due")
	require.Less(t, r.at.Sub(nacked), block/2, "woken by the nack, not by the end of Block")
	require.Equal(t, []string{"evalsha claim", "xread", "evalsha claim", "xread", "evalsha claim"}, cmds.list(),
		"the wake-up's claim learns the due time; the wait ends at it")
}

// Reclaim parks an expired lease where no publish announces it; its wake-up entry wakes a
// blocked claim, which takes the delivery at once.
func TestAReclaimWakesABlockedClaim(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b, _ := e.counted(nil)
	e.EnsureGroup("t", "g")
	e.Publish("t", "x")
	held := e.ClaimLease("t", "g", "dead", 1, 20*time.Millisecond)

	const block = 20 * time.Second
	done := claimAsync(e.Ctx, b, backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 10, Lease: time.Minute, Block: block})
	e.blockedInXREAD(1)
	time.Sleep(40 * time.Millisecond)
	reclaimed := time.Now()
	require.Equal(t, backend.ReclaimResult{Reclaimed: 1}, withoutExpiry(e.ReclaimLease("t", "g", 0, time.Hour)))
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, adaptertest.IDs(held), adaptertest.IDs(r.ds))
	require.Equal(t, 2, r.ds[0].Attempt)
	require.Less(t, r.at.Sub(reclaimed), block/2, "woken by the reclaim, not by the end of Block")
}

// The wake-up stream goes once its entry is a minute old: Reclaim deletes it, and a later
// wake-up writes it again.
func TestReclaimDeletesAWakeUpStreamAMinuteOld(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := e.gk("t", "g")
	e.EnsureGroup("t", "g")
	e.Publish("t", "x")
	held := e.Claim("t", "g", "c", 1)
	e.Nack("t", "g", "c", 0, backend.NackItem{ID: held[0].ID, Attempt: 1, Delay: time.Hour})
	require.Equal(t, int64(1), e.xlen(k.wake), "the nack parked a retry: a wake-up")
	e.Reclaim("t", "g", 0)
	require.True(t, e.Exists(k.wake), "a fresh wake-up stays")

	old := strconv.FormatInt(e.redisNow().Add(-2*time.Minute).UnixMilli(), 10) + "-0"
	require.NoError(t, e.C.Del(e.Ctx, k.wake).Err())
	require.NoError(t, e.C.XAdd(e.Ctx, &redis.XAddArgs{Stream: k.wake, ID: old, Values: []string{"w", "1"}}).Err())
	e.Reclaim("t", "g", 0)
	require.False(t, e.Exists(k.wake))
}
