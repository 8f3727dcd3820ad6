// Package seal reaches inside relq's own adapters for the project's tests and benchmarks.
// The adapters export only their constructor, their Options and the contract's methods;
// what only failures produce (a corrupt entry, an orphaned delivery, a lost body) and the
// hooks of their private connections are injected through here, so that no production type
// carries them.
package seal

import (
	"context"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Inner is what a relq adapter opens to its tests. Its fault methods are conformance.Faults'.
type Inner interface {
	// InjectCorrupt stores data, past the envelope codec, as a new message ready for group
	// on topic, as foreign or corrupt data would be.
	InjectCorrupt(ctx context.Context, topic, group string, data []byte) error
	// InjectOrphan moves the group's next ready message to pending without a lease record,
	// as a consumer that crashed between claiming and registering its lease leaves it, and
	// returns its delivery ID ("" when nothing is ready).
	InjectOrphan(ctx context.Context, topic, group string) (string, error)
	// DeleteBody deletes the stored body of message id, as a hand edit or a lost write would.
	DeleteBody(ctx context.Context, topic, id string) error
	// AddWaitHook adds a go-redis hook to the connections of blocking claims, which are not
	// the client's, so counting hooks see the claims' commands too.
	AddWaitHook(hook redis.Hook)
}

var (
	mu      sync.RWMutex
	openers []func(b any) (Inner, bool)
)

// Register adds an adapter's opener: it returns the Inner of a backend of its own type.
// Adapters call it from init.
func Register(open func(b any) (Inner, bool)) {
	mu.Lock()
	defer mu.Unlock()
	openers = append(openers, open)
}

// Open returns b's Inner. It panics when b is not a relq adapter's backend: a test bug.
func Open(b any) Inner {
	mu.RLock()
	defer mu.RUnlock()
	for _, open := range openers {
		if in, ok := open(b); ok {
			return in
		}
	}
	panic(fmt.Sprintf("seal: %T is not a backend of relq's adapters", b))
}
