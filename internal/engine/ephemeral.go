package engine

import (
	"context"
	"fmt"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

// Join registers p.Consumer as a live member of the ephemeral group p.Group until p.TTL from
// the Redis clock's now (join.lua), registering the group when it is new: the topic's first
// group takes its backlog. Membership is a ZSET of the group (consumer -> deadline); the
// group's deadline, its latest member's, is in the topic's ephemeral ZSET, where Publish and
// Reclaim find the groups whose members all expired. While every group of the topic is
// ephemeral, the topic's keys expire p.TTL after the latest deadline. It primes the publish
// cache, as EnsureGroup does. A durable group: backend.ErrNotEphemeral. A renewal (p.Renew)
// never registers the group: one that is not registered gives backend.ErrGroupDeleted under a
// tombstone (an operator deleted it), else backend.ErrGroupLost (it vanished, or ended), which
// the subscription answers with RegisterAgain.
func (e *Engine) Join(ctx context.Context, p *backend.JoinParams) error {
	if err := e.Check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
		return err
	}
	if p.TTL <= 0 {
		return &backend.ConfigError{Field: "JoinParams.TTL", Reason: "must be positive"}
	}
	keys := append(e.topicKeys(p.Topic).list(), e.backlog(p.Topic)...)
	keys = append(keys, e.Keys(p.Topic, p.Group).groupOnly()...)
	renew := "0"
	if p.Renew {
		renew = "1"
	}
	res, err := e.run(ctx, "join", keys, p.Group, p.Consumer, backendkit.Millis(p.TTL), renew).Slice()
	if err != nil {
		return e.groupError(p.Topic, p.Group, err)
	}
	_, err = e.remember(p.Topic, res)
	return err
}

// Leave ends p.Consumer's membership; the last member's Leave deletes the group as
// DeleteGroup does (deletegroup.lua in mode leave: atomic with a concurrent Join). Leaving a
// group that is no longer registered does nothing; a durable group: backend.ErrNotEphemeral.
// The consumer's idle state is forgotten: a consumer name lives as long as its subscription.
func (e *Engine) Leave(ctx context.Context, p *backend.LeaveParams) error {
	if err := e.Check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
		return err
	}
	e.idle.Forget(p.Topic, p.Group, p.Consumer) // the consumer's subscription ended
	status, err := e.deleteGroup(ctx, p.Topic, p.Group, modeLeave, p.Consumer, -1)
	if err == nil && status == statusDurable {
		err = fmt.Errorf("%s: %w", e.store.Name, backend.ErrNotEphemeral)
	}
	return e.groupError(p.Topic, p.Group, err)
}

// groupError names the group of an error about it.
func (e *Engine) groupError(topic, group string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("group %q of topic %q: %w", group, topic, err)
}
