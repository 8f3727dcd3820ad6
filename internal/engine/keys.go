package engine

import (
	"strconv"

	"github.com/relq/relq/internal/keys"
)

// topicKeys are the five keys of a topic that every script receives first, in engine.lua's
// keys_at order.
type topicKeys struct {
	meta     string // HASH: seq, ver (registry version), layout, publish lanes, wake marks
	bodies   string // HASH id -> envelope bytes, stored once for all groups
	refs     string // HASH id -> groups still holding the body, only while more than one
	registry string // HASH group -> seq when it registered
	legacy   string // the layout-1 registry: its presence means data this code cannot read
}

// GroupKeys are the keys of one group of one topic: the topic's, the engine's, then the
// store's (Store.Keys order).
type GroupKeys struct {
	topic topicKeys
	all   []string // topic keys, engine keys, store keys: the KEYS of a one-group script
	store map[string]string
}

// Store returns the key of the group's store named name (a Store.Keys entry).
func (k GroupKeys) Store(name string) string { return k.store[name] }

// Pending is the group's pending ZSET (id -> lease deadline), for tests and tools.
func (k GroupKeys) Pending() string { return k.all[5] }

// Holders is the group's holders HASH (id -> "consumer:attempt:since:extra").
func (k GroupKeys) Holders() string { return k.all[7] }

// Retries is the group's retries HASH (id -> deliveries so far, for messages back in ready).
func (k GroupKeys) Retries() string { return k.all[8] }

// Dead is the group's dead-letter ZSET (id -> dead at, ms).
func (k GroupKeys) Dead() string { return k.all[9] }

// Meta is the topic's meta HASH.
func (k GroupKeys) Meta() string { return k.topic.meta }

// Bodies is the topic's bodies HASH.
func (k GroupKeys) Bodies() string { return k.topic.bodies }

// Refs is the topic's refs HASH.
func (k GroupKeys) Refs() string { return k.topic.refs }

// engineKeys are the engine's keys of a group, in engine.lua's keys_at order.
var engineKeys = []string{"pending", "pending_at", "holders", "retries", "dead", "dead_info", "counters"}

// tag is the hash tag of topic: every key of the topic starts with it.
func (e *Engine) tag(topic string) string { return keys.Tag(e.prefix, topic) }

func (e *Engine) topicKeys(topic string) topicKeys {
	t := e.tag(topic)
	return topicKeys{
		meta:     keys.Join(t, "meta"),
		bodies:   keys.Join(t, "bodies"),
		refs:     keys.Join(t, "refs"),
		registry: keys.Join(t, e.store.Registry),
		legacy:   keys.Join(t, e.store.Legacy),
	}
}

func (tk topicKeys) list() []string {
	return []string{tk.meta, tk.bodies, tk.refs, tk.registry, tk.legacy}
}

// Keys returns the keys of group on topic. Names are validated before they get here: the
// hash tag {prefix:topic} keeps them in one Cluster slot, and group names hold no ':', so
// two groups' keys cannot collide.
func (e *Engine) Keys(topic, group string) GroupKeys {
	tk := e.topicKeys(topic)
	t := e.tag(topic)
	all := tk.list()
	for _, name := range engineKeys {
		all = append(all, keys.Join(t, "g", group, name))
	}
	store := make(map[string]string, len(e.store.Keys))
	for _, name := range e.store.Keys {
		key := keys.Join(t, "g", group, name)
		store[name] = key
		all = append(all, key)
	}
	return GroupKeys{topic: tk, all: all, store: store}
}

// storeOnly is a group's store keys, for publish's per-group KEYS.
func (k GroupKeys) storeOnly() []string { return k.all[len(k.all)-len(k.store):] }

// lane is the meta field of publish lane n of this engine (see publish.lua).
func (e *Engine) lane(n int) string { return "p:" + e.instance + ":" + strconv.Itoa(n) }
