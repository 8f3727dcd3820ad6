package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/pubsub"
)

// publishTries bounds the retries of a publish whose cached registry was stale. Each retry
// learns the registry from the failed attempt, so a second try succeeds unless groups are
// being registered on the topic at that very moment.
const publishTries = 5

// registry is a topic's registered groups as Publish last saw them, with their version.
type registry struct {
	version string
	groups  []string
	// ephemeral[i] tells whether groups[i] is ephemeral.
	ephemeral []bool
	// learned is when Redis last confirmed this registry (unix ns): a publish routed by it,
	// or a script replied with it.
	learned atomic.Int64
}

// restorable is publish.lua's mask of the groups it may register again should they vanish
// with the topic's state: the durable ones, while the registry was confirmed within the
// tombstones' life. A group deleted since then has a tombstone still, unless Redis lost it
// with everything else; a group an ephemeral subscription ended leaves none, and is never
// restored.
func (r *registry) restorable(tombstoneTTL time.Duration) string {
	trusted := time.Since(time.Unix(0, r.learned.Load())) < tombstoneTTL
	mask := make([]byte, len(r.groups))
	for i := range mask {
		mask[i] = '0'
		if trusted && !r.ephemeral[i] {
			mask[i] = '1'
		}
	}
	return string(mask)
}

// Publish stores the batch in one publish.lua call (one more per stale registry): the bodies
// once, and each message in the ready store of every registered group, or in the topic's
// backlog while it has none (pubsub's backlog rule: Options.BacklogLimit, BacklogTTL). It
// returns the delivery IDs in order. Priorities go through Store.Priority (0 without one).
//
// Publish also keeps the topic's lifecycle going: ephemeral groups whose members all expired
// are deleted before the batch is stored (so it does not go to them), and a step of freeing
// deleted groups' trash follows a publish that found some (an error there is left for the
// next publish, Reclaim or delete to meet: the batch is stored).
func (e *Engine) Publish(ctx context.Context, p *pubsub.PublishParams) (pubsub.PublishResult, error) {
	if err := e.Check(ctx, "topic", p.Topic); err != nil {
		return pubsub.PublishResult{}, err
	}
	if len(p.Messages) == 0 {
		return pubsub.PublishResult{}, nil
	}
	lane, token := e.lanes.Take()
	defer e.lanes.Free(lane)
	return e.publish(ctx, p, e.lanes.Field(lane), token)
}

