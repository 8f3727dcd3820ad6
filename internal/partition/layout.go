package partition

import (
	"fmt"
	"strconv"

	"github.com/relq/relq/backend"
)

// MaxCount bounds the partitions of a topic.
const MaxCount = 1024

// TagFunc returns the hash tag a backend gives the keys of topic, braces included
// ("{relq:orders}"). Partitions are placed by it, so a layout is the same in every process
// that configures the backend alike.
type TagFunc func(topic string) string

// Layout is the partitions of one topic: the backend topic each is stored under.
type Layout struct {
	topic string
	names []string
}

// New lays out topic over p partitions for a backend whose hash tags tag builds. p must be 1
// to MaxCount. With p = 1 the one partition is the topic itself, under its own keys. It fails
// with an error matching backend.ErrInvalidConfig for a p out of range and backend.ErrInvalidName
// when a partition's name would be longer than backend.MaxNameLength.
func New(topic string, p int, tag TagFunc) (*Layout, error) {
	if p < 1 || p > MaxCount {
		return nil, fmt.Errorf("%w: topic %q: %d partitions, want 1 to %d", backend.ErrInvalidConfig, topic, p, MaxCount)
	}
	if err := backend.ValidateName("topic", topic); err != nil {
		return nil, err
	}
	l := &Layout{topic: topic, names: make([]string, p)}
	if p == 1 {
		l.names[0] = topic
		return l, nil
	}
	for i := range p {
		lo, hi := i*Slots/p, (i+1)*Slots/p
		for salt := 0; ; salt++ {
			name := topic + "|" + strconv.Itoa(i) + "|" + strconv.Itoa(salt)
			if s := Slot(tag(name)); s >= lo && s < hi {
				if err := backend.ValidateName("topic", name); err != nil {
					return nil, fmt.Errorf("partition %d of %q: %w", i, topic, err)
				}
				l.names[i] = name
				break
			}
		}
	}
	return l, nil
}

// Topic is the partitioned topic's own name.
func (l *Layout) Topic() string { return l.topic }

// Count is the number of partitions.
func (l *Layout) Count() int { return len(l.names) }

// Name is the backend topic that holds partition i.
func (l *Layout) Name(i int) string { return l.names[i] }

// ForKey returns the partition of a message key: FNV-1a (32 bits) of the key's bytes modulo
// the count. It never changes, since messages already stored depend on it.
func (l *Layout) ForKey(key string) int {
	return int(fnv32a(key) % uint32(len(l.names)))
}

// fnv32a is FNV-1a, 32 bits, of s (hash/fnv's New32a), without allocating: it runs on every
// publish of a key and every call on a topic.
func fnv32a(s string) uint32 {
	const offset, prime = 2166136261, 16777619
	h := uint32(offset)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= prime
	}
	return h
}
