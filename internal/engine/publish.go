package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

// publishTries bounds the retries of a publish whose cached registry was stale. Each retry
// learns the registry from the failed attempt, so a second try succeeds unless groups are
// being registered on the topic at that very moment.
const publishTries = 5

// Publish stores the batch in one publish.lua call (one more per stale registry): the bodies
// once, and each message in the ready store of every registered group, or in the topic's
// backlog while it has none (pubsub's backlog rule: Options.BacklogLimit, BacklogTTL). It
// returns the delivery IDs in order. Priorities go through Store.Priority (0 without one).
//
// Publish also keeps the topic's lifecycle going: ephemeral groups whose members all expired
// are deleted before the batch is stored (so it does not go to them), and a step of freeing
// deleted groups' trash follows a publish that found some (an error there is left for the
// next publish, Reclaim or delete to meet: the batch is stored).
func (e *Engine) Publish(ctx context.Context, p *backend.PublishParams) (backend.PublishResult, error) {
	if err := e.Check(ctx, "topic", p.Topic); err != nil {
		return backend.PublishResult{}, err
	}
	if len(p.Messages) == 0 {
		return backend.PublishResult{}, nil
	}
	lane, token := e.lanes.Take()
	defer e.lanes.Free(lane)
	return e.publish(ctx, p, e.lanes.Field(lane), token)
}

// publish is Publish on a given lane and token (tests resend a call with them).
func (e *Engine) publish(ctx context.Context, p *backend.PublishParams, lane, token string) (backend.PublishResult, error) {
	topic, msgs := p.Topic, p.Messages
	reg := e.cached(topic)
	head := append(e.topicKeys(topic).list(), e.backlog(topic)...)
	var restored []string
	for tries, sweeps := 0, 0; tries < publishTries; {
		keys, args := e.publishCall(topic, head, reg, lane, token, msgs)
		res, err := e.run(ctx, "publish", keys, args...).Slice()
		if err != nil {
			return backend.PublishResult{Reregistered: restored}, err
		}
		switch backendkit.Int(res[0]) {
		case 1:
			r := e.published(ctx, topic, reg, res, len(msgs))
			r.Reregistered = restored
			return r, nil
		case 3:
			return backend.PublishResult{Reregistered: restored}, &backend.BacklogFullError{Topic: topic, Limit: e.backlogLimit}
		case 4:
			// Groups of the cached registry vanished with the topic's state: register them
			// again before storing, so that each receives this batch, not only the first
			// registered again (which takes the backlog). A restore is not a stale registry;
			// it has a bound of its own, as sweeps do.
			if sweeps++; sweeps > publishTries {
				return backend.PublishResult{Reregistered: restored}, fmt.Errorf("%s: publish to %q: its vanished groups could not be registered again in %d tries", e.store.Name, topic, publishTries)
			}
			if restored, err = e.restore(ctx, topic, res[1:], restored); err != nil {
				return backend.PublishResult{Reregistered: restored}, err
			}
			reg = e.cached(topic)
		case 2:
			// Ephemeral groups whose members all expired: delete them, then learn the registry.
			// A sweep is not a stale registry; it has a bound of its own.
			if sweeps++; sweeps > publishTries {
				return backend.PublishResult{Reregistered: restored}, fmt.Errorf("%s: publish to %q: its expired groups could not be deleted in %d tries", e.store.Name, topic, publishTries)
			}
			for _, g := range res[1:] {
				name, _ := g.(string)
				if err := backend.ValidateName("group", name); err != nil {
					return backend.PublishResult{Reregistered: restored}, fmt.Errorf("%s: expired group: %w", e.store.Name, err)
				}
				if _, err := e.deleteGroup(ctx, topic, name, modeExpired, "", sweepSteps); err != nil {
					return backend.PublishResult{Reregistered: restored}, err
				}
			}
		default:
			if reg, err = e.remember(topic, res[1:]); err != nil {
				return backend.PublishResult{Reregistered: restored}, err
			}
			tries++
		}
	}
	return backend.PublishResult{Reregistered: restored}, fmt.Errorf("%s: publish to %q: its groups kept changing for %d tries", e.store.Name, topic, publishTries)
}

