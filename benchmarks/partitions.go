package benchmarks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/partition"
	"github.com/relq/relq/pubsub"
)

// PartitionCost is what each primary of a Cluster spent on a topic of P partitions while its
// messages were published and consumed, per message of the topic.
type PartitionCost struct {
	Backend    string `json:"backend"`
	Partitions int    `json:"partitions"`
	// Ordered: the subscribers set SubscriberConfig.Ordered.
	Ordered   bool        `json:"ordered"`
	Messages  int         `json:"messages"`
	Primaries []RedisCost `json:"primaries"`
	// Elapsed is the wall time from the first publish to the last ack: on a machine with
	// fewer cores than primaries a figure of that machine, not of the topic.
	Elapsed time.Duration `json:"elapsed_ns"`
}

// Total is what every primary together spent per message: CPU (µs) and commands.
func (c PartitionCost) Total() (cpu, commands float64) {
	for _, p := range c.Primaries {
		cpu += p.CPUMicrosPerMessage
		commands += p.CommandsPerMessage
	}
	return cpu, commands
}

// Busiest is the primary that spent the most CPU per message: the one that caps the topic.
func (c PartitionCost) Busiest() RedisCost {
	var b RedisCost
	for _, p := range c.Primaries {
		if p.CPUMicrosPerMessage > b.CPUMicrosPerMessage {
			b = p
		}
	}
	return b
}

// CPUShare and CommandShare are the busiest primary's share of the Cluster's Redis CPU and of
// its commands (even over n primaries is 1/n).
func (c PartitionCost) CPUShare() float64 {
	return c.share(func(r RedisCost) float64 { return r.CPUMicrosPerMessage })
}

// CommandShare: see CPUShare.
func (c PartitionCost) CommandShare() float64 {
	return c.share(func(r RedisCost) float64 { return r.CommandsPerMessage })
}

// share is the largest primary's part of the sum of figure over the primaries.
func (c PartitionCost) share(figure func(RedisCost) float64) float64 {
	var total, top float64
	for _, p := range c.Primaries {
		total += figure(p)
		top = max(top, figure(p))
	}
	return top / max(total, 1e-9)
}

// Ceiling is the messages per second the topic could reach before its busiest primary runs
// out of one core: 1 / (that primary's CPU per message). On a machine with fewer cores than
// primaries the Cluster cannot show it as throughput; the CPU it spends says it.
func (c PartitionCost) Ceiling() float64 {
	return 1e6 / max(c.Busiest().CPUMicrosPerMessage, 1e-9)
}

// MeasurePartitions publishes n keyed messages to one topic of p partitions (p = 1: the
// backend itself, as before partitions) of target on a Cluster, from 8 goroutines in batches
// of 50, while subscribers (3, Concurrency 8, ordered or not) of one group consume them, and
// reads what each primary spent (INFO, before and after). primaries are clients of the
// Cluster's primaries.
func MeasurePartitions(ctx context.Context, cluster *redis.ClusterClient, primaries []*redis.Client, t Target, p, n int, ordered bool) (PartitionCost, error) {
	var salt [4]byte
	_, _ = rand.Read(salt[:])
	prefix := "relqbench-" + hex.EncodeToString(salt[:])
	inner, err := t.newBackend(cluster, prefix)
	if err != nil {
		return PartitionCost{}, err
	}
	b := inner
	if p > 1 {
		b, err = partition.Wrap(inner, partition.NativeConfig(cluster, prefix, p))
		if err != nil {
			return PartitionCost{}, err
		}
	}
	const topic, subscribers = "orders", 3
	var acked atomic.Int64
	done := make(chan struct{})
	subCtx, stop := context.WithCancel(ctx)
	defer stop()
	var subs []*pubsub.Subscriber
	for range subscribers {
		sub, err := pubsub.NewSubscriber(b, pubsub.SubscriberConfig{Group: group, Concurrency: 8, Ordered: ordered}, nil)
		if err != nil {
			return PartitionCost{}, err
		}
		subs = append(subs, sub)
		ch, err := sub.Subscribe(subCtx, topic)
		if err != nil {
			return PartitionCost{}, err
		}
		go func() {
			for msg := range ch {
				msg.Ack()
				if acked.Add(1) == int64(n) {
					close(done)
				}
			}
		}()
	}
	defer func() {
		for _, s := range subs {
			_ = s.Close()
		}
	}()
	time.Sleep(time.Second) // the group's shares settle before the measured phase
	meters := make([]*costMeter, len(primaries))
	for i, c := range primaries {
		if meters[i], err = startCost(ctx, c); err != nil {
			return PartitionCost{}, err
		}
	}
	pub, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{}, nil)
	if err != nil {
		return PartitionCost{}, err
	}
	defer pub.Close()
	const goroutines, batch = 8, 50
	began := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g * batch; i < n; i += goroutines * batch {
				msgs := make([]*message.Message, 0, batch)
				for j := i; j < min(i+batch, n); j++ {
					m := message.NewMessage(watermill.NewUUID(), []byte("payload"))
					pubsub.SetKey(m, "customer-"+strconv.Itoa(j%1000))
					msgs = append(msgs, m)
				}
				if err := pub.Publish(topic, msgs...); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return PartitionCost{}, err
	}
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		return PartitionCost{}, fmt.Errorf("partitions: %d of %d messages acked in 2 minutes", acked.Load(), n)
	}
	out := PartitionCost{Backend: t.Name, Partitions: p, Ordered: ordered, Messages: n, Elapsed: time.Since(began)}
	for _, m := range meters {
		c, err := m.stop(ctx, n)
		if err != nil {
			return PartitionCost{}, err
		}
		out.Primaries = append(out.Primaries, c)
	}
	if a, ok := b.(backend.Admin); ok {
		_ = a.DeleteTopic(ctx, topic)
	}
	return out, nil
}

