package engine

import (
	"context"
	"time"

	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/pubsub"
)

// RegisterAgain registers a group again for a running subscription that found it
// unregistered without a tombstone (regain.lua): durable as ensuregroup.lua would, or joined
// as join.lua would with p.Ephemeral. The first group of the topic takes its backlog. Under a
// tombstone: an error matching pubsub.ErrGroupDeleted. It primes the publish cache, as
// EnsureGroup does.
func (e *Engine) RegisterAgain(ctx context.Context, p *pubsub.RegisterAgainParams) (pubsub.RegisterAgainResult, error) {
	if err := e.Check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return pubsub.RegisterAgainResult{}, err
	}
	eph, err := backendkit.RegainMode(p)
	if err != nil {
		return pubsub.RegisterAgainResult{}, err
	}
	keys := append(e.topicKeys(p.Topic).list(), e.backlog(p.Topic)...)
	keys = append(keys, e.Keys(p.Topic, p.Group).groupOnly()...)
	res, err := e.run(ctx, "regain", keys, p.Group, eph, p.Consumer, backendkit.Millis(p.TTL), p.Known).Slice()
	if err != nil {
		return pubsub.RegisterAgainResult{}, e.groupError(p.Topic, p.Group, err)
	}
	r := pubsub.RegisterAgainResult{
		Registered: backendkit.Int(res[0]) == 1,
		Times:      backendkit.Int(res[1]),
		Backlog:    backendkit.Int(res[5]),
	}
	if at := backendkit.Int(res[2]); at > 0 {
		r.At = time.UnixMilli(at)
	}
	if r.Registered {
		r.Found = backendkit.Found(backendkit.Int(res[3]) == 1, backendkit.Int(res[4]))
	}
	if _, err := e.remember(p.Topic, res[6:]); err != nil {
		return r, err
	}
	return r, nil
}
