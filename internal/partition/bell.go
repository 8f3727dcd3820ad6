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

type bells struct {
	client redis.UniversalClient
	mu     sync.Mutex
	m      map[string]*bell
}

// bell is one topic's channel in this process.
type bell struct {
	tag  string
	refs int
	ps   *redis.PubSub

	mu   sync.Mutex
	rung chan struct{} // closed at the next ring, then replaced
	// shuffles counts the rebalance rings heard: a member that joined, or left, asks the
	// others to sync their shares at once rather than at their next period.
	shuffles uint64
	dues     []time.Time // sorted: when to ring again
	timer    *time.Timer // fires at dues[0]
}

// Bell messages: messages were stored; the group's members changed; messages fall due after
// the milliseconds that follow the prefix.
const (
	ringStored  = ""
	ringShuffle = "s"
	ringDue     = "d"
)

// maxDues bounds the due times a bell keeps for later: past it, the latest are dropped and
// their sleepers wake at their Block.
const maxDues = 256

// acquire returns the bell of tag, subscribing to it at its first user. A bell that could not
// subscribe is returned all the same: its sleepers wake at their Block.
func (bs *bells) acquire(ctx context.Context, tag string) *bell {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if b, ok := bs.m[tag]; ok {
		b.refs++
		return b
	}
	b := &bell{tag: tag, refs: 1, rung: make(chan struct{})}
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

// ring tells the topic's sleeping consumers, in every process, that messages were stored:
// ready now when now is set, and due after due when it is positive (the earliest delay).
func (bs *bells) ring(ctx context.Context, tag string, now bool, due time.Duration) {
	ch := bellChannel(tag)
	switch {
	case now && due > 0:
		_, _ = bs.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.SPublish(ctx, ch, ringStored)
			p.SPublish(ctx, ch, ringDue+strconv.FormatInt(due.Milliseconds(), 10))
			return nil
		})
	case now:
		_ = bs.client.SPublish(ctx, ch, ringStored).Err()
	case due > 0:
		_ = bs.client.SPublish(ctx, ch, ringDue+strconv.FormatInt(due.Milliseconds(), 10)).Err()
	}
}

// shuffle tells the topic's members, in every process, to sync their shares now.
func (bs *bells) shuffle(ctx context.Context, tag string) {
	_ = bs.client.SPublish(ctx, bellChannel(tag), ringShuffle).Err()
}

func (b *bell) listen(c <-chan *redis.Message) {
	for msg := range c {
		b.mu.Lock()
		switch {
		case msg.Payload == ringShuffle:
			b.shuffles++
		case strings.HasPrefix(msg.Payload, ringDue):
			if ms, err := strconv.ParseInt(msg.Payload[len(ringDue):], 10, 64); err == nil && ms > 0 {
				b.later(time.Now().Add(time.Duration(ms) * time.Millisecond))
				b.mu.Unlock()
				continue
			}
		}
		b.wake()
		b.mu.Unlock()
	}
}

// wake wakes the bell's sleepers. b.mu is held.
func (b *bell) wake() {
	close(b.rung)
	b.rung = make(chan struct{})
}

// later rings the bell again at at. b.mu is held.
func (b *bell) later(at time.Time) {
	i, _ := slices.BinarySearchFunc(b.dues, at, time.Time.Compare)
	if i == maxDues {
		return
	}
	b.dues = slices.Insert(b.dues, i, at)
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
		b.timer = time.AfterFunc(time.Until(b.dues[0]), b.fire)
	}
}

// fire rings for the due times that passed and arms the timer for the next.
func (b *bell) fire() {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	n := 0
	for n < len(b.dues) && !b.dues[n].After(now) {
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

// next returns a channel closed at the next ring.
func (b *bell) next() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rung
}
