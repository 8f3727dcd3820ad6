package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

// Claimed is what one claim script returned.
type Claimed struct {
	Deliveries []backend.Delivery
	// Wait is, when nothing was claimed, how long until the store's earliest scheduled message
	// is due (0: now), or -1 when nothing is scheduled; -1 when something was claimed.
	Wait time.Duration
	// Paused reports a paused group: nothing was claimed, and nothing should be waited for.
	Paused bool
}

// ErrPaused is what a backend's Wait returns when the claim it ran after its blocking command
// found the group paused (list's register.lua): the engine then sleeps out the claim's Block.
var ErrPaused = errors.New("engine: group paused")

// paused is the wait claim.lua and register.lua report for a paused group (engine.lua).
const paused = -2

// ClaimOnce runs claim.lua: up to p.Count ready messages (at most BatchSize) under a lease of
// p.Lease. block is how long the caller will then wait for a wake-up if nothing was ready.
func (e *Engine) ClaimOnce(ctx context.Context, p *backend.ClaimParams, block time.Duration) (Claimed, error) {
	if err := e.Check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
		return Claimed{}, err
	}
	count := min(max(p.Count, 1), e.store.BatchSize)
	res, err := e.run(ctx, "claim", e.Keys(p.Topic, p.Group).all, p.Consumer, count,
		backendkit.Millis(p.Lease), e.store.BatchSize, p.Group, backendkit.Millis(block)).Slice()
	if err != nil {
		return Claimed{}, e.claimError(p, err)
	}
	return e.claimed(p.Topic, res), nil
}

// RunClaim runs a store's own claim verb (list's register.lua), whose reply is claim.lua's.
func (e *Engine) RunClaim(ctx context.Context, verb string, p *backend.ClaimParams, args ...any) (Claimed, error) {
	script, ok := e.scripts[verb]
	if !ok {
		panic("engine: no script " + verb)
	}
	res, err := e.RunScript(ctx, script, e.Keys(p.Topic, p.Group).all, args...).Slice()
	if err != nil {
		return Claimed{}, e.claimError(p, err)
	}
	return e.claimed(p.Topic, res), nil
}

// RunGroup runs a store's own verb on one group (list's promote.lua), with the group's KEYS
// as claim.lua gets them.
func (e *Engine) RunGroup(ctx context.Context, verb, topic, group string, args ...any) *redis.Cmd {
	script, ok := e.scripts[verb]
	if !ok {
		panic("engine: no script " + verb)
	}
	return e.RunScript(ctx, script, e.Keys(topic, group).all, args...)
}

// claimError names the group of a claim that found it unregistered.
func (e *Engine) claimError(p *backend.ClaimParams, err error) error {
	for _, target := range []error{backend.ErrGroupDeleted, backend.ErrGroupLost} {
		if errors.Is(err, target) {
			return fmt.Errorf("%s: claim from group %q of topic %q: %w", e.store.Name, p.Group, p.Topic, target)
		}
	}
	return err
}

// AddScript builds the store's own verb lua/<verb>.lua, for RunClaim or RunScript.
func (e *Engine) AddScript(verb string) {
	e.scripts[verb] = e.Script(verb)
}

func (e *Engine) claimed(topic string, res []any) Claimed {
	if backendkit.Int(res[0]) == paused {
		return Claimed{Wait: -1, Paused: true}
	}
	return Claimed{
		Deliveries: backendkit.DecodeDeliveries(res[1:], topic, e.store.Name+": delivery", backendkit.DecodeEnvelope),
		Wait:       millis(res[0]),
	}
}

// millis reads a script's ms figure, keeping -1 (none) as -1.
func millis(v any) time.Duration {
	n := backendkit.Int(v)
	if n < 0 {
		return -1
	}
	return time.Duration(n) * time.Millisecond
}
