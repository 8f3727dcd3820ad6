package partition

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/keys"
)

// Ordered claims (ClaimParams.Ordered) hand out the messages of a partition one at a time: a
// consumer claims from a partition only while it holds the partition's order lock, a key in
// the partition's own slot, and only once the delivery it took from it before is settled in
// Redis. Since the backends put a retry, a release and a reclaimed lease back in their place
// (before the messages published after them), every message of a partition is handled after
// the one before it was acked, dead-lettered, or failed for the last time; the messages of one
// key, which share a partition, are handled in publish order.
//
//   - The lock lasts the consumer's lease plus lockMargin, renewed by its claims and lease
//     extensions. It outlives the lease of the delivery it covers, which is taken after it.
//   - A nack with a delay keeps its place in the partition and turns the lock into a gate for
//     that delay: nobody claims from the partition until the retry is due.
//   - A consumer that takes a lock it did not hold (a new share, a takeover) claims nothing
//     while the group still has a delivery of the partition pending: the one before may still
//     be in a handler, or waiting for its lease to expire and be reclaimed.
//   - A partition that leaves a consumer's share keeps its lock until its delivery is settled,
//     then the lock goes at once and the partition's new owner is rung.

// lockMargin is how much longer an order lock lasts than the lease it covers.
const lockMargin = 250 * time.Millisecond

// orderLockKey is the order lock of group on a partition whose keys carry tag.
func orderLockKey(tag, group string) string { return keys.Join(tag, "order", group) }

// take takes or renews an order lock. KEYS[1] the lock; ARGV[1] the consumer; ARGV[2] the
// lock's time to live in ms. Returns 1 when it took a free lock, 2 when the consumer held it
// already (renewed), 0 when another holds it or it is a nack's gate ("").
var take = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 2
end
if v then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`)

// hand changes an order lock the consumer holds. KEYS[1] the lock; ARGV[1] the consumer;
// ARGV[2] "renew", "gate" or "drop"; ARGV[3] ms: the lock's new time to live (renew), or the
// gate's (gate). Returns 1 when the consumer held the lock, 0 when not (nothing changed).
var hand = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == 'renew' then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
elseif ARGV[2] == 'gate' then
  redis.call('SET', KEYS[1], '', 'PX', ARGV[3])
else
  redis.call('DEL', KEYS[1])
end
return 1
`)

// ordered is what one consumer holds of a topic's order locks.
type ordered struct {
	mu   sync.Mutex
	held map[int]bool // partitions whose lock it holds
	// inflight maps a partition to the inner ID of the delivery the consumer took from it and
	// has not settled, or to claiming while a claim from it is under way (its lock must not
	// be let go meanwhile).
	inflight map[int]string
	used     time.Time     // its last claim
	lease    time.Duration // the lease of its last claim
	// bell is held for a consumer of a topic of one partition, which is no member and would
	// otherwise subscribe at every claim; released with the state (unassignOrdered).
	bell *bell
}

// claiming marks a partition whose claim is under way; no delivery ID is empty.
const claiming = ""

// idle reports an ordered state not used for three leases (a consumer that stopped without
// Unassign: a tool, a process whose subscription ended abnormally).
func (o *ordered) idle(now time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lease > 0 && now.Sub(o.used) > 3*o.lease && len(o.inflight) == 0
}

type orders struct {
	mu sync.Mutex
	m  map[memberKey]*ordered
}

// ordered returns k's order state; nil when it never claimed in order and create is false.
func (b *Backend) ordered(k memberKey, create bool) *ordered {
	b.orders.mu.Lock()
	defer b.orders.mu.Unlock()
	o := b.orders.m[k]
	if o == nil && create {
		if b.orders.m == nil {
			b.orders.m = map[memberKey]*ordered{}
		}
		o = &ordered{held: map[int]bool{}, inflight: map[int]string{}}
		b.orders.m[k] = o
	}
	return o
}

// lockKey is the order lock of group on partition i of t.
func (b *Backend) lockKey(t *topic, i int, group string) string {
	return orderLockKey(b.cfg.Tag(t.layout.Name(i)), group)
}

// begin marks a claim from partition i under way, unless the consumer has one of i in flight
// or under way already (then it reports false).
func (o *ordered) begin(i int, lease time.Duration) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, busy := o.inflight[i]; busy {
		return false
	}
	o.inflight[i] = claiming
	o.used, o.lease = time.Now(), lease
	return true
}

