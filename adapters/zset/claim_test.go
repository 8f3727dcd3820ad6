package zset

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/engine"
	"github.com/relq/relq/internal/redistest"
	"github.com/stretchr/testify/require"
)

// commands records the commands a client sends, as "blpop" or "evalsha claim" (scripts by name),
// leaving out the handshake of a new connection.
type commands struct {
	mu    sync.Mutex
	names map[string]string // script SHA1 -> verb
	seen  []string
	args  [][]any
}

// engineScript is the engine's verb as b runs it, built from internal/engine's source files
// (the engine keeps its scripts to itself), so the recorder can name it by its SHA1.
func engineScript(t *testing.T, b *Backend, verb string) *redis.Script {
	t.Helper()
	_, err := os.Stat("../../internal/engine/lua/" + verb + ".lua")
	require.NoError(t, err)
	return redis.NewScript(b.e.Source(os.DirFS("../../internal/engine"), verb))
}

func (c *commands) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (c *commands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		name := cmd.Name()
		if name == "hello" || name == "client" {
			return next(ctx, cmd)
		}
		if a := cmd.Args(); (name == "evalsha" || name == "eval") && len(a) > 1 {
			if s, ok := c.names[fmt.Sprint(a[1])]; ok {
				name += " " + s
			}
		}
		c.mu.Lock()
		c.seen = append(c.seen, name)
		c.args = append(c.args, cmd.Args())
		c.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (c *commands) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen, c.args = nil, nil
}

func (c *commands) list() ([]string, [][]any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.seen), slices.Clone(c.args)
}

// counted returns a backend on e's keys whose client records its commands, under a client
// name that CLIENT LIST shows; the version check and script loading are done.
func (e *env) counted(opts Options) (*Backend, *commands) {
	e.T.Helper()
	c := adaptertest.NamedClient(e.T, e.Prefix, nil)
	cmds := &commands{}
	c.AddHook(cmds)
	opts.Prefix = e.Prefix
	b, err := New(c, opts)
	require.NoError(e.T, err)
	// The BLPOPs run on connections of their own.
	b.e.AddWaitHook(cmds)
	require.NoError(e.T, b.e.Check(e.Ctx)) // the version check
	claim := engineScript(e.T, b, "claim")
	cmds.names = map[string]string{claim.Hash(): "claim", b.wake.Hash(): "wake",
		engineScript(e.T, b, "publish").Hash(): "publish"}
	for _, s := range []*redis.Script{claim, b.wake} {
		require.NoError(e.T, s.Load(e.Ctx, c).Err())
	}
	cmds.reset()
	return b, cmds
}

// blocked waits until n connections named like e's counted client are blocked in BLPOP.
func (e *env) blocked(n int) { e.T.Helper(); e.WaitBlocked(e.Prefix, "blpop", n) }

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

func TestBlockedClaimIsWokenByAPublish(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b, _ := e.counted(Options{})
	e.EnsureGroup("t", "g")

	const block = 20 * time.Second
	done := claimAsync(e.Ctx, b, backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 10, Lease: time.Minute, Block: block})
	e.blocked(1)

	published := time.Now()
	ids := e.Publish("t", "wake", "more")
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, []string{"wake", "more"}, adaptertest.Payloads(r.ds), "the claim after the wake-up takes the batch")
	require.Less(t, r.at.Sub(published), block/2, "woken by the publish, not by the end of Block")
	t.Logf("pickup after publish: %v", r.at.Sub(published))

	k := e.gk("t", "g")
	require.Equal(t, map[string]string{ids[0]: "c:1", ids[1]: "c:1"}, e.holders(k))
	require.False(t, e.Exists(k.wake), "the token was taken")
	require.Equal(t, int64(2), e.Stats("t", "g").Counters.Claimed)
}

