package adaptertest

import (
	"time"

	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

// Publish publishes a message of each payload (see Envelope) to topic and returns the IDs.
func (e *Env) Publish(topic string, payloads ...string) []string {
	e.T.Helper()
	return e.PublishDelayed(topic, 0, payloads...)
}

// PublishDelayed publishes a message of each payload, delayed by delay, and returns the IDs.
func (e *Env) PublishDelayed(topic string, delay time.Duration, payloads ...string) []string {
	e.T.Helper()
	return e.PublishWith(topic, delay, 0, payloads...)
}

// PublishWith publishes a message of each payload, delayed by delay and of priority, and
// returns the IDs.
func (e *Env) PublishWith(topic string, delay time.Duration, priority int, payloads ...string) []string {
	e.T.Helper()
	msgs := make([]backend.OutMessage, len(payloads))
	for i, p := range payloads {
		msgs[i] = backend.OutMessage{Envelope: Envelope(p), Delay: delay, Priority: priority}
	}
	idsRes, err := e.B.Publish(e.Ctx, &backend.PublishParams{Topic: topic, Messages: msgs})
	ids := idsRes.IDs
	require.NoError(e.T, err)
	require.Len(e.T, ids, len(payloads))
	return ids
}

// EnsureGroup registers group on topic, receiving what is published from now on.
func (e *Env) EnsureGroup(topic, group string) {
	e.T.Helper()
	require.NoError(e.T, e.B.EnsureGroup(e.Ctx, &backend.EnsureGroupParams{Topic: topic, Group: group}))
}

// EnsureGroupFromOldest registers group on topic, from the oldest message a backend keeps.
func (e *Env) EnsureGroupFromOldest(topic, group string) {
	e.T.Helper()
	require.NoError(e.T, e.B.EnsureGroup(e.Ctx, &backend.EnsureGroupParams{Topic: topic, Group: group, FromOldest: true}))
}

// Claim claims up to n deliveries without blocking, under a lease of a minute.
func (e *Env) Claim(topic, group, consumer string, n int) []backend.Delivery {
	e.T.Helper()
	return e.ClaimLease(topic, group, consumer, n, time.Minute)
}

// ClaimLease claims up to n deliveries without blocking, under lease.
func (e *Env) ClaimLease(topic, group, consumer string, n int, lease time.Duration) []backend.Delivery {
	e.T.Helper()
	ds, err := e.B.Claim(e.Ctx, &backend.ClaimParams{Topic: topic, Group: group, Consumer: consumer, Count: n, Lease: lease})
	require.NoError(e.T, err)
	if e.RequireDecoded {
		for _, d := range ds {
			require.NoError(e.T, d.Err)
		}
	}
	return ds
}

// Ack acks ds as consumer.
func (e *Env) Ack(topic, group, consumer string, ds ...backend.Delivery) backend.AckResult {
	e.T.Helper()
	res, err := e.B.Ack(e.Ctx, &backend.AckParams{Topic: topic, Group: group, Consumer: consumer, Items: Held(ds...)})
	require.NoError(e.T, err)
	return res
}

// Extend extends the leases of ds held by consumer by a minute and returns the IDs it lost.
func (e *Env) Extend(topic, group, consumer string, ds ...backend.Delivery) []string {
	e.T.Helper()
	lost, err := e.B.Extend(e.Ctx, &backend.ExtendParams{Topic: topic, Group: group, Consumer: consumer, Items: Held(ds...), Lease: time.Minute})
	require.NoError(e.T, err)
	return lost
}

// Nack nacks items as consumer, dead-lettering at max deliveries (0: no limit).
func (e *Env) Nack(topic, group, consumer string, max int, items ...backend.NackItem) backend.NackResult {
	e.T.Helper()
	res, err := e.B.Nack(e.Ctx, &backend.NackParams{Topic: topic, Group: group, Consumer: consumer, Items: items, MaxDeliveries: max})
	require.NoError(e.T, err)
	return res
}

// Reclaim runs one Reclaim with max deliveries (0: no limit) and an orphan lease of a minute.
func (e *Env) Reclaim(topic, group string, max int) backend.ReclaimResult {
	e.T.Helper()
	return e.ReclaimLease(topic, group, max, time.Minute)
}

// ReclaimLease runs one Reclaim with max deliveries (0: no limit) and orphanLease.
func (e *Env) ReclaimLease(topic, group string, max int, orphanLease time.Duration) backend.ReclaimResult {
	e.T.Helper()
	res, err := e.B.Reclaim(e.Ctx, &backend.ReclaimParams{Topic: topic, Group: group, MaxDeliveries: max, OrphanLease: orphanLease})
	require.NoError(e.T, err)
	return res
}

// Stats returns the group's Stats.
func (e *Env) Stats(topic, group string) backend.Stats {
	e.T.Helper()
	s, err := e.B.Stats(e.Ctx, &backend.StatsParams{Topic: topic, Group: group})
	require.NoError(e.T, err)
	return s
}
