package partition

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/internal/keys"
)

// A consumer that owns several partitions cannot block on all of them with one command, so an
// idle one sleeps on its topic's bell: a sharded Pub/Sub channel on the topic's own slot that
// every publish to the topic rings once it stored its messages. A process subscribes to the
// bell once per topic whatever its consumers and partitions (one connection), and wakes its
// sleeping consumers of the topic at each ring. A ring lost to a broken connection costs a
// sleeper at most its Block: the bell is a hint, the claims read the truth.

// A message stored with a delay (a delayed publish, a nack's backoff) rings the bell with its
// delay ("d<ms>"): each listener rings its sleepers again when that delay has passed, so that
// an idle consumer claims the message when it falls due, not at the end of its Block.

// bellChannel is the sharded channel of the topic whose keys carry tag.
func bellChannel(tag string) string { return keys.Join(tag, "bell") }

// Bell messages: messages were stored in the partitions listed ("p3,7"; none listed: any);
// the group's members changed; messages fall due after the milliseconds that follow the
// prefix, in the partitions listed after a colon ("d1500:3").
const (
	ringStored  = "p"
	ringShuffle = "s"
	ringDue     = "d"
)

// maxDues bounds the due times a bell keeps for later: past it, the latest are dropped and
// their sleepers wake at their Block.
const maxDues = 256

type bells struct {
	client redis.UniversalClient
	mu     sync.Mutex
	m      map[string]*bell
	// qmu guards the rings waiting for the sender (apart from mu, which acquire holds while
	// it subscribes: a publish never waits on that).
	qmu     sync.Mutex
	queue   []ringMsg
	sending bool // a sender runs
}

// bell is one topic's channel in this process. Besides waking sleepers it counts, for each
// partition, the rings that named it (and every ring that named none), so that a consumer asks
// only the partitions that were rung since it last found them drained.
type bell struct {
	tag  string
	refs int
	ps   *redis.PubSub

	mu   sync.Mutex
	rung chan struct{} // closed at the next ring, then replaced
	// shuffles counts the rebalance rings heard: a member that joined, or left, asks the
	// others to sync their shares at once rather than at their next period.
	shuffles uint64
	anyRings uint64         // rings that named no partition
	rings    map[int]uint64 // rings that named the partition
	dues     []due          // sorted: when to ring again
	timer    *time.Timer    // fires at dues[0]
}

// due is a ring to come: at at, for the partitions parts (nil: any).
type due struct {
	at    time.Time
	parts []int
}

// acquire returns the bell of tag, subscribing to it at its first user. A bell that could not
// subscribe is returned all the same: its sleepers wake at their Block.
func (bs *bells) acquire(ctx context.Context, tag string) *bell {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if b, ok := bs.m[tag]; ok {
		b.refs++
		return b
	}
	b := &bell{tag: tag, refs: 1, rung: make(chan struct{}), rings: map[int]uint64{}}
	ps := bs.client.SSubscribe(ctx, bellChannel(tag))
	// The subscription is confirmed before the first claim round, so no ring after that
	// round began can be missed.
	if _, err := ps.Receive(ctx); err == nil {
		b.ps = ps
		go b.listen(ps.Channel())
	} else {
		_ = ps.Close()
	}
	if bs.m == nil {
		bs.m = map[string]*bell{}
	}
	bs.m[tag] = b
	return b
}

// release drops one user of b, and its subscription with the last.
func (bs *bells) release(b *bell) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if b.refs--; b.refs > 0 {
		return
	}
	delete(bs.m, b.tag)
	if b.ps != nil {
		_ = b.ps.Close()
	}
	b.mu.Lock()
	b.dues = nil
	b.arm()
	b.mu.Unlock()
}

// ring tells the topic's sleeping consumers, in every process, that messages were stored in
// parts: ready now when now is set, and due after due when it is positive (the earliest
// delay). Empty parts names no partition: any may hold them. It does not wait: the bell lives
// on the topic's own slot, whose primary may not answer while the partitions' do, and a ring
// is a hint. Rings queue for one sender per process, which drops them past ringQueue.
func (bs *bells) ring(ctx context.Context, tag string, parts []int, now bool, due time.Duration) {
	ch := bellChannel(tag)
	list := formatParts(parts)
	if now {
		bs.send(ch, ringStored+list)
	}
	if due > 0 {
		bs.send(ch, ringDue+strconv.FormatInt(due.Milliseconds(), 10)+":"+list)
	}
}

// ringQueue bounds the rings waiting for the sender.
const ringQueue = 1024

