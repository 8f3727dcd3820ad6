package engine

import "github.com/relq/relq/internal/keys"

// topicKeys are the eight keys of a topic that every script receives first, in engine.lua's
// keys_at order.
type topicKeys struct {
	meta      string // HASH: seq, ver (registry version), layout, publish lanes, wake marks, backlog, expire
	bodies    string // HASH id -> envelope bytes, stored once for all groups
	refs      string // HASH id -> groups still holding the body, only while more than one
	registry  string // HASH group -> "seq[:flags]": seq when it registered; p paused, e ephemeral
	legacy    string // the layout-1 registry: its presence means data this code cannot read
	ephemeral string // ZSET ephemeral group -> when its last membership runs out (ms)
	trash     string // ZSET id -> when a deleted group's keys were moved to trash:<id>:*
	tombs     string // ZSET group -> when its tombstone expires (ms): groups an operator deleted
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

// topicKeyCount is how many keys of the topic start every script's KEYS (TOPIC_KEYS).
const topicKeyCount = 8

// Pending is the group's pending ZSET (id -> lease deadline), for tests and tools.
func (k GroupKeys) Pending() string { return k.all[topicKeyCount] }

// Holders is the group's holders HASH (id -> "consumer:attempt:since:extra").
func (k GroupKeys) Holders() string { return k.all[topicKeyCount+2] }

// Retries is the group's retries HASH (id -> deliveries so far, for messages back in ready).
func (k GroupKeys) Retries() string { return k.all[topicKeyCount+3] }

// Dead is the group's dead-letter ZSET (id -> dead at, ms).
func (k GroupKeys) Dead() string { return k.all[topicKeyCount+4] }

// Members is an ephemeral group's members ZSET (consumer -> membership deadline, ms).
func (k GroupKeys) Members() string { return k.all[topicKeyCount+7] }

// Meta is the topic's meta HASH.
func (k GroupKeys) Meta() string { return k.topic.meta }

// Bodies is the topic's bodies HASH.
func (k GroupKeys) Bodies() string { return k.topic.bodies }

// Refs is the topic's refs HASH.
func (k GroupKeys) Refs() string { return k.topic.refs }

// Registry is the topic's registry HASH.
func (k GroupKeys) Registry() string { return k.topic.registry }

// Ephemeral is the topic's ZSET of ephemeral groups and their deadlines.
func (k GroupKeys) Ephemeral() string { return k.topic.ephemeral }

// engineKeys are the engine's keys of a group, in engine.lua's keys_at order.
var engineKeys = []string{"pending", "pending_at", "holders", "retries", "dead", "dead_info", "counters", "members"}

// Prefix is the prefix every key of the engine's topics starts with, in their hash tags.
func (e *Engine) Prefix() string { return e.prefix }

// tag is the hash tag of topic: every key of the topic starts with it.
func (e *Engine) tag(topic string) string { return keys.Tag(e.prefix, topic) }

func (e *Engine) topicKeys(topic string) topicKeys {
	t := e.tag(topic)
	return topicKeys{
		meta:      keys.Join(t, "meta"),
		bodies:    keys.Join(t, "bodies"),
		refs:      keys.Join(t, "refs"),
		registry:  keys.Join(t, e.store.Registry),
		legacy:    keys.Join(t, e.store.Legacy),
		ephemeral: keys.Join(t, "ephemeral"),
		trash:     keys.Join(t, "trash"),
		tombs:     keys.Join(t, "tombs"),
	}
}

func (tk topicKeys) list() []string {
	return []string{tk.meta, tk.bodies, tk.refs, tk.registry, tk.legacy, tk.ephemeral, tk.trash, tk.tombs}
}

// Keys returns the keys of group on topic. Names are validated before they get here: the
// hash tag {prefix:topic} keeps them in one Cluster slot, and group names hold no ':', so
// two groups' keys cannot collide.
func (e *Engine) Keys(topic, group string) GroupKeys {
	return e.keysUnder(topic, "g", group)
}

// trashKeys are the keys a deleted group's keys are renamed to, trash:<id>:<name>, in the
// layout of a group's, until drain.lua has freed what they hold.
func (e *Engine) trashKeys(topic, id string) GroupKeys {
	return e.keysUnder(topic, "trash", id)
}

// keysUnder builds a group's key set with each key named T:<kind>:<name>:<key name>.
func (e *Engine) keysUnder(topic, kind, name string) GroupKeys {
	tk := e.topicKeys(topic)
	t := e.tag(topic)
	all := tk.list()
	for _, n := range engineKeys {
		all = append(all, keys.Join(t, kind, name, n))
	}
	store := make(map[string]string, len(e.store.Keys))
	for _, n := range e.store.Keys {
		key := keys.Join(t, kind, name, n)
		store[n] = key
		all = append(all, key)
	}
	return GroupKeys{topic: tk, all: all, store: store}
}

// backlog is the store keys of topic's backlog, T:backlog:<name>, in Store.Keys order: where
// messages published while the topic has no group wait for the first one.
func (e *Engine) backlog(topic string) []string {
	t := e.tag(topic)
	out := make([]string, len(e.store.Keys))
	for i, n := range e.store.Keys {
		out[i] = keys.Join(t, "backlog", n)
	}
	return out
}

// groupOnly is a group's own keys (engine's and store's), without the topic's.
func (k GroupKeys) groupOnly() []string { return k.all[topicKeyCount:] }

// storeOnly is a group's store keys, for publish's per-group KEYS.
func (k GroupKeys) storeOnly() []string { return k.all[len(k.all)-len(k.store):] }
