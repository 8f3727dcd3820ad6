package faults

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// Parameters of the Redis-kill scenario.
const (
	redisKills     = 2
	redisDowntime  = time.Second // longer than go-redis's own retries, so some Publish calls fail
	redisBatch     = 20
	redisPace      = 10 * time.Millisecond // between batches: up to ~2,000 messages/s
	redisLease     = 5 * time.Second
	redisConsumers = 4
)

// Redis, persisting with AOF, is killed with SIGKILL and started again twice while a producer
// publishes and a subscriber consumes in this process.
//
// With appendfsync always, Redis fsyncs every write before it replies, so no message whose
// Publish returned nil may be lost, and the subscriber must resume by itself, on the same
// Subscribe channel. With appendfsync everysec, up to about a second of writes is lost with
// the process; the test reports how many published messages were never delivered (and the
// duplicates left by acks lost the same way) as figures, not assertions.
func TestRedisKilled(t *testing.T) {
	t.Parallel()
	for _, fsync := range []string{"always", "everysec"} {
		for _, bc := range faultBackends {
			t.Run(fsync+"/"+bc.name, func(t *testing.T) {
				t.Parallel()
				runRedisKilled(t, bc, fsync)
			})
		}
	}
}

func runRedisKilled(t *testing.T, bc backendCase, fsync string) {
	phase := time.Duration(scale(1, 5)) * time.Second // load between kills

	server := redistest.Start(t, redistest.Options{AOF: true, AppendFsync: fsync})
	topic, b, c, p := startLoad(t, bc, server.Client(t), pubsub.SubscriberConfig{
		Concurrency: redisConsumers, Lease: redisLease,
		RetryMin: 20 * time.Millisecond, RetryMax: 250 * time.Millisecond,
	})

	var backAt []time.Time
	for range redisKills {
		time.Sleep(phase)
		require.NoError(t, server.Kill())
		time.Sleep(redisDowntime)
		require.NoError(t, server.Start())
		backAt = append(backAt, time.Now())
	}
	time.Sleep(phase)
	p.stop()
	require.False(t, c.closedEarly(), "the subscription channel closed during the run")

	confirmed := p.confirmedUUIDs()
	if fsync == "always" {
		ok := pollUntil(settleTimeout, func() bool { return len(c.handled.missing(confirmed)) == 0 })
		missing := c.handled.missing(confirmed)
		require.True(t, ok, "%d of %d messages whose Publish returned nil were never delivered, e.g. %v",
			len(missing), len(confirmed), firstFew(missing, 5))
	}
	// everysec: what Redis lost is never delivered; wait until nothing is left to deliver.
	st := waitSettled(t, b, topic)
	require.False(t, c.closedEarly(), "the subscription channel closed during the run")
	if fsync == "always" {
		require.Zero(t, st.Dead, "dead letters: %+v", st)
	}

	// Resumption: from each restart to the first delivery of a message published after it,
	// which needs the subscriber to claim again by itself.
	var resumes []time.Duration
	for _, at := range backAt {
		first, ok := c.firstHandledPublishedAfter(p, at)
		require.True(t, ok, "no message published after the restart at %v was delivered", at)
		resumes = append(resumes, first.Sub(at))
	}
	_, worst := medianMax(resumes)

	missing := c.handled.missing(confirmed)
	uncertain := p.uncertainUUIDs()
	uncertainDelivered := len(uncertain) - len(c.handled.missing(uncertain))
	dups, twice := c.handled.duplicates(), c.storedTwice()
	t.Logf("%s/%s: %d confirmed, %d lost, %d duplicates (%d stored twice, %d redelivered), %d publishes failed (%d of their messages delivered), dead %d, resumed after %v",
		fsync, bc.name, len(confirmed), len(missing), dups, twice, dups-twice, p.failures.Load(), uncertainDelivered, st.Dead, resumes)
	record(row{
		Scenario: "2 redis killed, appendfsync " + fsync, Backend: bc.name,
		Published: len(confirmed), Handled: len(confirmed) - len(missing), Duplicates: dups, Lost: len(missing),
		Recovery: worst,
		Note: fmt.Sprintf("%d SIGKILLs, %v down; resumed %v after each restart; duplicates: %d stored twice, %d redelivered; %d publishes failed (%d of their messages delivered anyway)",
			redisKills, redisDowntime, roundAll(resumes), twice, dups-twice, p.failures.Load(), uncertainDelivered),
	})
}

// consumer handles a subscription's messages with redisConsumers goroutines, acking each one
// after recording it.
type consumer struct {
	handled *tally
	mu      sync.Mutex
	firstAt map[string]time.Time       // first handling per UUID
	ids     map[string]map[string]bool // delivery IDs per UUID
	wg      sync.WaitGroup
	closing atomic.Bool // the test is stopping the subscription
	early   atomic.Bool // the channel closed while the test was not stopping it
}

