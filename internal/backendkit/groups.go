package backendkit

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/pubsub"
)

// publishTries bounds the retries of a publish whose cached group list was stale. Each retry
// learns the registry from the failed attempt, so a second try succeeds unless groups are
// being registered on the topic at that very moment.
const publishTries = 5

// Registry caches each topic's registered groups for a backend whose publish.lua routes to
// the groups it is given, with their keys declared (list, zset). The script checks the cache
// against the topic's registry SET, so a stale entry costs one retry, never a wrong routing.
// One small entry per topic published to. The zero value is ready to use once Backend is set;
// it must not be copied.
type Registry struct {
	// Backend names the backend in errors: "list".
	Backend string
	groups  sync.Map // topic -> []string
}

// Fanout is one Publish of a batch through a routing publish.lua, whose KEYS are TopicKeys,
// then GroupKeys of each group passed, then BatchKey, and whose ARGV are pubsub.DefaultGroup,
// the number of groups passed, their names, then Messages.
type Fanout struct {
	Script    *redis.Script
	Topic     string
	TopicKeys []string
	GroupKeys func(group string) []string
	// Messages are the messages' ARGV, flattened; Count is how many messages they are.
	Messages []any
	Count    int
	// BatchKey, a key of the topic unique to this Publish call, is passed as the last KEY: the
	// script records its reply there, so a resend of the same call by the Redis client (after
	// a lost reply) stores nothing twice and returns the same IDs.
	BatchKey string
}

// Publish runs f, retrying with the registry the script returns while the cached groups are
// stale, and returns the delivery IDs in order: the script returns {1, last} for IDs last-Count+1
// .. last, or {0, registered groups...} having written nothing.
func (r *Registry) Publish(ctx context.Context, client redis.Scripter, f *Fanout) ([]string, error) {
	groups := r.Groups(f.Topic)
	for range publishTries {
		keys := slices.Clone(f.TopicKeys)
		args := make([]any, 0, 2+len(groups)+len(f.Messages))
		args = append(args, pubsub.DefaultGroup, len(groups))
		for _, g := range groups {
			keys = append(keys, f.GroupKeys(g)...)
			args = append(args, g)
		}
		args = append(args, f.Messages...)
		keys = append(keys, f.BatchKey)
		res, err := f.Script.Run(ctx, client, keys, args...).Slice()
		if err != nil {
			return nil, err
		}
		if Int(res[0]) == 1 {
			last := Int(res[1])
			ids := make([]string, f.Count)
			for i := range ids {
				ids[i] = strconv.FormatInt(last-int64(len(ids)-1-i), 10)
			}
			return ids, nil
		}
		if groups, err = r.validGroups(res[1:]); err != nil {
			return nil, err
		}
		r.groups.Store(f.Topic, groups)
	}
	return nil, fmt.Errorf("%s: publish to %q: its groups kept changing for %d tries", r.Backend, f.Topic, publishTries)
}

// Groups returns the groups Publish last saw on topic, or {default}.
func (r *Registry) Groups(topic string) []string {
	if v, ok := r.groups.Load(topic); ok {
		return v.([]string)
	}
	return []string{pubsub.DefaultGroup}
}

// Store caches members, as read from topic's registry SET, for Publish.
func (r *Registry) Store(topic string, members []string) error {
	registry := make([]any, 0, len(members))
	for _, g := range members {
		registry = append(registry, g)
	}
	groups, err := r.validGroups(registry)
	if err != nil {
		return err
	}
	r.groups.Store(topic, groups)
	return nil
}

// validGroups turns a registry into the sorted list to route to ({default} when empty). Names
// are checked again: a foreign member with braces would address keys outside the topic's slot.
func (r *Registry) validGroups(members []any) ([]string, error) {
	if len(members) == 0 {
		return []string{pubsub.DefaultGroup}, nil
	}
	groups := make([]string, 0, len(members))
	for _, m := range members {
		g, _ := m.(string)
		if err := pubsub.ValidateName("group", g); err != nil {
			return nil, fmt.Errorf("%s: registered group: %w", r.Backend, err)
		}
		groups = append(groups, g)
	}
	slices.Sort(groups)
	return groups, nil
}

// SortedMembers reads a registry SET, sorted.
func SortedMembers(ctx context.Context, client redis.Cmdable, key string) ([]string, error) {
	groups, err := client.SMembers(ctx, key).Result()
	if err != nil {
		return nil, err
	}
	slices.Sort(groups)
	return groups, nil
}
