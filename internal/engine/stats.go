package engine

import (
	"context"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

// statsWindow is the store's window for Stats' OldestReadyAge (list: entries looked at at
// each end of ready; zset: priorities whose oldest due message is looked at).
const statsWindow = 100

// Stats reads the group's state in one read-only script, so the numbers are one snapshot and
// the ages are measured on the Redis clock. Published is the topic's ID counter less its value
// when the group registered: every message published since routes to the group.
func (e *Engine) Stats(ctx context.Context, p *backend.StatsParams) (backend.Stats, error) {
	if err := e.Check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return backend.Stats{}, err
	}
	res, err := e.run(ctx, "stats", e.Keys(p.Topic, p.Group).all, p.Group, statsWindow).Slice()
	if err != nil {
		return backend.Stats{}, err
	}
	s := backendkit.DecodeStats(p.Topic, p.Group, res)
	s.Counters.Published = backendkit.Int(res[7])
	s.Paused = backendkit.Int(res[8]) == 1
	return s, nil
}

// InjectCorrupt stores data, bypassing the envelope codec, as a new message ready for group on
// topic (one inject.lua call), as foreign or corrupt data would be. For tests only.
func (e *Engine) InjectCorrupt(ctx context.Context, topic, group string, data []byte) error {
	if err := e.Check(ctx, "topic", topic, "group", group); err != nil {
		return err
	}
	return e.run(ctx, "inject", e.Keys(topic, group).all, group, data).Err()
}
