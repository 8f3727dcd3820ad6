package zset

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
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
	"github.com/stretchr/testify/require"
)

// commands records the commands a client sends, as "blpop" or "evalsha claim" (scripts by name),
// leaving out the handshake of a new connection.
type commands struct {
	mu   sync.Mutex
	seen []string
	args [][]any
}

var scriptNames = map[string]string{
	claimScript.Hash(): "claim", wakeScript.Hash(): "wake", publishScript.Hash(): "publish",
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
			if s, ok := scriptNames[fmt.Sprint(a[1])]; ok {
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
	opt, err := redis.ParseURL(redistest.Shared(e.T).URL())
	require.NoError(e.T, err)
	opt.ClientName = e.Prefix
	c := redis.NewClient(opt)
	e.T.Cleanup(func() { _ = c.Close() })
	cmds := &commands{}
	c.AddHook(cmds)
	opts.Prefix = e.Prefix
	b, err := New(c, opts)
	require.NoError(e.T, err)
	require.NoError(e.T, b.check(e.Ctx)) // the version check
	for _, s := range []*redis.Script{claimScript, wakeScript} {
		require.NoError(e.T, s.Load(e.Ctx, c).Err())
	}
	cmds.reset()
	return b, cmds
}

// blocked waits until n connections named like e's counted client are blocked in BLPOP.
func (e *env) blocked(n int) {
	e.T.Helper()
	require.Eventually(e.T, func() bool {
		got := 0
		for line := range strings.Lines(e.C.ClientList(e.Ctx).Val()) {
			if strings.Contains(line, "name="+e.Prefix+" ") && strings.Contains(line, "cmd=blpop") {
				got++
			}
		}
		return got == n
	}, 5*time.Second, time.Millisecond, "%d claims should block in BLPOP", n)
}

type claimed struct {
	ds  []pubsub.Delivery
	err error
	at  time.Time
}

// claimAsync starts a blocking Claim; its result arrives on the channel.
func claimAsync(ctx context.Context, b *Backend, p pubsub.ClaimParams) <-chan claimed {
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
	done := claimAsync(e.Ctx, b, pubsub.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 10, Lease: time.Minute, Block: block})
	e.blocked(1)

	published := time.Now()
	e.Publish("t", "wake", "more")
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, []string{"wake", "more"}, adaptertest.Payloads(r.ds), "the claim after the wake-up takes the batch")
	require.Less(t, r.at.Sub(published), block/2, "woken by the publish, not by the end of Block")
	t.Logf("pickup after publish: %v", r.at.Sub(published))

	k := e.gk("t", "g")
	require.Equal(t, map[string]string{"1": "c", "2": "c"}, e.Hash(k.holders))
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
	done := claimAsync(e.Ctx, b, pubsub.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 10, Lease: time.Minute, Block: block})
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
	require.Equal(t, []any{"evalsha", wakeScript.Hash(), 1, k.ownWake("c")}, args[4])
	require.False(t, e.Exists(k.ownWake("c")), "the token was taken")
}

// With nothing due, a claim is one script and one BLPOP per Block, whatever is scheduled: the
// BLPOP's timeout is the rest of Block, or a fallback a little after the earliest due member
// (a local timer pushes the wake-up token at the due time itself).
func TestIdleClaimIssuesTwoCommandsPerBlock(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b, cmds := e.counted(Options{})
	e.EnsureGroup("t", "g")
	p := &pubsub.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 10, Lease: time.Minute, Block: 300 * time.Millisecond}

	ds, err := b.Claim(e.Ctx, p)
	require.NoError(t, err)
	require.Empty(t, ds)
	seen, args := cmds.list()
	require.Equal(t, []string{"evalsha claim", "blpop"}, seen, "nothing scheduled")
	requireTimeout(t, args[1][3], 250*time.Millisecond, 300*time.Millisecond, "the rest of Block, in seconds with ms precision")

	e.PublishDelayed("t", time.Hour, "much later")
	cmds.reset()
	ds, err = b.Claim(e.Ctx, p)
	require.NoError(t, err)
	require.Empty(t, ds)
	seen, _ = cmds.list()
	require.Equal(t, []string{"evalsha claim", "blpop", "evalsha claim", "blpop"}, seen,
		"the publish's token wakes the claim once, to learn the new earliest due time")

	cmds.reset()
	ds, err = b.Claim(e.Ctx, p)
	require.NoError(t, err)
	require.Empty(t, ds)
	seen, args = cmds.list()
	require.Equal(t, []string{"evalsha claim", "blpop"}, seen, "scheduled an hour away")
	requireTimeout(t, args[1][3], 250*time.Millisecond, 300*time.Millisecond, "the rest of Block")
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
		dones = append(dones, claimAsync(e.Ctx, b, pubsub.ClaimParams{Topic: "t", Group: "g",
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
	ds, err := e.b.Claim(e.Ctx, &pubsub.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 1, Lease: time.Minute, Block: 20 * time.Millisecond})
	require.NoError(t, err)
	require.Empty(t, ds)
	require.Equal(t, []string{"zgroups"}, e.Keys("t"))
}

func TestClaimReturnsWhenTheContextIsCancelled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(e.Ctx, 50*time.Millisecond)
	defer cancel()
	ds, err := e.b.Claim(ctx, &pubsub.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 1, Lease: time.Minute, Block: time.Hour})
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

	// A claim blocking longer than the read timeout loops in bounded BLPOPs, without errors.
	ds, err := b.Claim(context.Background(), &pubsub.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 1, Lease: time.Minute, Block: 500 * time.Millisecond})
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
	e.Publish("t", "a", "b", "c")
	require.Equal(t, []string{"a", "b"}, adaptertest.Payloads(e.Claim("t", pubsub.DefaultGroup, "c", 100)))
}

func TestClaimRejectsANonPositiveLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.b.Claim(e.Ctx, &pubsub.ClaimParams{Topic: "t", Group: "g", Consumer: "c", Count: 1})
	require.ErrorIs(t, err, pubsub.ErrInvalidConfig)
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
