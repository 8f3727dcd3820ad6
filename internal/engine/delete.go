package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

// Modes of deletegroup.lua.
const (
	modeAny     = "any"     // Admin.DeleteGroup
	modeExpired = "expired" // an ephemeral group whose members all expired
	modeLeave   = "leave"   // Ephemeral.Leave: the group goes with its last member
)

// What deletegroup.lua did.
const (
	statusNotFound = 0
	statusDeleted  = 1
	statusTrash    = 2 // deleted; drain.lua frees the rest
	statusKept     = 3
	statusDurable  = -1
)

// sweepSteps bounds the drain.lua calls a Publish or Reclaim spends on deleted groups' trash
// (each frees up to BatchSize ids), so a big deletion never holds up the data plane: the rest
// waits for the next one, or for DeleteGroup or DeleteTopic, which finish it.
const sweepSteps = 1

// deleteTopicTries bounds DeleteTopic's reads of the registry and trash when groups keep
// changing meanwhile.
const deleteTopicTries = 5

// DeleteGroup unregisters a group and deletes what it holds (deletegroup.lua, then drain.lua
// in steps of BatchSize until nothing is left); with its topic's last group, every key of the
// topic goes, but for the group's tombstone (Options.TombstoneTTL). It also finishes the
// topic's earlier deletions that were interrupted. Subscribers of the group get
// backend.ErrGroupDeleted from their next claim; their acks and nacks write nothing.
// ErrGroupNotFound when the group is not registered.
func (e *Engine) DeleteGroup(ctx context.Context, topic, group string) error {
	if err := e.Check(ctx, "topic", topic, "group", group); err != nil {
		return err
	}
	status, err := e.deleteGroup(ctx, topic, group, modeAny, "", -1)
	if err != nil {
		return err
	}
	if err := e.drainTrash(ctx, topic, -1); err != nil {
		return err
	}
	if status == statusNotFound {
		return fmt.Errorf("%s: group %q of topic %q: %w", e.store.Name, group, topic, backend.ErrGroupNotFound)
	}
	return nil
}

// deleteGroup runs deletegroup.lua in mode, then up to steps drain.lua calls on what it moved
// to the trash (-1: until it is empty). It returns the script's status.
func (e *Engine) deleteGroup(ctx context.Context, topic, group, mode, consumer string, steps int) (int64, error) {
	id := trashID()
	keys := append(e.Keys(topic, group).all, e.trashKeys(topic, id).groupOnly()...)
	res, err := e.run(ctx, "deletegroup", keys, group, mode, id, consumer, e.store.BatchSize,
		backendkit.Millis(e.tombstoneTTL)).Slice()
	if err != nil {
		return 0, err
	}
	status := backendkit.Int(res[0])
	if status == statusDeleted || status == statusTrash {
		e.registries.Delete(topic) // the next Publish learns the registry anew
		e.regained.Delete(regainedKey(topic, group))
	}
	if status == statusTrash {
		return status, e.drain(ctx, topic, id, steps)
	}
	return status, nil
}

// trashID names a deleted group's trash keys: random, so that no two deletions share them.
func trashID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// drain runs drain.lua on the trash id until it is gone, or steps times (-1: no bound).
func (e *Engine) drain(ctx context.Context, topic, id string, steps int) error {
	keys := e.trashKeys(topic, id).all
	for i := 0; steps < 0 || i < steps; i++ {
		done, err := e.run(ctx, "drain", keys, id, e.store.BatchSize).Int()
		if err != nil || done == 1 {
			return err
		}
	}
	return nil
}

// drainTrash takes up to steps drain.lua calls (-1: until empty) on each trash of the topic.
func (e *Engine) drainTrash(ctx context.Context, topic string, steps int) error {
	ids, err := e.client.ZRange(ctx, e.topicKeys(topic).trash, 0, -1).Result()
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := backend.ValidateName("trash id", id); err != nil {
			continue // not relq's: nothing of it can be addressed safely
		}
		if err := e.drain(ctx, topic, id, steps); err != nil {
			return err
		}
	}
	return nil
}

// sweepExpired deletes the topic's ephemeral groups whose members all expired, earliest
// deadline first, until it meets one that has not.
func (e *Engine) sweepExpired(ctx context.Context, topic string) error {
	groups, err := e.client.ZRange(ctx, e.topicKeys(topic).ephemeral, 0, 9).Result()
	if err != nil {
		return err
	}
	for _, g := range groups {
		if backend.ValidateName("group", g) != nil {
			continue
		}
		status, err := e.deleteGroup(ctx, topic, g, modeExpired, "", sweepSteps)
		if err != nil || status == statusKept {
			return err
		}
	}
	return nil
}

// DeleteTopic deletes every key of the topic (deletetopic.lua: UNLINK, O(1) per key): its
// groups, messages, backlog and the trash of earlier deletions. It reads the registry and the
// trash first to name their keys, and reads again if they changed before the script ran.
// Each group leaves a tombstone (Options.TombstoneTTL), one key: subscribers of its groups get
// backend.ErrGroupDeleted from their next claim. A zset
// consumer's own wake-up list (a key that lives a few seconds) may outlive it by those
// seconds. ErrTopicNotFound when the topic has no key.
func (e *Engine) DeleteTopic(ctx context.Context, topic string) error {
	if err := e.Check(ctx, "topic", topic); err != nil {
		return err
	}
	tk := e.topicKeys(topic)
	for range deleteTopicTries {
		groups, err := e.client.HKeys(ctx, tk.registry).Result()
		if err != nil {
			return err
		}
		trash, err := e.client.ZRange(ctx, tk.trash, 0, -1).Result()
		if err != nil {
			return err
		}
		keys := append(tk.list(), e.backlog(topic)...)
		args := []any{backendkit.Millis(e.tombstoneTTL), len(groups)}
		for _, g := range groups {
			if err := backend.ValidateName("group", g); err != nil {
				return fmt.Errorf("%s: registered group: %w", e.store.Name, err)
			}
			keys = append(keys, e.Keys(topic, g).groupOnly()...)
			args = append(args, g)
		}
		args = append(args, len(trash))
		for _, id := range trash {
			if err := backend.ValidateName("trash id", id); err != nil {
				return fmt.Errorf("%s: trash: %w", e.store.Name, err)
			}
			keys = append(keys, e.trashKeys(topic, id).groupOnly()...)
			args = append(args, id)
		}
		n, err := e.run(ctx, "deletetopic", keys, args...).Int()
		if err != nil {
			return err
		}
		e.registries.Delete(topic)
		for _, g := range groups {
			e.regained.Delete(regainedKey(topic, g))
		}
		switch {
		case n == 0:
			return fmt.Errorf("%s: topic %q: %w", e.store.Name, topic, backend.ErrTopicNotFound)
		case n > 0:
			return nil
		}
	}
	return fmt.Errorf("%s: delete topic %q: its groups kept changing for %d tries", e.store.Name, topic, deleteTopicTries)
}