// end ends a claim from partition i: with the delivery it took in flight, or none.
func (o *ordered) end(i int, id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if id == "" {
		delete(o.inflight, i)
		return
	}
	o.inflight[i] = id
}

// claimOrdered claims at most one message from partition i for an ordered consumer: nothing
// when it has one of i in flight, when another consumer holds i's lock or i is gated, or, for
// a lock it just took, while the group has a delivery of i pending. With the lock, the inner
// claim waits up to block; waited reports that it did.
func (b *Backend) claimOrdered(ctx context.Context, t *topic, i int, p *backend.ClaimParams, block time.Duration) (ds []backend.Delivery, waited bool, err error) {
	o := b.ordered(memberKey{p.Topic, p.Group, p.Consumer}, true)
	if !o.begin(i, p.Lease) {
		return nil, false, nil
	}
	var took string
	defer func() { o.end(i, took) }()
	lock := b.lockKey(t, i, p.Group)
	got, err := take.Run(ctx, b.cfg.Client, []string{lock}, p.Consumer, (p.Lease + lockMargin + block).Milliseconds()).Int()
	if err != nil {
		return nil, false, err
	}
	o.mu.Lock()
	o.held[i] = got > 0
	o.mu.Unlock()
	if got == 0 {
		return nil, false, nil
	}
	if got == 1 {
		s, err := b.inner.Stats(ctx, &backend.StatsParams{Topic: t.layout.Name(i), Group: p.Group})
		if err != nil || s.Pending > 0 {
			// The delivery before is still out: claimed again once it is settled or reclaimed.
			b.dropLock(ctx, o, lock, i, p.Consumer)
			return nil, false, err
		}
	}
	ds, err = b.inner.Claim(ctx, &backend.ClaimParams{Topic: t.layout.Name(i), Group: p.Group, Consumer: p.Consumer, Count: 1, Lease: p.Lease, Block: block})
	if err != nil {
		// The claim may have taken a message whose reply was lost: the next take must find
		// the lock free and wait for that message's lease, as a takeover does.
		b.dropLock(ctx, o, lock, i, p.Consumer)
		return nil, false, err
	}
	if len(ds) > 0 {
		took = ds[0].ID
	}
	return ds, block > 0, nil
}

// dropLock lets go of a lock the consumer holds.
func (b *Backend) dropLock(ctx context.Context, o *ordered, lock string, i int, consumer string) {
	o.mu.Lock()
	o.held[i] = false
	o.mu.Unlock()
	_ = hand.Run(ctx, b.cfg.Client, []string{lock}, consumer, "drop", 0).Err() // expires if lost
}

// releaseLeft drops the locks of partitions that left the consumer's share and hold nothing
// in flight, ringing them for their new owner.
func (b *Backend) releaseLeft(ctx context.Context, t *topic, k memberKey, owned []int) {
	o := b.ordered(k, false)
	if o == nil {
		return
	}
	o.mu.Lock()
	var left []int
	for i, h := range o.held {
		if _, busy := o.inflight[i]; h && !busy && !slices.Contains(owned, i) {
			left = append(left, i)
		}
	}
	o.mu.Unlock()
	for _, i := range left {
		b.dropLock(ctx, o, b.lockKey(t, i, k.group), i, k.consumer)
	}
	if len(left) > 0 {
		slices.Sort(left)
		b.bells.ring(ctx, b.cfg.Tag(k.topic), left, true, 0)
	}
}

// settledOrdered records that the deliveries settled (acked, nacked or lost) free their
// partitions: the consumer's next claim may take from them, at once (the local bell rings),
// and a partition that left its share is handed on. A nack's gate, already set, stays.
func (b *Backend) settledOrdered(ctx context.Context, t *topic, k memberKey, settled map[int][]string) {
	o := b.ordered(k, false)
	if o == nil || len(settled) == 0 {
		return
	}
	var freed []int
	o.mu.Lock()
	for i, ids := range settled {
		if id := o.inflight[i]; id != claiming && slices.Contains(ids, id) {
			delete(o.inflight, i)
			freed = append(freed, i)
		}
	}
	o.mu.Unlock()
	if len(freed) == 0 {
		return
	}
	slices.Sort(freed)
	b.bells.local(b.cfg.Tag(k.topic), freed)
	if m := b.lookup(k); m != nil {
		m.mu.Lock()
		owned := slices.Clone(m.owned)
		m.mu.Unlock()
		b.releaseLeft(ctx, t, k, owned)
	}
}

