package partition

import (
	"sync"

	"github.com/relq/relq/backend"
)

// A relq adapter tells this package how it names a topic's keys (its hash tag and meta key),
// so that its backends can be seen through partitioned topics without their users repeating
// the adapter's key format.

var natives struct {
	mu  sync.RWMutex
	fns []func(b any) (Config, bool)
}

// Register adds an adapter's key format: f returns the Config of a backend of the adapter's own
// type (Partitions left nil). Adapters call it from init.
func Register(f func(b any) (Config, bool)) {
	natives.mu.Lock()
	defer natives.mu.Unlock()
	natives.fns = append(natives.fns, f)
}

// ConfigOf returns the Config of be, a relq adapter's backend, with every topic's count taken
// from Redis; false for a backend of no relq adapter.
func ConfigOf(be any) (Config, bool) {
	natives.mu.RLock()
	defer natives.mu.RUnlock()
	for _, f := range natives.fns {
		if cfg, ok := f(be); ok {
			cfg.Partitions = recordedCount
			return cfg, true
		}
	}
	return Config{}, false
}

// recordedCount leaves every topic's count to the record in Redis.
func recordedCount(string) int { return 0 }

// Auto returns be seen through partitioned topics, each with the count recorded when it was
// created: a topic without a record is be's own, reached as it is. It returns be itself when
// be is already partitioned or is no relq adapter's backend (other adapters know nothing of
// partitions).
func Auto(be backend.Backend) backend.Backend {
	if _, ok := be.(*Backend); ok {
		return be
	}
	cfg, ok := ConfigOf(be)
	if !ok {
		return be
	}
	b, err := Wrap(be, cfg)
	if err != nil {
		return be
	}
	return b
}

// Inner returns the backend a partitioned one wraps, be itself for any other.
func Inner(be backend.Backend) backend.Backend {
	if b, ok := be.(*Backend); ok {
		return b.inner
	}
	return be
}
