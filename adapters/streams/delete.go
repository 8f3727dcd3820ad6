package streams

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

// The modes of deletegroup.lua.
const (
	modeAdmin   = "admin"   // DeleteGroup: delete the group if registered
	modeExpired = "expired" // only if every membership of the ephemeral group ran out
	modeLeave   = "leave"   // end one membership; delete the group if it was the last
)

// DeleteGroup unregisters the group at once (XGROUP DESTROY and relq's keys of it, one
// script): later publishes no longer reach it, its claims fail with backend.ErrGroupDeleted,
// its subscribers' acks and nacks are stale no-ops, and a new group of its name starts
// empty. When it was the topic's last group, nothing published until then is backlog (only
// what is published while a topic has no group is), so the topic loses every key at once.
// Otherwise the references its dead letters held on the topic's entries are released, in
// steps of Options.BatchSize (and, should it have been the last group while another delete
// was unfinished, the stream's entries are trimmed in such steps). A delete interrupted
// between steps is finished by the next DeleteGroup or DeleteTopic of the topic, or by a
// publish or a Reclaim on it.
// backend.ErrGroupNotFound when the group is not registered.
func (b *Backend) DeleteGroup(ctx context.Context, topic, group string) error {
	if err := b.check(ctx, "topic", topic, "group", group); err != nil {
		return err
	}
	status, err := b.deleteGroup(ctx, topic, group, modeAdmin, "")
	if err == nil && status == "notfound" {
		return fmt.Errorf("streams: delete group %q of topic %q: %w", group, topic, backend.ErrGroupNotFound)
	}
	return err
}

// deleteGroup runs deletegroup.lua in mode, then release.lua steps until the delete is done,
// and returns deletegroup.lua's status. An earlier delete of the group whose dead letters are
// still being released is finished first.
func (b *Backend) deleteGroup(ctx context.Context, topic, group, mode, consumer string) (string, error) {
	k := b.groupKeys(topic, group)
	for range 3 {
		res, err := deleteGroupScript.Run(ctx, b.client, k.registerKeys(), group, mode, consumer,
			b.opts.BatchSize, b.deleteOnAck(), backendkit.Millis(b.opts.BacklogTTL), backendkit.Millis(b.opts.TombstoneTTL)).Slice()
		if err != nil {
			return "", err
		}
		status, _ := res[0].(string)
		walkTo, _ := res[2].(string)
		switch {
		case status == "busy":
			if err := b.release(ctx, topic, group, "", ""); err != nil {
				return "", err
			}
			continue
		case backendkit.Int(res[1]) == 0:
			return status, nil
		case walkTo != "":
			return status, b.release(ctx, topic, group, "-", walkTo)
		default:
			return status, b.release(ctx, topic, group, "", "")
		}
	}
	return "", fmt.Errorf("streams: delete group %q of topic %q: an earlier delete of it kept it busy", group, topic)
}

// release runs release.lua steps for group ("": none, the backlog's trim only) until its
// delete is done, walking the stream from walkFrom to walkTo when given, then goes on with
// any other group of the topic whose delete is unfinished.
func (b *Backend) release(ctx context.Context, topic, group, walkFrom, walkTo string) error {
	tk := b.topicKeys(topic)
	done := map[string]bool{}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		res, err := releaseScript.Run(ctx, b.client, tk.topicAnd(b.groupKeys(topic, group).deadGone),
			group, b.opts.BatchSize, b.deleteOnAck(), walkFrom, walkTo, backendkit.Millis(b.opts.BacklogTTL)).Slice()
		if err != nil {
			return err
		}
		walkFrom, _ = res[1].(string)
		if backendkit.Int(res[0]) == 1 {
			continue
		}
		done[group] = true
		next, _ := res[2].(string)
		if next == "" || done[next] {
			return nil
		}
		group, walkFrom, walkTo = next, "", ""
	}
}

// tidy finishes what a script reported due on the topic: the delete of an ephemeral group
// whose members all expired, or of one left unfinished ("": the trim of the backlog). Errors
// are dropped: the caller's own work is done, and the next publish or Reclaim reports the
// same again.
func (b *Backend) tidy(ctx context.Context, topic string, groups []string) {
	for _, g := range groups {
		if g == "" {
			_ = b.release(ctx, topic, "", "", "")
			continue
		}
		_, _ = b.deleteGroup(ctx, topic, g, modeExpired, "")
	}
}

// DeleteTopic deletes every key of the topic in one deletetopic.lua call: the stream with every
// consumer group on it (another program's too, in FormatWatermill), relq's keys of the topic
// and of each group, and the dead letters of deletes left unfinished. Its groups are read
// first to name their keys; the script refuses, and they are read again, if a group came
// meanwhile. The publish lanes' records are fields of the topic's meta HASH, so they go with
// it. Subscribers of its groups get backend.ErrGroupDeleted; a later publish creates the topic
// again, as a new one.
// backend.ErrTopicNotFound when the topic has no key.
func (b *Backend) DeleteTopic(ctx context.Context, topic string) error {
	if err := b.check(ctx, "topic", topic); err != nil {
		return err
	}
	tk := b.topicKeys(topic)
	for range 10 {
		names, err := b.groupsToDelete(ctx, tk)
		if err != nil {
			return err
		}
		keys := append(tk.all(), tk.tombs)
		args := []any{backendkit.Millis(b.opts.TombstoneTTL)}
		for _, g := range names {
			keys = append(keys, b.groupKeys(topic, g).own()...)
			args = append(args, g)
		}
		n, err := deleteTopicScript.Run(ctx, b.client, keys, args...).Int64()
		if err != nil {
			return err
		}
		if n < 0 {
			continue // a group came meanwhile
		}
		if n == 0 {
			return fmt.Errorf("streams: delete topic %q: %w", topic, backend.ErrTopicNotFound)
		}
		return nil
	}
	return fmt.Errorf("streams: delete topic %q: its groups kept changing", topic)
}

// groupsToDelete lists the groups whose keys DeleteTopic unlinks: those of the stream and those
// whose delete is unfinished.
func (b *Backend) groupsToDelete(ctx context.Context, tk topicKeys) ([]string, error) {
	var names []string
	infos, err := b.client.XInfoGroups(ctx, tk.stream).Result()
	if err != nil && !isNoSuchKey(err) {
		return nil, err
	}
	for _, g := range infos {
		names = append(names, g.Name)
	}
	deleting, err := b.client.SMembers(ctx, tk.deleting).Result()
	if err != nil {
		return nil, err
	}
	names = append(names, deleting...)
	slices.Sort(names)
	return slices.Compact(names), nil
}

// groupGone reports the error reply of a script run on a group that is not registered
// ("NOGROUP relq: ...").
func groupGone(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), "NOGROUP relq:")
}

// goneError is the sentinel of a groupGone reply: backend.ErrGroupDeleted for a group an
// operator deleted ("NOGROUP relq: group deleted", under a tombstone), else
// backend.ErrGroupLost.
func goneError(err error) error {
	var rerr redis.Error
	if errors.As(err, &rerr) && rerr.Error() == "NOGROUP relq: group deleted" {
		return backend.ErrGroupDeleted
	}
	return backend.ErrGroupLost
}
