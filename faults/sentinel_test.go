package faults

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// sentinelWarmup is how many messages every topic has handled before the kill.
const sentinelWarmup = 100

// A primary with one replica, watched by three sentinels, is killed with SIGKILL while, for
// every backend, a producer per topic publishes (batches of redisBatch every redisPace, as in
// TestRedisKilled) and a subscriber consumes, all through redis.NewFailoverClient (one per
// backend). The sentinels promote the replica within seconds (down-after-milliseconds 1 s).
//
// What is asserted: the subscribers resume by themselves on every topic, on the same
// Subscribe channels, which never close; the groups settle with nothing dead-lettered; and
// in the WaitReplicas run (PublisherConfig.WaitReplicas 1) every message whose Publish
// returned nil is delivered. The promoted replica has no replica of its own, so that run
// starts the killed node again once the failover is done, and the sentinels turn it into the
// new primary's replica; until then every Publish fails with ErrNotReplicated (its messages
// are stored, and delivered, but not confirmed). The Async run publishes without waiting:
// what the primary acknowledged and had not yet sent to its replica dies with it, and the
// test reports that loss as a figure. Both report duplicates, split into messages stored
// twice (a failed Publish that go-redis retried) and redelivered, and the time from the kill
// until the subscribers of a backend have resumed on all its topics.
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	forReplicationModes(t, runSentinelFailover)
}

func runSentinelFailover(t *testing.T, waitReplicas int) {
	perBackend := scale(1, 3)                          // topics
	after := time.Duration(scale(1, 10)) * time.Second // load once every topic resumed

	d := redistest.StartSentinel(t, redistest.SentinelOptions{})
	runs := make([]*sentinelRun, len(faultBackends))
	for i, bc := range faultBackends {
		b, _ := newFaultBackend(t, bc, d.Client(t), redistest.Prefix(t))
		runs[i] = startSentinelRun(t, bc.name, b, perBackend, waitReplicas)
	}
	for _, r := range runs {
		require.True(t, pollUntil(failoverTimeout, r.warm), "%s: messages do not flow before the kill", r.name)
	}

	old, replica := d.Nodes[0], d.Nodes[1]
	require.NoError(t, old.Kill()) // returns once the process is gone
	killedAt := time.Now()
	require.True(t, pollUntil(failoverTimeout, func() bool { return servesAsPrimary(replica) }), "the replica was not promoted")
	promoted := time.Since(killedAt)
	primary, err := d.WaitFailover(old, failoverTimeout)
	require.NoError(t, err)
	require.Equal(t, replica, primary)
	failover := sentinelFailover{promoted: promoted, agreed: time.Since(killedAt)}
	t.Logf("replica promoted %v after the kill, all sentinels agreed after %v", failover.promoted, failover.agreed)

	for _, r := range runs {
		require.True(t, pollUntil(failoverTimeout, func() bool { return r.resumed(killedAt) }),
			"%s: subscribers did not resume on every topic after the failover", r.name)
	}
	if waitReplicas > 0 {
		// The promoted replica has no replica: start the killed node again (empty: the nodes
		// persist nothing); the sentinels make it the new primary's replica, and it resyncs.
		require.NoError(t, old.Start())
		restartedAt := time.Now()
		waitReplicaSynced(t, old)
		failover.rejoined = time.Since(restartedAt)
		t.Logf("killed node replicating %v after its restart", failover.rejoined)
	}
	time.Sleep(after) // a phase of load after the failover, not a wait for a condition
	for _, r := range runs {
		r.stopProducing()
	}
	for _, r := range runs {
		r.finish(t, killedAt, failover, waitReplicas)
	}
}

// sentinelRun is one backend's producers and consumers, one of each per topic, on one
// subscriber and one publisher.
type sentinelRun struct {
	name      string
	backend   backend.Backend
	topics    []string
	producers []*producer
	consumers []*consumer
}

func startSentinelRun(t *testing.T, name string, b backend.Backend, topics, waitReplicas int) *sentinelRun {
	r := &sentinelRun{name: name, backend: b}
	sub := newFaultSubscriber(t, b, pubsub.SubscriberConfig{
		Concurrency: redisConsumers, Lease: failoverLease, Block: 200 * time.Millisecond,
		RetryMin: 20 * time.Millisecond, RetryMax: 250 * time.Millisecond, CloseTimeout: 5 * time.Second,
	})
	pub, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{WaitReplicas: waitReplicas}, faultLogger)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	for range topics {
		topic := faultTopic()
		msgs, err := sub.Subscribe(ctx, topic)
		require.NoError(t, err)
		r.topics = append(r.topics, topic)
		r.consumers = append(r.consumers, newConsumer(msgs))
		r.producers = append(r.producers, newProducer(pub, topic))
	}
	t.Cleanup(func() {
		r.stopProducing()
		for _, c := range r.consumers {
			c.closing.Store(true)
		}
		cancel()
		for _, c := range r.consumers {
			c.wg.Wait()
		}
	})
	return r
}