// publishCall is the keys and arguments of publish.lua storing msgs with the registry reg.
func (e *Engine) publishCall(topic string, head []string, reg *registry, lane, token string, msgs []backend.OutMessage) ([]string, []any) {
	keys := slices.Clone(head)
	candidates := reg.trustedCandidates(e.tombstoneTTL)
	args := make([]any, 0, 9+len(reg.groups)+len(candidates)+3*len(msgs))
	args = append(args, reg.version, lane, token, e.backlogLimit, backendkit.Millis(e.backlogTTL), e.backlogRefuse,
		len(reg.groups), reg.mask(e.tombstoneTTL))
	for _, g := range reg.groups {
		keys = append(keys, e.Keys(topic, g).storeOnly()...)
		args = append(args, g)
	}
	args = append(args, len(candidates)/2)
	args = append(args, candidates...)
	for _, m := range msgs {
		prio := 0
		if e.store.Priority != nil {
			prio = e.store.Priority(m.Priority)
		}
		args = append(args, backendkit.Millis(m.Delay), prio, backend.EncodeEnvelope(m.Envelope))
	}
	return keys, args
}

// published is the result of a publish.lua call that stored n messages (reply res, status
// 1): it settles what the call taught of the registry and frees a deleted group's trash when
// the call found some.
func (e *Engine) published(ctx context.Context, topic string, reg *registry, res []any, n int) backend.PublishResult {
	last := backendkit.Int(res[1])
	switch {
	case len(res) > 5 && backendkit.Int(res[5]) == 1:
		e.registries.CompareAndSwap(topic, reg, reg.settled()) // no candidate to restore
	case reg.version != "0":
		reg.confirmed()
	}
	if backendkit.Int(res[3]) == 1 {
		_ = e.drainTrash(ctx, topic, sweepSteps)
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.FormatInt(last-int64(len(ids)-1-i), 10)
	}
	return backend.PublishResult{IDs: ids, BacklogDropped: backendkit.Int(res[4])}
}

// restore registers again the groups publish.lua named (RegisterAgain, durable), and returns
// restored with those this call registered appended. One deleted meanwhile is left out: its
// tombstone keeps it so.
func (e *Engine) restore(ctx context.Context, topic string, names []any, restored []string) ([]string, error) {
	for _, g := range names {
		name, _ := g.(string)
		r, err := e.RegisterAgain(ctx, &backend.RegisterAgainParams{Topic: topic, Group: name})
		if errors.Is(err, backend.ErrGroupDeleted) {
			continue
		}
		if err != nil {
			return restored, err
		}
		if r.Registered {
			restored = append(restored, name)
		}
	}
	return restored, nil
}

// EnsureGroup registers a durable group (ensuregroup.lua) and primes the publish cache with
// the registry it returns, so the first Publish after a Subscribe needs no retry. The group
// receives messages published from now on, and the topic's backlog if it is the first group:
// p.FromOldest asks for nothing more (no Capabilities.NewGroupReplay) and is ignored. A group
// registered already, durable or ephemeral, stays as it is.
func (e *Engine) EnsureGroup(ctx context.Context, p *backend.EnsureGroupParams) error {
	if err := e.Check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return err
	}
	keys := append(e.topicKeys(p.Topic).list(), e.backlog(p.Topic)...)
	keys = append(keys, e.Keys(p.Topic, p.Group).storeOnly()...)
	res, err := e.run(ctx, "ensuregroup", keys, p.Group).Slice()
	if err != nil {
		return err
	}
	_, err = e.remember(p.Topic, res)
	return err
}

// GroupNames lists the groups registered on a topic, sorted (ListGroups' names).
func (e *Engine) GroupNames(ctx context.Context, topic string) ([]string, error) {
	if err := e.Check(ctx, "topic", topic); err != nil {
		return nil, err
	}
	groups, err := e.client.HKeys(ctx, e.topicKeys(topic).registry).Result()
	if err != nil {
		return nil, err
	}
	slices.Sort(groups)
	return groups, nil
}
