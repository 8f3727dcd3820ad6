package faults

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/partition"
	"github.com/relq/relq/pubsub"
)

// Parameters of the ordered-kill scenario: a topic of orderedPartitions partitions, and
// orderedKeys keys whose messages must be handled in publish order.
const (
	orderedPartitions = 8
	orderedKeys       = 32
	orderedBacklog    = 100 // ready messages the producer keeps at most, so that it lasts
)

// Ordered consumers are killed with SIGKILL mid-handler and restarted, as in
// TestConsumersKilled, while a producer publishes keyed messages to a partitioned topic:
// every message must be handled, and no message may start before the last handling of the one
// before it of its key ended (a killed process's message is handled again, by another, before
// anything after it).
func TestOrderedConsumersKilled(t *testing.T) {
	bin := buildWorker(t)
	server := redistest.Shared(t)
	for _, bc := range faultBackends {
		t.Run(bc.name, func(t *testing.T) {
			runOrderedConsumersKilled(t, bc, server, bin)
		})
	}
}

// orderedUUID names the seq-th message of key k: the logs then say which message of which key
// each handling was.
func orderedUUID(k, seq int) string { return fmt.Sprintf("k%02d.%06d", k, seq) }

func parseOrderedUUID(uuid string) (key string, seq int, ok bool) {
	key, n, found := strings.Cut(uuid, ".")
	seq, err := strconv.Atoi(n)
	return key, seq, found && err == nil
}

func runOrderedConsumersKilled(t *testing.T, bc backendCase, server *redistest.Server, bin string) {
	n := scale(1000, 30000)
	const batch = 64
	prefix := redistest.Prefix(t)
	topic := faultTopic()
	b, _ := newFaultBackend(t, bc, server.Client(t), prefix)
	require.NoError(t, partition.Create(context.Background(), b, topic, orderedPartitions))
	pub, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{
		Key: func(_ string, m *message.Message) string { k, _, _ := parseOrderedUUID(m.UUID); return k },
	}, faultLogger)
	require.NoError(t, err)
	seen := partition.Open(b)

	fleet := newFleet(t, bin, []string{
		"-redis", server.URL(), "-backend", bc.name, "-prefix", prefix, "-topic", topic,
		"-lease", killLease.String(), "-concurrency", strconv.Itoa(killConcurrency), "-ordered", "-v",
	})
	for slot := range killWorkers {
		require.NoError(t, fleet.start(slot))
	}
	defer fleet.shutdown()

	published := make([]string, 0, n)
	next := make([]int, orderedKeys)
	fleet.startKilling()
	for len(published) < n {
		msgs := make([]*message.Message, 0, batch)
		for range min(batch, n-len(published)) {
			k := len(published) % orderedKeys
			m := message.NewMessage(orderedUUID(k, next[k]), nil)
			next[k]++
			msgs = append(msgs, m)
			published = append(published, m.UUID)
		}
		require.NoError(t, pub.Publish(topic, msgs...))
		waitBacklogBelow(t, seen, topic, orderedBacklog)
	}
	// A fast machine may drain a short run after a few kills: ten at least land, on workers
	// that hold partitions, their locks and what is left.
	pollUntil(10*time.Second, func() bool { return len(fleet.kills()) >= 10 })
	fleet.awaitAllHandled(t, published)
	st := waitSettled(t, seen, topic)
	require.Zero(t, st.Dead, "dead letters: %+v", st)
	fleet.shutdown()
	require.NoError(t, fleet.err(), "a worker failed to stop on SIGTERM")
	logs, err := fleet.readLogs()
	require.NoError(t, err)

	broken := logs.outOfOrder()
	require.Empty(t, broken, "%d handlings started before the one before them of their key ended", len(broken))
	kills := fleet.kills()
	require.NotEmpty(t, kills, "the driver killed no consumer")
	dups := logs.handled.duplicates()
	t.Logf("%s: %d published over %d keys and %d partitions, %d kills, %d duplicates, 0 out of order",
		bc.name, n, orderedKeys, orderedPartitions, len(kills), dups)
	record(row{
		Scenario: "13 ordered consumers killed", Backend: bc.name, Published: n,
		Handled: logs.handled.distinct(), Duplicates: dups, Lost: len(logs.handled.missing(published)),
		Note: fmt.Sprintf("%d SIGKILLs, lease %v, %d keys over %d partitions: 0 handlings out of order per key",
			len(kills), killLease, orderedKeys, orderedPartitions),
	})
}

// outOfOrder lists the handlings that started before the last handling of the message before
// theirs of their key had ended.
func (l *workerLogs) outOfOrder() []string {
	lastDone := map[string]time.Time{}
	for uuid, ds := range l.dones {
		for _, d := range ds {
			if d.at.After(lastDone[uuid]) {
				lastDone[uuid] = d.at
			}
		}
	}
	var out []string
	for _, starts := range l.starts {
		for _, h := range starts {
			key, seq, ok := parseOrderedUUID(h.uuid)
			if !ok || seq == 0 {
				continue
			}
			before := key + "." + fmt.Sprintf("%06d", seq-1)
			if done, ok := lastDone[before]; !ok || !h.at.After(done) {
				out = append(out, fmt.Sprintf("%s started in %s at %s, %s last ended at %s",
					h.uuid, h.proc, h.at.Format(time.StampMicro), before, done.Format(time.StampMicro)))
			}
		}
	}
	return out
}