func (r *sentinelRun) stopProducing() {
	for _, p := range r.producers {
		p.stop()
	}
}

// warm reports whether every topic has handled sentinelWarmup messages.
func (r *sentinelRun) warm() bool {
	for _, c := range r.consumers {
		if c.handled.distinct() < sentinelWarmup {
			return false
		}
	}
	return true
}

// resumedAt returns, per topic, the first handling of a message whose Publish started after
// t (false when a topic has none yet).
func (r *sentinelRun) resumedAt(t time.Time) ([]time.Time, bool) {
	out := make([]time.Time, len(r.topics))
	for i, c := range r.consumers {
		at, ok := c.firstHandledSentAfter(r.producers[i], t)
		if !ok {
			return nil, false
		}
		out[i] = at
	}
	return out, true
}

func (r *sentinelRun) resumed(t time.Time) bool {
	_, ok := r.resumedAt(t)
	return ok
}

// finish waits for every confirmed message (WaitReplicas) and for every topic to settle,
// asserts, and records the figures.
func (r *sentinelRun) finish(t *testing.T, killedAt time.Time, failover sentinelFailover, waitReplicas int) {
	t.Helper()
	if waitReplicas > 0 {
		for i, p := range r.producers {
			c, want := r.consumers[i], p.confirmedUUIDs()
			ok := pollUntil(settleTimeout, func() bool { return len(c.handled.missing(want)) == 0 })
			require.True(t, ok, "%s: %d of %d messages confirmed with WaitReplicas were never delivered, e.g. %v",
				r.name, len(c.handled.missing(want)), len(want), firstFew(c.handled.missing(want), 5))
		}
	}
	var dead int64
	for _, topic := range r.topics {
		dead += waitSettled(t, r.backend, topic).Dead
	}
	require.Zero(t, dead, "%s: messages were dead-lettered", r.name)

	var confirmed, lost, uncertainDelivered, dups, twice int
	var failures int64
	var firstResume, allResumed time.Duration
	resumes, ok := r.resumedAt(killedAt)
	require.True(t, ok)
	for i, c := range r.consumers {
		p := r.producers[i]
		confirmed += len(p.confirmedUUIDs())
		lost += len(c.handled.missing(p.confirmedUUIDs()))
		failures += p.failures.Load()
		u := p.uncertainUUIDs()
		uncertainDelivered += len(u) - len(c.handled.missing(u))
		dups += c.handled.duplicates()
		twice += c.storedTwice()
		require.False(t, c.closedEarly(), "%s: a subscription channel closed during the failover", r.name)
		d := resumes[i].Sub(killedAt)
		if firstResume == 0 || d < firstResume {
			firstResume = d
		}
		allResumed = max(allResumed, d)
	}
	if waitReplicas > 0 {
		require.Zero(t, lost, "%s: messages lost although the replica acknowledged them", r.name)
	}

	scenario := "3 sentinel primary killed, async replication"
	rejoin := "lost: acknowledged by the primary, not yet replicated"
	if waitReplicas > 0 {
		scenario = fmt.Sprintf("3 sentinel primary killed, WaitReplicas %d", waitReplicas)
		rejoin = fmt.Sprintf("killed node replicating %v after its restart", failover.rejoined.Round(100*time.Millisecond))
	}
	record(row{
		Scenario: scenario, Backend: r.name, Published: confirmed,
		Handled: confirmed - lost, Duplicates: dups, Lost: lost, Recovery: allResumed,
		Note: fmt.Sprintf("replica promoted after %v, sentinels agreed after %v; %d topic(s), first resumed after %v; duplicates: %d stored twice, %d redelivered; %d publishes failed (%d of their messages delivered anyway); %s",
			failover.promoted.Round(time.Millisecond), failover.agreed.Round(time.Millisecond), len(r.topics),
			firstResume.Round(time.Millisecond), twice, dups-twice, failures, uncertainDelivered, rejoin),
	})
}

// sentinelFailover is how long the failover took, from the kill.
type sentinelFailover struct {
	promoted time.Duration // until the replica served as primary
	agreed   time.Duration // until every sentinel named it (redistest.Sentinel.WaitFailover)
	rejoined time.Duration // WaitReplicas: from the restart of the killed node until it replicated
}

// servesAsPrimary reports whether s answers with role master.
func servesAsPrimary(s *redistest.Server) bool {
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	info, err := c.Info(context.Background(), "replication").Result()
	return err == nil && strings.Contains(info, "role:master")
}

// firstHandledSentAfter returns the earliest first handling of a message, confirmed or not,
// whose Publish call started after t.
func (c *consumer) firstHandledSentAfter(p *producer, t time.Time) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	var first time.Time
	for i, at := range p.sentAt {
		if !at.After(t) {
			continue
		}
		if h, ok := c.firstAt[p.sent[i]]; ok && (first.IsZero() || h.Before(first)) {
			first = h
		}
	}
	return first, !first.IsZero()
}
