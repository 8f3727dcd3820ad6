package engine

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Sealed answers, for list and zset alike, the test hooks (internal/seal) that the engine
// owns; each adapter adds InjectOrphan, which depends on its ready store.
type Sealed struct{ E *Engine }

// InjectCorrupt stores data, bypassing the envelope codec, as a new message ready (due now)
// for group on topic (one inject.lua call), as foreign or corrupt data would be. Claiming it
// yields a Delivery whose Err wraps backend.ErrCorruptEntry.
func (s Sealed) InjectCorrupt(ctx context.Context, topic, group string, data []byte) error {
	return s.E.InjectCorrupt(ctx, topic, group, data)
}

// DeleteBody deletes the stored body of message id, as a hand edit or a lost write would;
// the next claim of it dead-letters it with the reason "body missing".
func (s Sealed) DeleteBody(ctx context.Context, topic, id string) error {
	return s.E.DeleteBody(ctx, topic, id)
}

// AddWaitHook adds hook to the connections of blocking claims, which are not the client's.
func (s Sealed) AddWaitHook(hook redis.Hook) { s.E.AddWaitHook(hook) }

// Engine returns the engine, for the engine's own tests of a store.
func (s Sealed) Engine() *Engine { return s.E }
