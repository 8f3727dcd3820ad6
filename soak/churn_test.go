package soak

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// churnHeapPerCycle is the heap growth (after GC) per Subscribe/cancel cycle the churn test
// tolerates: less than any map entry, goroutine or connection a subscription could leave
// behind, more than the allocator's and the runtime's own drift over a few thousand cycles.
const churnHeapPerCycle = 64

// churnRow is the churn test's figures on one backend.
type churnRow struct {
	backend                      string
	cycles, warm                 int
	heapWarm, heapEnd            uint64 // HeapAlloc after GC
	goroutinesStart, goroutines  int    // before the first cycle, and once the last one ended
	keysStart, keysWarm, keysEnd int64  // DBSIZE
	took                         time.Duration
}

func (r churnRow) perCycle() float64 {
	return (float64(r.heapEnd) - float64(r.heapWarm)) / float64(r.cycles-r.warm)
}

var churnRows []churnRow // written by TestSubscriptionsComeAndGo's subtests, which run one by one

// TestSubscriptionsComeAndGo runs Subscribe/cancel cycles on each backend, each cycle a
// subscription of an ephemeral group on a topic of its own that receives and acks one message,
// as a request-reply service subscribes per request. Whatever a subscription creates (its
// goroutines, its consumer's idle state, its wait connection, the registry its topic caches,
// its group's keys) must go when it ends: after a warm-up, the heap after GC grows at most
// churnHeapPerCycle bytes a cycle, the goroutines come back to where they started, and Redis
// holds no more keys. The subtests run one at a time, alone in the process (the test is not
// parallel), so that the heap and goroutine counts are theirs.
func TestSubscriptionsComeAndGo(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			server := redistest.Start(t, redistest.Options{})
			client := server.Client(t)
			b, err := be.open(client)
			require.NoError(t, err)
			defer closeBackend(b)
			pub, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{}, watermill.NopLogger{})
			require.NoError(t, err)
			defer func() { _ = pub.Close() }()
			sub, err := pubsub.NewSubscriber(b, pubsub.SubscriberConfig{
				Group: "replies", Ephemeral: true,
				Block: subscriberConfig.Block, CloseTimeout: subscriberConfig.CloseTimeout,
			}, watermill.NopLogger{})
			require.NoError(t, err)
			defer func() { _ = sub.Close() }()

			row := churnRow{backend: be.name, cycles: churnCycles, warm: churnCycles / 10}
			row.goroutinesStart = runtime.NumGoroutine()
			row.keysStart = dbsize(t, client)
			start := time.Now()
			for i := range row.cycles {
				if i == row.warm {
					goroutinesDownTo(row.goroutinesStart, 30*time.Second) // the last cycle's, on their way out
					row.heapWarm = heapAfterGC()
					row.keysWarm = dbsize(t, client)
				}
				cycle(t, sub, pub, "reply-"+strconv.Itoa(i))
			}
			row.took = time.Since(start)
			row.goroutines = goroutinesDownTo(row.goroutinesStart, 30*time.Second)
			row.heapEnd = heapAfterGC()
			row.keysEnd = dbsize(t, client)
			churnRows = append(churnRows, row)
			t.Logf("%d cycles in %s: heap %d -> %d B after %d cycles (%.1f B/cycle), goroutines %d -> %d, keys %d -> %d (%d after the warm-up)",
				row.cycles, row.took.Round(time.Millisecond), row.heapWarm, row.heapEnd, row.warm, row.perCycle(),
				row.goroutinesStart, row.goroutines, row.keysStart, row.keysEnd, row.keysWarm)

			require.LessOrEqual(t, row.perCycle(), float64(churnHeapPerCycle),
				"the heap grew %d B in %d cycles after the warm-up", int64(row.heapEnd)-int64(row.heapWarm), row.cycles-row.warm)
			require.LessOrEqual(t, row.goroutines, row.goroutinesStart, "goroutines left by the subscriptions")
			require.LessOrEqual(t, row.keysEnd, row.keysStart, "keys left in Redis by the subscriptions")
		})
	}
}

// cycle subscribes to topic, receives and acks one message published to it, and cancels the
// subscription, waiting until its channel is closed: the subscription has ended then, its
// ephemeral group left.
func cycle(t *testing.T, sub *pubsub.Subscriber, pub message.Publisher, topic string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, err := sub.Subscribe(ctx, topic)
	require.NoError(t, err)
	require.NoError(t, pub.Publish(topic, message.NewMessage(watermill.NewUUID(), []byte(topic))))
	select {
	case msg := <-out:
		require.NotNil(t, msg, "%s: channel closed before its message", topic)
		msg.Ack()
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no message within 30s", topic)
	}
	cancel()
	for range out { // nothing more was published: the loop ends when the channel closes
	}
}

// heapAfterGC is the live heap: HeapAlloc after two collections (the second frees what the
// first left to sync.Pool's victim cache).
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// goroutinesDownTo polls the goroutine count until it is at most n or within has passed, and
// returns the last count: goroutines of ended subscriptions may still be on their way out.
func goroutinesDownTo(n int, within time.Duration) int {
	deadline := time.Now().Add(within)
	for {
		g := runtime.NumGoroutine()
		if g <= n || time.Now().After(deadline) {
			return g
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func dbsize(t *testing.T, c redis.UniversalClient) int64 {
	t.Helper()
	n, err := c.DBSize(context.Background()).Result()
	require.NoError(t, err)
	return n
}

// printChurn prints the churn figures as the Markdown table docs/reliability.md keeps.
func printChurn(w io.Writer) {
	if len(churnRows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n| backend | cycles | heap after GC, after %d → %d cycles | per cycle | goroutines before → after | Redis keys before → after | took |\n",
		churnRows[0].warm, churnRows[0].cycles)
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|")
	for _, r := range churnRows {
		fmt.Fprintf(w, "| %s | %d | %s → %s | %.1f B | %d → %d | %d → %d | %s |\n", r.backend, r.cycles,
			kib(int64(r.heapWarm)), kib(int64(r.heapEnd)), r.perCycle(), r.goroutinesStart, r.goroutines,
			r.keysStart, r.keysEnd, r.took.Round(time.Second))
	}
}
