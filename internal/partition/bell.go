package partition

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/internal/keys"
)

// A consumer that owns several partitions cannot block on all of them with one command, so an
// idle one sleeps on its topic's bell: a sharded Pub/Sub channel on the topic's own slot that
// every publish to the topic rings once it stored its messages. A process subscribes to the
// bell once per topic whatever its consumers and partitions (one connection), and wakes its
// sleeping consumers of the topic at each ring. A ring lost to a broken connection costs a
// sleeper at most its Block: the bell is a hint, the claims read the truth.

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
}

// Bell messages: messages were stored; the group's members changed.
const (
	ringStored  = ""
	ringShuffle = "s"
)

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
}

// ring tells the topic's sleeping consumers, in every process, that messages were stored.
func (bs *bells) ring(ctx context.Context, tag string) {
	_ = bs.client.SPublish(ctx, bellChannel(tag), ringStored).Err()
}

// shuffle tells the topic's members, in every process, to sync their shares now.
func (bs *bells) shuffle(ctx context.Context, tag string) {
	_ = bs.client.SPublish(ctx, bellChannel(tag), ringShuffle).Err()
}

func (b *bell) listen(c <-chan *redis.Message) {
	for msg := range c {
		b.mu.Lock()
		if msg.Payload == ringShuffle {
			b.shuffles++
		}
		close(b.rung)
		b.rung = make(chan struct{})
		b.mu.Unlock()
	}
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
