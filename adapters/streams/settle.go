package streams

import (
	"context"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

// Ack runs ack.lua: XACK of every pending item, from any holder. Items not pending, or pending
// under another consumer or attempt, count as stale. With DeleteOnAck, entries that every
// group has acknowledged are deleted in the same script.
func (b *Backend) Ack(ctx context.Context, p *backend.AckParams) (backend.AckResult, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
		return backend.AckResult{}, err
	}
	k := b.groupKeys(p.Topic, p.Group)
	return backendkit.Ack(ctx, b.client, ackScript, k.ackKeys(), []any{p.Group, p.Consumer, b.deleteOnAck()}, p.Items)
}

// queueAck queues Ack's call on pipe (see backendkit.QueueAck): a partitioned topic acks its
// partitions on one primary in one round trip.
func (b *Backend) queueAck(ctx context.Context, pipe redis.Pipeliner, p *backend.AckParams) (func() (backend.AckResult, bool, error), bool) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
		return func() (backend.AckResult, bool, error) { return backend.AckResult{}, false, err }, true
	}
	k := b.groupKeys(p.Topic, p.Group)
	return backendkit.QueueAck(ctx, pipe, ackScript, k.ackKeys(), []any{p.Group, p.Consumer, b.deleteOnAck()}, p.Items), true
}

// Nack runs nack.lua. Fenced on (consumer, attempt), read from the PEL. A retry keeps the
// entry in the PEL under the parking consumer, due after its delay; a release does too, due
// at once and with its attempt taken back; an item marked DeadLetter or at p.MaxDeliveries
// moves to the group's dead-letter stream, atomically with its XACK.
func (b *Backend) Nack(ctx context.Context, p *backend.NackParams) (backend.NackResult, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
		return backend.NackResult{}, err
	}
	k := b.groupKeys(p.Topic, p.Group)
	return backendkit.Nack(ctx, b.client, nackScript, k.nackKeys(),
		[]any{p.Group, p.Consumer, ParkedConsumer, max(p.MaxDeliveries, 0), p.Topic}, p.Items)
}

// Extend runs extend.lua: the held items' PEL idle time is reset (XCLAIM to the holder,
// JUSTID), and p.Lease becomes the consumer's lease. The IDs the consumer no longer holds are
// returned.
func (b *Backend) Extend(ctx context.Context, p *backend.ExtendParams) ([]string, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
		return nil, err
	}
	k := b.groupKeys(p.Topic, p.Group)
	return backendkit.Extend(ctx, b.client, extendScript, k.extendKeys(), []any{p.Group, p.Consumer}, p.Lease, p.Items)
}

// Reclaim runs reclaim.lua: the entries whose PEL idle time reached their holder's lease (the
// one its last Claim or Extend gave; p.OrphanLease for a consumer relq never recorded, such as
// a watermill-redisstream subscriber of the same group, backend.LeaseDefault if zero) are
// parked for a retry due at once, without counting an attempt, or dead-lettered at
// p.MaxDeliveries. At most p.Count are handled (Options.BatchSize if zero). It also deletes
// consumers that hold nothing and have not claimed for Options.ConsumerIdleTimeout (their
// lease by default): the consumers of ended subscriptions.
//
// What a call reads is bounded whatever the number of consumers the group has had: it never
// lists them. Claims keep two indexes per group (see reclaim.lua): the consumers that may
// hold entries, by when their earliest lease may expire, and the consumers relq made, by when
// they count as quiet. A call reads the due holders, at most reclaimStep of them and
// max(reclaimWindow, p.Count) entries in all, each one's entries in ID order from where its
// last walk stopped; reclaimWindow entries of a walk of the group's whole PEL, which finds
// holders of other programs; and at most reclaimStep quiet consumers, deleting those that
// hold nothing (never one with a pending entry: XGROUP DELCONSUMER would drop it).
//
// NextExpiry is when the earliest lease a holder may hold expires; 1ms when the call stopped
// at one of its bounds, or found expired entries in a walk it did not read whole (a dead
// consumer's: the rest likely holds more), so the subscriber's reclaim loop runs again at
// once; zero when no holder is left.
//
// Delayed messages need no promotion here: a due retry is claimable as it is, so Promoted and
// Orphans are always zero.
//
// Reclaim also deletes the topic's ephemeral groups whose members all expired, and finishes
// group deletes left unfinished (see DeleteGroup). On a group that is not registered it
// writes nothing and returns zeros.
func (b *Backend) Reclaim(ctx context.Context, p *backend.ReclaimParams) (backend.ReclaimResult, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return backend.ReclaimResult{}, err
	}
	orphanLease := p.OrphanLease
	if orphanLease <= 0 {
		orphanLease = backend.LeaseDefault
	}
	count := p.Count
	if count <= 0 {
		count = b.opts.BatchSize
	}
	k := b.groupKeys(p.Topic, p.Group)
	reply, err := reclaimScript.Run(ctx, b.client, k.reclaimKeys(),
		p.Group, ParkedConsumer, max(p.MaxDeliveries, 0), backendkit.Millis(orphanLease), count, p.Topic,
		b.opts.quietMs(), reclaimWindow, reclaimStep).Slice()
	if err != nil {
		return backend.ReclaimResult{}, err
	}
	b.tidy(ctx, p.Topic, slices.DeleteFunc(toStrings(reply[5:7]), func(g string) bool { return g == "" }))
	n, _ := backendkit.Ints(reply[:5], nil)
	res := backend.ReclaimResult{Reclaimed: int(n[0]), DeadLettered: int(n[1]), Removed: int(n[2])}
	switch {
	case n[4] == 1:
		res.NextExpiry = time.Millisecond
	case n[3] > 0:
		res.NextExpiry = time.Duration(n[3]) * time.Millisecond
	}
	return res, nil
}

// reclaimWindow is the least number of PEL entries a Reclaim reads of the holders that are
// due (a subscriber holds Concurrency + Prefetch), and how many of the group's whole PEL it
// walks to find holders no claim of relq's indexed.
const reclaimWindow = 100

// reclaimStep is the most consumers a Reclaim looks at in each of its indexes: holders that
// are due, and quiet consumers to delete.
const reclaimStep = 50
