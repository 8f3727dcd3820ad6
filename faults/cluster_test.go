package faults

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/keys"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/internal/seal"
	"github.com/relq/relq/pubsub"
)

// TestClusterConformance runs the whole conformance suite for every backend on a real Redis
// Cluster (3 primaries with one replica each) through redis.NewClusterClient, and checks that
// the suite's topics landed on all three primaries: every script is single-slot, whichever
// primary serves the topic's hash tag. streams runs in FormatWatermill too, whose stream key is
// the bare topic name. The suite's Outage test is skipped (the Harness has no Outage): it stops
// a single server; TestClusterFailover covers losing a primary.
func TestClusterConformance(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, redistest.ClusterOptions{})
	cases := append(slices.Clone(faultBackends), backendCase{"streams-watermill",
		func(c redis.UniversalClient, prefix string, opts conformance.Options) (backend.Backend, corruptInjector, error) {
			b, err := streams.New(c, streams.Options{Prefix: prefix, Format: streams.FormatWatermill,
				BacklogLimit: opts.BacklogLimit, BacklogTTL: opts.BacklogTTL, TombstoneTTL: opts.TombstoneTTL, BacklogFull: opts.BacklogFull})
			if err != nil {
				return nil, nil, err
			}
			return b, seal.Open(b), nil
		}})
	for _, bc := range cases {
		t.Run(bc.name, func(t *testing.T) {
			t.Parallel()
			cc := cluster.Client(t)
			topics := newTopicLog()
			t.Run("Suite", func(t *testing.T) {
				conformance.Run(t, func(t *testing.T, opts conformance.Options) conformance.Harness {
					prefix := redistest.Prefix(t)
					tag := func(topic string) string { return keys.Tag(prefix, topic) }
					base := tag
					var also func(topic string) []string
					if bc.name == "streams-watermill" {
						tag = func(topic string) string { return "{" + topic + "}" }
						base = func(topic string) string { return keys.Join(tag(topic), prefix) }
						also = func(topic string) []string { return []string{topic} }
					}
					b, f := newConformanceBackend(t, bc, cc, prefix, opts)
					admin, ok := b.(backend.Admin)
					require.True(t, ok, "the %s backend implements no backend.Admin", bc.name)
					// A topic's keys live on the primary of its slot: SCAN that one.
					topicKeys := func(topic string) ([]string, error) {
						node, err := cc.MasterForKey(context.Background(), tag(topic))
						if err != nil {
							return nil, err
						}
						return adaptertest.TopicKeys(node, base, also)(topic)
					}
					return conformance.Harness{
						Backend: topics.wrap(b, tag),
						Faults:  conformanceFaults(t, f),
						Admin:   admin,
						Keys:    topicKeys,
						Forget:  adaptertest.Forget(cc, topicKeys),
						Peer: func() (backend.Backend, error) {
							peer, _ := newConformanceBackend(t, bc, cluster.Client(t), prefix, opts)
							return peer, nil
						},
						Complete: true,
					}
				})
			})
			tags := topics.list()
			byPrimary := owners(t, cc, tags)
			t.Logf("%d topics by primary: %v", len(tags), byPrimary)
			require.Len(t, byPrimary, 3, "the suite's topics did not reach every primary")
		})
	}
}

// Parameters of the Cluster failover scenario.
const (
	failoverLease   = 2 * time.Second // leases lost with the primary come back this soon
	failoverPace    = 5 * time.Millisecond
	failoverWarmup  = 20 // messages handled per topic before the kill
	failoverTimeout = time.Minute
)

// One primary of a 3-primary cluster (one replica each) is killed with SIGKILL while, for
// every backend, a publisher publishes to topics on all three primaries and two subscribers
// consume them through one cluster client. The primary's replica takes over.
//
// What is asserted: the subscribers resume on the failed primary's topics by themselves;
// nothing is lost on the topics of the primaries that survived; and every message whose
// successful Publish started once the cluster was healthy again is delivered. Redis
// replicates asynchronously, so a write the primary acknowledged but had not yet sent to its
// replica dies with it: the Async run reports that loss (and the duplicates that lost acks and
// claims cause) as a figure. The WaitReplicas run publishes with PublisherConfig.WaitReplicas
// 1, so Publish returns nil only once the replica has the messages, and asserts that nothing
// is lost. With one replica per primary, the promoted replica has none of its own, so its
// topics accept publishes again only once the killed node is restarted and has resynced as
// its replica, which the test does.
func TestClusterFailover(t *testing.T) {
	t.Parallel()
	forReplicationModes(t, runClusterFailover)
}

