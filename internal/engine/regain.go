package engine

import (
	"context"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

// RegisterAgain registers a group again for a running subscription that found it
// unregistered without a tombstone (regain.lua): durable as ensuregroup.lua would, or joined
// as join.lua would with p.Ephemeral. The first group of the topic takes its backlog. Under a
// tombstone: an error matching backend.ErrGroupDeleted. It primes the publish cache, as
// EnsureGroup does.
//
// The count of re-registrations goes on from the largest this process has seen of the group,
// or p.Known: a Redis that came back empty forgot the group's own, and a publisher that
// restores a group (Publish) knows no count of its own.
func (e *Engine) RegisterAgain(ctx context.Context, p *backend.RegisterAgainParams) (backend.RegisterAgainResult, error) {
	if err := e.Check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return backend.RegisterAgainResult{}, err
	}
	eph, err := backendkit.RegainMode(p)
	if err != nil {
		return backend.RegisterAgainResult{}, err
	}
	keys := append(e.topicKeys(p.Topic).list(), e.backlog(p.Topic)...)
	keys = append(keys, e.Keys(p.Topic, p.Group).groupOnly()...)
	at := regainedKey(p.Topic, p.Group)
	known := p.Known
	if n, ok := e.regained.Load(at); ok {
		known = max(known, n.(int64))
	}
	res, err := e.run(ctx, "regain", keys, p.Group, eph, p.Consumer, backendkit.Millis(p.TTL), known).Slice()
	if err != nil {
		return backend.RegisterAgainResult{}, e.groupError(p.Topic, p.Group, err)
	}
	r := backendkit.DecodeRegain(res)
	e.regained.Store(at, r.Times)
	if _, err := e.remember(p.Topic, res[6:]); err != nil {
		return r, err
	}
	return r, nil
}

// regainedKey is a group's entry in Engine.regained: neither name holds a NUL.
func regainedKey(topic, group string) string { return topic + "\x00" + group }