// A consumer sleeping with nothing scheduled learns of a delayed publish from its token, sleeps
// again until that message is due, and is woken then by its own timer's token, not by the end
// of Block or a Redis server tick.
func TestBlockedClaimWakesWhenTheMessageItWaitsForIsDue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b, cmds := e.counted(Options{})
	e.EnsureGroup("t", "g")

	const block, delay = 20 * time.Second, 300 * time.Millisecond
	done := claimAsync(e.Ctx, b, backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 10, Lease: time.Minute, Block: block})
	e.blocked(1)

	start := time.Now()
	id := e.PublishDelayed("t", delay, "later")[0]
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, []string{id}, adaptertest.IDs(r.ds))
	require.GreaterOrEqual(t, r.at.Sub(start), delay-5*time.Millisecond, "claimed before it was due")
	require.Less(t, r.at.Sub(start), block/2, "slept past the due time")
	t.Logf("claimed %v after the due time", r.at.Sub(start)-delay)

	seen, args := cmds.list()
	require.Equal(t, []string{"evalsha claim", "blpop", "evalsha claim", "blpop", "evalsha wake", "evalsha claim"}, seen,
		"claim, sleep, woken by the publish: claim, sleep until due, woken by its own timer: claim")
	k := e.gk("t", "g")
	require.Equal(t, []any{"blpop", k.wake, k.ownWake("c")}, args[1][:3])
	require.Equal(t, []any{"evalsha", b.wake.Hash(), 1, k.ownWake("c")}, args[4])
	require.False(t, e.Exists(k.ownWake("c")), "the token was taken")
}

// With nothing due, an idle consumer sends one BLPOP per Block and one claim.lua per
// engine.IdleProbe, whatever is scheduled: the first Claim probes (claim.lua, then BLPOP), the
// next ones go straight to BLPOP until the probe passes, and a wake-up token makes the woken
// claim run claim.lua again. The BLPOP's timeout is the rest of Block (bounded by the probe),
// or a fallback a little after the earliest due member (a local timer pushes the wake-up token
// at the due time itself).
func TestIdleClaimIssuesOneBLPOPPerBlockAndOneScriptPerProbe(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b, cmds := e.counted(Options{})
	e.EnsureGroup("t", "g")
	p := &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 10, Lease: time.Minute, Block: 300 * time.Millisecond}
	claim := func(what string, want ...string) [][]any {
		t.Helper()
		cmds.reset()
		ds, err := b.Claim(e.Ctx, p)
		require.NoError(t, err)
		require.Empty(t, ds)
		seen, args := cmds.list()
		require.Equal(t, want, seen, what)
		return args
	}

	args := claim("the first Claim probes", "evalsha claim", "blpop")
	requireTimeout(t, args[1][3], 250*time.Millisecond, 300*time.Millisecond, "the rest of Block, in seconds with ms precision")
	args = claim("idle a moment ago: straight to BLPOP", "blpop")
	requireTimeout(t, args[0][3], time.Millisecond, 300*time.Millisecond, "the rest of Block")

	// A publish while the claim sleeps: its token wakes the claim, which runs claim.lua to
	// learn the new earliest due time. (Block is longer here, so the claim is surely still
	// asleep when the publish comes, and shorter than the probe, so the next Claim comes
	// before it.)
	cmds.reset()
	long := *p
	long.Block = engine.IdleProbe / 2
	probed := time.Now() // claim.lua runs after this: the next probe is due IdleProbe later still
	done := claimAsync(e.Ctx, b, long)
	e.blocked(1)
	e.PublishDelayed("t", time.Hour, "much later")
	r := <-done
	require.NoError(t, r.err)
	require.Empty(t, r.ds)
	seen, args := cmds.list()
	require.Equal(t, []string{"blpop", "evalsha claim", "blpop"}, seen,
		"the publish's token wakes the claim once, to learn the new earliest due time")
	requireTimeout(t, args[2][3], time.Millisecond, long.Block, "the rest of Block, not the hour")

	args = claim("scheduled an hour away, idle a moment ago: straight to BLPOP", "blpop")
	requireTimeout(t, args[0][3], time.Millisecond, 300*time.Millisecond, "the rest of Block")

	// Claims go on sleeping without claim.lua until the probe is due, then one probes again.
	deadline := time.Now().Add(engine.IdleProbe + 10*time.Second)
	for {
		cmds.reset()
		ds, err := b.Claim(e.Ctx, p)
		require.NoError(t, err)
		require.Empty(t, ds)
		seen, _ := cmds.list()
		if slices.Contains(seen, "evalsha claim") {
			// A Claim that starts just before the probe is due sleeps until then first.
			if seen[0] == "blpop" {
				seen = seen[1:]
			}
			require.Equal(t, []string{"evalsha claim", "blpop"}, seen, "one probe")
			require.GreaterOrEqual(t, time.Since(probed), engine.IdleProbe, "not before the probe is due")
			break
		}
		require.Equal(t, []string{"blpop"}, seen)
		require.True(t, time.Now().Before(deadline), "no probe within %v", engine.IdleProbe+10*time.Second)
	}
}