// ringTimeout bounds one send of the rings waiting.
const ringTimeout = 2 * time.Second

type ringMsg struct{ channel, payload string }

// send queues a ring, starting the sender when none runs; the sender sends what waits, in one
// pipeline per round, and ends when nothing is left.
func (bs *bells) send(channel, payload string) {
	bs.qmu.Lock()
	defer bs.qmu.Unlock()
	if len(bs.queue) >= ringQueue {
		return
	}
	bs.queue = append(bs.queue, ringMsg{channel, payload})
	if bs.sending {
		return
	}
	bs.sending = true
	go bs.sender()
}

func (bs *bells) sender() {
	for {
		bs.qmu.Lock()
		batch := bs.queue
		bs.queue = nil
		if len(batch) == 0 {
			bs.sending = false
			bs.qmu.Unlock()
			return
		}
		bs.qmu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), ringTimeout)
		_, _ = bs.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, r := range batch {
				p.SPublish(ctx, r.channel, r.payload)
			}
			return nil
		})
		cancel()
	}
}

// shuffle tells the topic's members, in every process, to sync their shares now.
func (bs *bells) shuffle(_ context.Context, tag string) {
	bs.send(bellChannel(tag), ringShuffle)
}

func formatParts(parts []int) string {
	var sb strings.Builder
	for k, i := range parts {
		if k > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.Itoa(i))
	}
	return sb.String()
}

// parseParts reads a partition list; nil (any) when empty or not understood.
func parseParts(s string) []int {
	if s == "" {
		return nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		i, err := strconv.Atoi(f)
		if err != nil || i < 0 || i >= MaxCount {
			return nil
		}
		out = append(out, i)
	}
	return out
}

func (b *bell) listen(c <-chan *redis.Message) {
	for msg := range c {
		b.heard(msg.Payload)
	}
}

// heard acts on one bell message.
func (b *bell) heard(payload string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case payload == ringShuffle:
		b.shuffles++
	case strings.HasPrefix(payload, ringDue):
		ms, list, _ := strings.Cut(payload[len(ringDue):], ":")
		if n, err := strconv.ParseInt(ms, 10, 64); err == nil && n > 0 {
			b.later(due{at: time.Now().Add(time.Duration(n) * time.Millisecond), parts: parseParts(list)})
			return
		}
	case strings.HasPrefix(payload, ringStored):
		b.mark(parseParts(payload[len(ringStored):]))
	default:
		b.mark(nil)
	}
	b.wake()
}

// mark counts a ring for parts (nil: any). b.mu is held.
func (b *bell) mark(parts []int) {
	if parts == nil {
		b.anyRings++
	}
	for _, i := range parts {
		b.rings[i]++
	}
}

// version is the count of rings that may concern partition i: a consumer that drained i when
// it was v need not ask i again while it still is.
func (b *bell) version(i int) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.anyRings + b.rings[i]
}

// next returns a channel closed at the next ring.
func (b *bell) next() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rung
}

// wake wakes the bell's sleepers. b.mu is held.
func (b *bell) wake() {
	close(b.rung)
	b.rung = make(chan struct{})
}

// later rings the bell again at d.at. b.mu is held.
func (b *bell) later(d due) {
	i, _ := slices.BinarySearchFunc(b.dues, d.at, func(x due, at time.Time) int { return x.at.Compare(at) })
	if i == maxDues {
		return
	}
	b.dues = slices.Insert(b.dues, i, d)
	if len(b.dues) > maxDues {
		b.dues = b.dues[:maxDues]
	}
	if i == 0 {
		b.arm()
	}
}

// arm sets the timer for the earliest due time. b.mu is held.
func (b *bell) arm() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	if len(b.dues) > 0 {
		b.timer = time.AfterFunc(time.Until(b.dues[0].at), b.fire)
	}
}

// fire rings for the due times that passed and arms the timer for the next.
func (b *bell) fire() {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	n := 0
	for n < len(b.dues) && !b.dues[n].at.After(now) {
		b.mark(b.dues[n].parts)
		n++
	}
	if n > 0 {
		b.dues = b.dues[n:]
		b.wake()
	}
	b.arm()
}

// shuffled returns the count of rebalance rings heard.
func (b *bell) shuffled() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.shuffles
}

// local rings tag's bell for parts in this process only, if it has one here: a consumer's
// own settle freed them.
func (bs *bells) local(tag string, parts []int) {
	bs.mu.Lock()
	b := bs.m[tag]
	bs.mu.Unlock()
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mark(parts)
	b.wake()
}