// MeasureTakeover is how long after a member of a group stops (as a process that died: no
// leave, no more syncs) the other member of the group owns all of a topic's p partitions,
// with the given lease, on target over client.
func MeasureTakeover(ctx context.Context, client redis.UniversalClient, prefix string, t Target, p int, lease time.Duration) (time.Duration, error) {
	inner, err := t.newBackend(client, prefix)
	if err != nil {
		return 0, err
	}
	newMember := func() (*partition.Backend, error) {
		return partition.Wrap(inner, partition.NativeConfig(client, prefix, p))
	}
	dying, err := newMember()
	if err != nil {
		return 0, err
	}
	survivor, err := newMember()
	if err != nil {
		return 0, err
	}
	const topic = "takeover"
	if err := survivor.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: topic, Group: group}); err != nil {
		return 0, err
	}
	claim := func(b *partition.Backend, consumer string) error {
		_, err := b.Claim(ctx, &backend.ClaimParams{Topic: topic, Group: group, Consumer: consumer, Count: 1, Lease: lease})
		return err
	}
	for _, m := range []struct {
		b    *partition.Backend
		name string
	}{{dying, "dying"}, {survivor, "survivor"}} {
		if err := m.b.Assign(ctx, topic, group, m.name); err != nil {
			return 0, err
		}
	}
	// Both sync until the shares settle, then the dying member stops.
	deadline := time.Now().Add(10 * time.Second)
	for len(survivor.Owned(topic, group, "survivor"))+len(dying.Owned(topic, group, "dying")) != p || len(dying.Owned(topic, group, "dying")) == 0 {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("takeover: the shares did not settle in 10s")
		}
		if err := claim(dying, "dying"); err != nil {
			return 0, err
		}
		if err := claim(survivor, "survivor"); err != nil {
			return 0, err
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = claim(dying, "dying") // its last sync
	died := time.Now()
	for len(survivor.Owned(topic, group, "survivor")) < p {
		if time.Since(died) > 10*lease {
			return 0, fmt.Errorf("takeover: not done after %v", 10*lease)
		}
		if err := claim(survivor, "survivor"); err != nil {
			return 0, err
		}
		time.Sleep(time.Millisecond)
	}
	took := time.Since(died)
	_ = dying.Unassign(ctx, topic, group, "dying") // its bell, as a dead process's goes with it
	_ = survivor.Unassign(ctx, topic, group, "survivor")
	if a, ok := backend.Backend(survivor).(backend.Admin); ok {
		_ = a.DeleteTopic(ctx, topic)
	}
	return took, nil
}