// publish is Publish on a given lane and token (tests resend a call with them).
func (e *Engine) publish(ctx context.Context, p *pubsub.PublishParams, lane, token string) (pubsub.PublishResult, error) {
	topic, msgs := p.Topic, p.Messages
	reg := e.cached(topic)
	head := append(e.topicKeys(topic).list(), e.backlog(topic)...)
	var restored []string
	for tries, sweeps := 0, 0; tries < publishTries; {
		keys := slices.Clone(head)
		args := make([]any, 0, 8+len(reg.groups)+3*len(msgs))
		args = append(args, reg.version, lane, token, e.backlogLimit, backendkit.Millis(e.backlogTTL), e.backlogRefuse,
			len(reg.groups), reg.restorable(e.tombstoneTTL))
		for _, g := range reg.groups {
			keys = append(keys, e.Keys(topic, g).storeOnly()...)
			args = append(args, g)
		}
		for _, m := range msgs {
			prio := 0
			if e.store.Priority != nil {
				prio = e.store.Priority(m.Priority)
			}
			args = append(args, backendkit.Millis(m.Delay), prio, pubsub.EncodeEnvelope(m.Envelope))
		}
		res, err := e.run(ctx, "publish", keys, args...).Slice()
		if err != nil {
			return pubsub.PublishResult{}, err
		}
		switch backendkit.Int(res[0]) {
		case 1:
			last := backendkit.Int(res[1])
			if v, _ := res[2].(string); v != reg.version {
				e.registries.Store(topic, &registry{version: v, groups: reg.groups, ephemeral: reg.ephemeral})
			} else if reg.version != "0" {
				reg.learned.Store(time.Now().UnixNano())
			}
			if backendkit.Int(res[3]) == 1 {
				_ = e.drainTrash(ctx, topic, sweepSteps)
			}
			ids := make([]string, len(msgs))
			for i := range ids {
				ids[i] = strconv.FormatInt(last-int64(len(ids)-1-i), 10)
			}
			return pubsub.PublishResult{IDs: ids, BacklogDropped: backendkit.Int(res[4]), Reregistered: restored}, nil
		case 3:
			return pubsub.PublishResult{}, &pubsub.BacklogFullError{Topic: topic, Limit: e.backlogLimit}
		case 4:
			// Groups of the cached registry vanished with the topic's state: register them
			// again before storing, so that each receives this batch, not only the first
			// registered again (which takes the backlog). A restore is not a stale registry;
			// it has a bound of its own, as sweeps do.
			if sweeps++; sweeps > publishTries {
				return pubsub.PublishResult{}, fmt.Errorf("%s: publish to %q: its vanished groups could not be registered again in %d tries", e.store.Name, topic, publishTries)
			}
			for _, g := range res[1:] {
				name, _ := g.(string)
				r, err := e.RegisterAgain(ctx, &pubsub.RegisterAgainParams{Topic: topic, Group: name})
				if errors.Is(err, pubsub.ErrGroupDeleted) {
					continue // deleted meanwhile: its tombstone keeps it out
				}
				if err != nil {
					return pubsub.PublishResult{}, err
				}
				if r.Registered {
					restored = append(restored, name)
				}
			}
			reg = e.cached(topic)
		case 2:
			// Ephemeral groups whose members all expired: delete them, then learn the registry.
			// A sweep is not a stale registry; it has a bound of its own.
			if sweeps++; sweeps > publishTries {
				return pubsub.PublishResult{}, fmt.Errorf("%s: publish to %q: its expired groups could not be deleted in %d tries", e.store.Name, topic, publishTries)
			}
			for _, g := range res[1:] {
				name, _ := g.(string)
				if err := pubsub.ValidateName("group", name); err != nil {
					return pubsub.PublishResult{}, fmt.Errorf("%s: expired group: %w", e.store.Name, err)
				}
				if _, err := e.deleteGroup(ctx, topic, name, modeExpired, "", sweepSteps); err != nil {
					return pubsub.PublishResult{}, err
				}
			}
		default:
			if reg, err = e.remember(topic, res[1:]); err != nil {
				return pubsub.PublishResult{}, err
			}
			tries++
		}
	}
	return pubsub.PublishResult{}, fmt.Errorf("%s: publish to %q: its groups kept changing for %d tries", e.store.Name, topic, publishTries)
}

// cached returns the registry Publish last saw on topic, or version "0" with no group.
func (e *Engine) cached(topic string) *registry {
	if v, ok := e.registries.Load(topic); ok {
		return v.(*registry)
	}
	return &registry{version: "0"}
}

// remember caches a registry reply {version, groups...}, an ephemeral group as "name:e".
// Names are checked again: a foreign member with braces would address keys outside the
// topic's slot.
func (e *Engine) remember(topic string, reply []any) (*registry, error) {
	reg := &registry{}
	reg.version, _ = reply[0].(string)
	if reg.version == "" {
		reg.version = strconv.FormatInt(backendkit.Int(reply[0]), 10)
	}
	type member struct {
		name      string
		ephemeral bool
	}
	members := make([]member, 0, len(reply)-1)
	for _, m := range reply[1:] {
		g, _ := m.(string)
		name, ephemeral := strings.CutSuffix(g, ":e")
		if err := pubsub.ValidateName("group", name); err != nil {
			return reg, fmt.Errorf("%s: registered group: %w", e.store.Name, err)
		}
		members = append(members, member{name, ephemeral})
	}
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.name, b.name) })
	for _, m := range members {
		reg.groups = append(reg.groups, m.name)
		reg.ephemeral = append(reg.ephemeral, m.ephemeral)
	}
	reg.learned.Store(time.Now().UnixNano())
	e.registries.Store(topic, reg)
	return reg, nil
}

// EnsureGroup registers a durable group (ensuregroup.lua) and primes the publish cache with
// the registry it returns, so the first Publish after a Subscribe needs no retry. The group
// receives messages published from now on, and the topic's backlog if it is the first group:
// p.FromOldest asks for nothing more (no Capabilities.NewGroupReplay) and is ignored. A group
// registered already, durable or ephemeral, stays as it is.
func (e *Engine) EnsureGroup(ctx context.Context, p *pubsub.EnsureGroupParams) error {
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

// Groups lists the groups registered on a topic, sorted.
func (e *Engine) Groups(ctx context.Context, topic string) ([]string, error) {
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
