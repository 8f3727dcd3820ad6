package list

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Faults injects states that only failures produce, so the conformance suite can check the
// recovery paths against real Redis. It is for tests: production code never calls it.
type Faults struct {
	b *Backend
}

// Faults returns the fault injector of b. For tests only.
func (b *Backend) Faults() *Faults { return &Faults{b: b} }

// InjectCorrupt stores data, bypassing the envelope codec, as a new message ready for group on
// topic (one inject.lua call), as foreign or corrupt data would be. Claiming it yields a
// Delivery whose Err wraps backend.ErrCorruptEntry.
func (f *Faults) InjectCorrupt(ctx context.Context, topic, group string, data []byte) error {
	return f.b.InjectCorrupt(ctx, topic, group, data)
}

// InjectOrphan moves the next ready entry of group to processing with one LMOVE and no lease, as
// a consumer that died between BLMOVE and lease registration leaves it. It returns the id, or
// "" when nothing is ready.
func (f *Faults) InjectOrphan(ctx context.Context, topic, group string) (string, error) {
	if err := f.b.Check(ctx, "topic", topic, "group", group); err != nil {
		return "", err
	}
	k := f.b.keys(topic, group)
	entry, err := f.b.Client().LMove(ctx, k.Store("ready"), k.Store("processing"), "RIGHT", "LEFT").Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	id, _, _ := strings.Cut(entry, "@") // BLMOVE leaves the ready entry "id@ms" as it is
	return id, err
}

// DeleteBody deletes the stored body of message id, as a hand edit or a lost write would;
// the next claim of it dead-letters it with the reason "body missing".
func (f *Faults) DeleteBody(ctx context.Context, topic, id string) error {
	return f.b.DeleteBody(ctx, topic, id)
}