func newConsumer(msgs <-chan *message.Message) *consumer {
	c := &consumer{handled: newTally(), firstAt: make(map[string]time.Time), ids: make(map[string]map[string]bool)}
	for range redisConsumers {
		c.wg.Go(func() {
			for msg := range msgs {
				now := time.Now()
				c.mu.Lock()
				if _, ok := c.firstAt[msg.UUID]; !ok {
					c.firstAt[msg.UUID] = now
					c.ids[msg.UUID] = make(map[string]bool, 1)
				}
				c.ids[msg.UUID][pubsub.DeliveryID(msg)] = true
				c.mu.Unlock()
				c.handled.add(msg.UUID)
				msg.Ack()
			}
			if !c.closing.Load() {
				c.early.Store(true)
			}
		})
	}
	return c
}

func (c *consumer) closedEarly() bool { return c.early.Load() }

// storedTwice returns how many messages were stored more than once (delivered under more than
// one delivery ID): a Publish whose reply the crash cut off is retried by the Redis client,
// and its batch is stored twice.
func (c *consumer) storedTwice() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, ids := range c.ids {
		n += len(ids) - 1
	}
	return n
}

// startLoad publishes to a fresh topic of bc's backend on client (newProducer) while a
// subscriber with cfg consumes it (subscribeConsumer), until messages flow; both stop when t
// ends. It returns the topic, the backend, the consumer and the producer.
func startLoad(t *testing.T, bc backendCase, client redis.UniversalClient, cfg pubsub.SubscriberConfig) (string, backend.Backend, *consumer, *producer) {
	t.Helper()
	topic := faultTopic()
	b, _ := newFaultBackend(t, bc, client, redistest.Prefix(t))
	pub, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{}, faultLogger)
	require.NoError(t, err)
	c := subscribeConsumer(t, newFaultSubscriber(t, b, cfg), topic)
	p := newProducer(pub, topic)
	t.Cleanup(p.stop)
	require.True(t, pollUntil(settleTimeout, func() bool { return c.handled.distinct() >= 100 }), "messages do not flow")
	return topic, b, c, p
}

// subscribeConsumer subscribes sub to topic and handles its messages with a consumer, stopped
// when t ends, before the subscriber closes.
func subscribeConsumer(t *testing.T, sub *pubsub.Subscriber, topic string) *consumer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	msgs, err := sub.Subscribe(ctx, topic)
	if err != nil {
		cancel()
		require.NoError(t, err)
	}
	c := newConsumer(msgs)
	t.Cleanup(func() { c.stop(cancel) })
	return c
}

// stop cancels the subscription and waits for the handlers to drain.
func (c *consumer) stop(cancel context.CancelFunc) {
	c.closing.Store(true)
	cancel()
	c.wg.Wait()
}

// firstHandledPublishedAfter returns the earliest first handling of a message whose Publish
// returned nil after t.
func (c *consumer) firstHandledPublishedAfter(p *producer, t time.Time) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	var first time.Time
	for i, at := range p.confirmedAt {
		if !at.After(t) {
			continue
		}
		if h, ok := c.firstAt[p.confirmed[i]]; ok && (first.IsZero() || h.Before(first)) {
			first = h
		}
	}
	return first, !first.IsZero()
}

// producer publishes batches of redisBatch messages every redisPace until stopped, keeping
// apart the messages whose Publish returned nil (confirmed) and those whose Publish failed
// (uncertain: Redis may have stored them before the connection broke).
type producer struct {
	failures atomic.Int64
	quit     chan struct{}
	done     chan struct{}
	once     sync.Once

	mu          sync.Mutex
	confirmed   []string
	confirmedAt []time.Time
	uncertain   []string
	sent        []string    // every message, confirmed or uncertain
	sentAt      []time.Time // when the Publish call of sent[i] started
}

func newProducer(pub *pubsub.Publisher, topic string) *producer {
	p := &producer{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			msgs := faultMessages(redisBatch)
			start := time.Now()
			err := pub.Publish(topic, msgs...)
			now := time.Now()
			p.mu.Lock()
			for _, m := range msgs {
				p.sent = append(p.sent, m.UUID)
				p.sentAt = append(p.sentAt, start)
				if err == nil {
					p.confirmed = append(p.confirmed, m.UUID)
					p.confirmedAt = append(p.confirmedAt, now)
				} else {
					p.uncertain = append(p.uncertain, m.UUID)
				}
			}
			p.mu.Unlock()
			if err != nil {
				p.failures.Add(1)
			}
			select {
			case <-p.quit:
				return
			case <-time.After(redisPace):
			}
		}
	}()
	return p
}

// stop stops publishing and waits for the publish in progress. Idempotent.
func (p *producer) stop() {
	p.once.Do(func() { close(p.quit) })
	<-p.done
}

func (p *producer) confirmedUUIDs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.confirmed...)
}

func (p *producer) uncertainUUIDs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.uncertain...)
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

// confirmedSentAfter returns the messages whose Publish started after t and returned nil.
func (p *producer) confirmedSentAfter(t time.Time) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ok := make(map[string]bool, len(p.confirmed))
	for _, u := range p.confirmed {
		ok[u] = true
	}
	var out []string
	for i, u := range p.sent {
		if p.sentAt[i].After(t) && ok[u] {
			out = append(out, u)
		}
	}
	return out
}