func runClusterFailover(t *testing.T, waitReplicas int) {
	perPrimary := scale(1, 3)                          // topics per primary and backend
	batch := scale(1, 5)                               // messages per Publish
	after := time.Duration(scale(1, 10)) * time.Second // load once every topic resumed

	cluster := redistest.StartCluster(t, redistest.ClusterOptions{})
	cc := cluster.Client(t)
	primaries, err := cluster.Primaries()
	require.NoError(t, err)
	require.Len(t, primaries, 3)
	addrs := make([]string, len(primaries))
	for i, p := range primaries {
		addrs[i] = p.Addr()
	}
	victim := primaries[0]

	runs := make([]*failoverRun, len(faultBackends))
	for i, bc := range faultBackends {
		prefix := redistest.Prefix(t)
		b, _ := newFaultBackend(t, bc, cc, prefix)
		runs[i] = startFailoverRun(t, bc.name, b, topicsPerPrimary(t, cc, prefix, addrs, perPrimary), victim.Addr(), batch, waitReplicas)
	}
	for _, r := range runs {
		require.True(t, pollUntil(failoverTimeout, func() bool { return r.warm(failoverWarmup) }), "%s: messages do not flow before the kill", r.name)
	}

	require.NoError(t, victim.Kill()) // returns once the process is gone
	killedAt := time.Now()
	require.NoError(t, cluster.WaitHealthy(failoverTimeout))
	healthyAt := time.Now()
	failover := healthyAt.Sub(killedAt)
	t.Logf("replica took over %v after the kill", failover)
	if waitReplicas > 0 {
		// The promoted replica has no replica: bring the killed node back, as its replica.
		require.NoError(t, victim.Start())
		waitReplicaSynced(t, victim)
		t.Logf("killed node resynced as a replica %v after the kill", time.Since(killedAt))
	}

	for _, r := range runs {
		require.True(t, pollUntil(failoverTimeout, func() bool { return r.resumed(healthyAt) }),
			"%s: subscribers did not resume on every topic: %v", r.name, r.topicsNotResumed(healthyAt))
	}
	time.Sleep(after) // a phase of load on the recovered cluster, not a wait for a condition
	for _, r := range runs {
		r.stopPublishing()
	}
	for _, r := range runs {
		r.finish(t, killedAt, healthyAt, failover)
	}
}

// waitReplicaSynced waits until s, restarted, serves as a replica with its link up.
func waitReplicaSynced(t *testing.T, s *redistest.Server) {
	t.Helper()
	c := s.Client(t)
	ok := pollUntil(failoverTimeout, func() bool {
		info, err := c.Info(context.Background(), "replication").Result()
		return err == nil && strings.Contains(info, "role:slave") && strings.Contains(info, "master_link_status:up")
	})
	require.True(t, ok, "the restarted node did not resync as a replica")
}

// failoverRun is one backend's publisher and subscribers during the failover.
type failoverRun struct {
	name         string
	backend      backend.Backend
	topics       []string
	victimTopics map[string]bool // topics whose primary is killed
	batch        int             // messages per Publish
	waitReplicas int

	handled *tally
	stop    chan struct{}
	wg      sync.WaitGroup

	mu          sync.Mutex
	stored      []storedMsg
	firstHandle map[string]time.Time // UUID -> first handled
	failures    int                  // Publish calls that returned an error
}

// storedMsg is a message whose Publish returned nil; start is when that successful call began.
type storedMsg struct {
	uuid, topic string
	start       time.Time
}

func startFailoverRun(t *testing.T, name string, b backend.Backend, byPrimary map[string][]string, victim string, batch, waitReplicas int) *failoverRun {
	r := &failoverRun{
		name: name, backend: b, victimTopics: map[string]bool{}, batch: batch, waitReplicas: waitReplicas,
		handled: newTally(), stop: make(chan struct{}), firstHandle: map[string]time.Time{},
	}
	for addr, topics := range byPrimary {
		r.topics = append(r.topics, topics...)
		for _, topic := range topics {
			r.victimTopics[topic] = addr == victim
		}
	}
	slices.Sort(r.topics)
	for range 2 {
		sub := newFaultSubscriber(t, b, pubsub.SubscriberConfig{
			Concurrency: 2, Lease: failoverLease, Block: 200 * time.Millisecond,
			RetryMin: 20 * time.Millisecond, RetryMax: 250 * time.Millisecond, CloseTimeout: 5 * time.Second,
		})
		for _, topic := range r.topics {
			ch, err := sub.Subscribe(context.Background(), topic)
			require.NoError(t, err)
			go r.consume(ch)
		}
	}
	pub, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{WaitReplicas: waitReplicas}, faultLogger)
	require.NoError(t, err)
	for _, topic := range r.topics {
		r.wg.Add(1)
		go r.publish(pub, topic)
	}
	t.Cleanup(r.stopPublishing)
	return r
}