// requireTimeout checks a BLPOP timeout argument: seconds with three decimals, in [lo, hi].
func requireTimeout(t *testing.T, arg any, lo, hi time.Duration, what string) {
	t.Helper()
	s, _ := arg.(string)
	require.Regexp(t, `^\d+\.\d{3}$`, s, what)
	secs, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err)
	d := time.Duration(secs * float64(time.Second))
	require.True(t, d >= lo && d <= hi, "%s: %v not in [%v, %v]", what, d, lo, hi)
}

// One publish pushes one token, yet every blocked consumer gets work: each claim that leaves
// due messages behind passes a token on.
func TestOneWakeUpDrainsABurstAcrossConsumers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b, _ := e.counted(Options{})
	e.EnsureGroup("t", "g")

	const block, consumers = 20 * time.Second, 3
	var dones []<-chan claimed
	for i := range consumers {
		dones = append(dones, claimAsync(e.Ctx, b, backend.ClaimParams{Topic: "t", Group: "g",
			Consumer: fmt.Sprintf("c%d", i), Count: 2, Lease: time.Minute, Block: block}))
	}
	e.blocked(consumers)

	published := time.Now()
	want := e.Publish("t", "1", "2", "3", "4", "5", "6")
	var got []string
	for _, done := range dones {
		r := <-done
		require.NoError(t, r.err)
		require.Len(t, r.ds, 2, "every consumer was woken and got a share")
		require.Less(t, r.at.Sub(published), block/2)
		got = append(got, adaptertest.IDs(r.ds)...)
	}
	require.ElementsMatch(t, want, got)
}

func TestClaimReturnsNothingWhenBlockEnds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	ds, err := e.b.Claim(e.Ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 1, Lease: time.Minute, Block: 20 * time.Millisecond})
	require.NoError(t, err)
	require.Empty(t, ds)
	require.Equal(t, []string{"meta", "zregistry"}, e.Keys("t"), "nothing but the group's registration")
}

func TestClaimReturnsWhenTheContextIsCancelled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "g")
	ctx, cancel := context.WithTimeout(e.Ctx, 50*time.Millisecond)
	defer cancel()
	ds, err := e.b.Claim(ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 1, Lease: time.Minute, Block: time.Hour})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Empty(t, ds)
}

func TestBlockIsBoundedBelowTheClientReadTimeout(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: redistest.Shared(t).Addr(), ReadTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	b, err := New(c, Options{Prefix: redistest.Prefix(t)})
	require.NoError(t, err)
	require.Equal(t, 50*time.Millisecond, b.maxBlock, "Redis may end a block a server tick late")
	require.NoError(t, b.EnsureGroup(context.Background(), &backend.EnsureGroupParams{Topic: "t", Group: "g"}))

	// A claim blocking longer than the read timeout loops in bounded BLPOPs, without errors.
	ds, err := b.Claim(context.Background(), &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 1, Lease: time.Minute, Block: 500 * time.Millisecond})
	require.NoError(t, err)
	require.Empty(t, ds)

	for rt, want := range map[time.Duration]time.Duration{
		-1:               0,
		3 * time.Second:  2250 * time.Millisecond,
		time.Second:      750 * time.Millisecond,
		time.Millisecond: time.Millisecond,
	} {
		c := redis.NewClient(&redis.Options{Addr: redistest.Shared(t).Addr(), ReadTimeout: rt})
		t.Cleanup(func() { _ = c.Close() })
		require.Equal(t, want, blockBound(c), "read timeout %v", rt)
	}
}

func TestClaimIsBoundedByBatchSize(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.BatchSize = 2 })
	e.EnsureGroup("t", backend.DefaultGroup)
	e.Publish("t", "a", "b", "c")
	require.Equal(t, []string{"a", "b"}, adaptertest.Payloads(e.Claim("t", backend.DefaultGroup, "c", 100)))
}

func TestClaimRejectsANonPositiveLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.b.Claim(e.Ctx, &backend.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 1})
	require.ErrorIs(t, err, backend.ErrInvalidConfig)
}

func TestSecondsHasMillisecondPrecisionAndIsNeverZero(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		0: "0.001", time.Microsecond: "0.001", 1500 * time.Microsecond: "0.002",
		300 * time.Millisecond: "0.300", 2250 * time.Millisecond: "2.250", time.Hour: "3600.000",
	} {
		require.Equal(t, want, seconds(d), "%v", d)
	}
}