// inflightOf returns the ordered delivery of partition i that the consumer holds, "" for none.
func (b *Backend) inflightOf(k memberKey, i int) string {
	o := b.ordered(k, false)
	if o == nil {
		return ""
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.inflight[i] // claiming is ""
}

// gate turns the consumer's lock of partition i into a gate for d: its retry, back in its
// place, is claimed by nobody before then. The bell rings when it is due.
func (b *Backend) gate(ctx context.Context, t *topic, k memberKey, i int, d time.Duration) error {
	o := b.ordered(k, false)
	if o == nil {
		return nil
	}
	o.mu.Lock()
	o.held[i] = false
	o.mu.Unlock()
	err := hand.Run(ctx, b.cfg.Client, []string{b.lockKey(t, i, k.group)}, k.consumer, "gate", max(d.Milliseconds(), 1)).Err()
	b.bells.ring(ctx, b.cfg.Tag(k.topic), []int{i}, false, d)
	return err
}

// renewOrdered renews the locks of the partitions whose ordered deliveries the consumer holds,
// before their leases are extended, and returns the IDs (inner, by partition) whose lock it
// lost: another consumer may have their partitions now, so they are lost too.
func (b *Backend) renewOrdered(ctx context.Context, t *topic, k memberKey, parts map[int][]backend.Held, lease time.Duration) (map[int][]string, error) {
	o := b.ordered(k, false)
	if o == nil {
		return nil, nil
	}
	var lost map[int][]string
	for i, items := range parts {
		id := b.inflightOf(k, i)
		if id == "" || !slices.ContainsFunc(items, func(h backend.Held) bool { return h.ID == id }) {
			continue
		}
		ok, err := hand.Run(ctx, b.cfg.Client, []string{b.lockKey(t, i, k.group)}, k.consumer, "renew", (lease + lockMargin).Milliseconds()).Int()
		if err != nil {
			return lost, err
		}
		if ok == 0 {
			if lost == nil {
				lost = map[int][]string{}
			}
			lost[i] = append(lost[i], id)
		}
	}
	return lost, nil
}

// unassignOrdered drops every lock the consumer holds of the topic, once it settled what it
// held, and rings their partitions for their next owner.
func (b *Backend) unassignOrdered(ctx context.Context, t *topic, k memberKey) error {
	b.orders.mu.Lock()
	o := b.orders.m[k]
	delete(b.orders.m, k)
	b.orders.mu.Unlock()
	if o == nil {
		return nil
	}
	o.mu.Lock()
	var held []int
	for i, h := range o.held {
		if h {
			held = append(held, i)
		}
	}
	bell := o.bell
	o.bell = nil
	o.mu.Unlock()
	if bell != nil {
		b.bells.release(bell)
	}
	var errs []error
	for _, i := range held {
		errs = append(errs, hand.Run(ctx, b.cfg.Client, []string{b.lockKey(t, i, k.group)}, k.consumer, "drop", 0).Err())
	}
	if len(held) > 0 {
		slices.Sort(held)
		b.bells.ring(ctx, b.cfg.Tag(k.topic), held, true, 0)
	}
	return errors.Join(errs...)
}

// forgetOrdered drops k's order state without touching Redis (its locks expire), when its
// topic cannot be read to name them.
func (b *Backend) forgetOrdered(k memberKey) {
	b.orders.mu.Lock()
	o := b.orders.m[k]
	delete(b.orders.m, k)
	b.orders.mu.Unlock()
	if o != nil && o.bell != nil {
		b.bells.release(o.bell)
	}
}

// sweepOrdered drops the order states not used for three leases, but k's.
func (b *Backend) sweepOrdered(now time.Time, k memberKey) {
	b.orders.mu.Lock()
	var idle []memberKey
	for key, o := range b.orders.m {
		if key != k && o.idle(now) {
			idle = append(idle, key)
		}
	}
	b.orders.mu.Unlock()
	for _, key := range idle {
		b.forgetOrdered(key)
	}
}

// singleBell is the bell an ordered consumer of a topic of one partition sleeps on, acquired
// at its first claim and kept until Unassign.
func (b *Backend) singleBell(ctx context.Context, k memberKey) *bell {
	o := b.ordered(k, true)
	o.mu.Lock()
	bl := o.bell
	o.mu.Unlock()
	if bl != nil {
		return bl
	}
	bl = b.bells.acquire(ctx, b.cfg.Tag(k.topic))
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.bell != nil {
		b.bells.release(bl)
		return o.bell
	}
	o.bell = bl
	return bl
}