// consume handles until the subscriber closes the channel.
func (r *failoverRun) consume(ch <-chan *message.Message) {
	consumeNoting(ch, &r.mu, r.firstHandle, r.handled)
}

// publish publishes batches of r.batch messages, each batch until a Publish call returns nil.
func (r *failoverRun) publish(pub *pubsub.Publisher, topic string) {
	defer r.wg.Done()
	keepPublishing(r.stop, func() []*message.Message { return faultMessages(r.batch) },
		func(msgs []*message.Message) error { return pub.Publish(topic, msgs...) },
		func(msgs []*message.Message, start time.Time, err error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			if err != nil {
				r.failures++
				return
			}
			for _, m := range msgs {
				r.stored = append(r.stored, storedMsg{uuid: m.UUID, topic: topic, start: start})
			}
		})
}

func (r *failoverRun) stopPublishing() {
	closeOnce(r.stop)
	r.wg.Wait()
}

// handledSince counts, per topic, the messages handled whose successful Publish started after t.
func (r *failoverRun) handledSince(t time.Time) map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int)
	for _, m := range r.stored {
		if m.start.After(t) {
			if _, ok := r.firstHandle[m.uuid]; ok {
				out[m.topic]++
			}
		}
	}
	return out
}

// warm reports whether every topic has had n messages handled.
func (r *failoverRun) warm(n int) bool {
	got := r.handledSince(time.Time{})
	for _, topic := range r.topics {
		if got[topic] < n {
			return false
		}
	}
	return true
}

func (r *failoverRun) resumed(healthyAt time.Time) bool {
	return len(r.topicsNotResumed(healthyAt)) == 0
}

// topicsNotResumed lists the topics with no message handled that was published after healthyAt.
func (r *failoverRun) topicsNotResumed(healthyAt time.Time) []string {
	got := r.handledSince(healthyAt)
	var out []string
	for _, topic := range r.topics {
		if got[topic] == 0 {
			out = append(out, topic)
		}
	}
	return out
}

// finish waits for every message that must be delivered, then for every topic to settle,
// asserts, and records the figures.
func (r *failoverRun) finish(t *testing.T, killedAt, healthyAt time.Time, failover time.Duration) {
	t.Helper()
	r.mu.Lock()
	stored := slices.Clone(r.stored)
	failures := r.failures
	r.mu.Unlock()

	// Must be delivered: everything with WaitReplicas; otherwise everything on the surviving
	// primaries, and everything stored by a Publish that started once the cluster was healthy.
	var must, all []string
	for _, m := range stored {
		all = append(all, m.uuid)
		if r.waitReplicas > 0 || !r.victimTopics[m.topic] || m.start.After(healthyAt) {
			must = append(must, m.uuid)
		}
	}
	ok := pollUntil(settleTimeout, func() bool { return len(r.handled.missing(must)) == 0 })
	require.True(t, ok, "%s: %d of %d messages that must survive the failover were never delivered, e.g. %v",
		r.name, len(r.handled.missing(must)), len(must), firstFew(r.handled.missing(must), 5))
	var dead int64
	for _, topic := range r.topics {
		dead += waitSettled(t, r.backend, topic).Dead
	}
	require.Zero(t, dead, "%s: messages were dead-lettered", r.name)

	lost := r.handled.missing(all)
	var recovery time.Duration
	r.mu.Lock()
	for _, m := range stored {
		at, ok := r.firstHandle[m.uuid]
		// at is the first handling of the UUID; one before m.start came from an earlier
		// attempt of a retried Publish, and proves nothing about recovery.
		if ok && r.victimTopics[m.topic] && m.start.After(killedAt) && at.After(m.start) && (recovery == 0 || at.Sub(killedAt) < recovery) {
			recovery = at.Sub(killedAt)
		}
	}
	r.mu.Unlock()
	scenario, note := "3 cluster primary killed, async replication", "lost: acknowledged by the primary, not yet replicated"
	if r.waitReplicas > 0 {
		scenario, note = fmt.Sprintf("3 cluster primary killed, WaitReplicas %d", r.waitReplicas), "killed node restarted as the new primary's replica"
	}
	record(row{
		Scenario: scenario, Backend: r.name, Published: len(stored),
		Handled: len(stored) - len(lost), Duplicates: r.handled.duplicates(), Lost: len(lost),
		Recovery: recovery,
		Note: fmt.Sprintf("1 of 3 primaries SIGKILLed, replica promoted after %v; %d topics (%d on it); %d publishes failed and were retried; %s",
			failover.Round(time.Millisecond), len(r.topics), countTrue(r.victimTopics), failures, note),
	})
	if r.waitReplicas > 0 {
		require.Empty(t, lost, "%s: messages lost although a replica acknowledged them", r.name)
	}
}

func countTrue(m map[string]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}
