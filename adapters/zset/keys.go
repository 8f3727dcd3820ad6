package zset

import (
	"github.com/google/uuid"
	"github.com/relq/relq/internal/keys"
)

// topicKeys are the keys shared by every group of one topic.
type topicKeys struct {
	seq        string // STRING: the delivery ID counter
	bodies     string // HASH id -> envelope bytes, stored once for all groups
	refs       string // HASH id -> number of groups still holding the body, when more than one
	groups     string // SET of registered groups
	priorities string // HASH id -> priority, for messages whose priority is not 0
}

// groupKeys are the keys of one group of one topic.
type groupKeys struct {
	ready     string // ZSET "<rank>:<id>" -> due time (ms): due and delayed messages alike
	wake      string // LIST of wake-up tokens (at most one) for consumers blocked in BLPOP
	leases    string // ZSET id -> lease deadline (ms); its members are the pending deliveries
	holders   string // HASH id -> consumer holding the lease
	attempts  string // HASH id -> deliveries so far (the fencing token with holder)
	pendingAt string // ZSET id -> pending since (ms), for OldestPendingAge
	dueAt     string // HASH id -> due time (ms) a pending delivery had when claimed
	dead      string // ZSET id -> dead-lettered at (ms)
	reasons   string // HASH id -> dead-letter reason
	counters  string // HASH of cumulative counters
	topic     topicKeys
}

// topicKeys returns the keys of topic. Names are validated before they get here, so the hash
// tag {prefix:topic} keeps every key of the topic in one Cluster slot.
func (b *Backend) topicKeys(topic string) topicKeys {
	tag := keys.Tag(b.opts.Prefix, topic)
	return topicKeys{
		seq:        keys.Join(tag, "seq"),
		bodies:     keys.Join(tag, "bodies"),
		refs:       keys.Join(tag, "refs"),
		groups:     keys.Join(tag, "zgroups"),
		priorities: keys.Join(tag, "priorities"),
	}
}

// groupKeys returns the keys of group on topic. Group and consumer names hold no ':', so the
// keys of two groups, or two consumers' wake-up lists, cannot collide.
func (b *Backend) groupKeys(topic, group string) groupKeys {
	tag := keys.Tag(b.opts.Prefix, topic)
	g := func(name string) string { return keys.Join(tag, "g", group, name) }
	return groupKeys{
		ready:     g("ready"),
		wake:      g("wake"),
		leases:    g("leases"),
		holders:   g("holders"),
		attempts:  g("attempts"),
		pendingAt: g("pending_at"),
		dueAt:     g("due_at"),
		dead:      g("dead"),
		reasons:   g("dead_reasons"),
		counters:  g("counters"),
		topic:     b.topicKeys(topic),
	}
}

// ownWake is consumer's own wake-up list, which its blocking claim watches besides the group's
// and pushes a token onto when the message it waits for is due.
func (k groupKeys) ownWake(consumer string) string { return keys.Join(k.wake, consumer) }

// The KEYS lists of the scripts, in the order their headers give.

func (k groupKeys) claimKeys() []string {
	return []string{k.ready, k.leases, k.holders, k.attempts, k.pendingAt, k.dueAt, k.counters,
		k.topic.bodies, k.wake}
}

func (k groupKeys) ackKeys() []string {
	return []string{k.leases, k.holders, k.attempts, k.pendingAt, k.dueAt, k.counters,
		k.topic.bodies, k.topic.refs, k.topic.priorities}
}

// settleKeys serve nack.lua and reclaim.lua.
func (k groupKeys) settleKeys() []string {
	return []string{k.ready, k.leases, k.holders, k.attempts, k.pendingAt, k.dueAt, k.dead,
		k.reasons, k.counters, k.topic.priorities, k.wake}
}

func (k groupKeys) extendKeys() []string {
	return []string{k.leases, k.holders, k.attempts}
}

// publishKeys are the three keys of the group that publish.lua writes.
func (k groupKeys) publishKeys() []string {
	return []string{k.ready, k.wake, k.counters}
}

func (k groupKeys) deadLettersKeys() []string {
	return []string{k.dead, k.reasons, k.attempts, k.topic.bodies}
}

func (k groupKeys) requeueKeys() []string {
	return []string{k.ready, k.dead, k.reasons, k.attempts, k.topic.bodies, k.topic.priorities, k.wake}
}

func (k groupKeys) purgeKeys() []string {
	return []string{k.dead, k.reasons, k.attempts, k.topic.bodies, k.topic.refs, k.topic.priorities}
}

func (k groupKeys) statsKeys() []string {
	return []string{k.ready, k.pendingAt, k.dead, k.counters}
}

func (k groupKeys) injectKeys() []string {
	return []string{k.topic.seq, k.topic.bodies, k.topic.groups, k.ready, k.counters, k.wake}
}

// batchKey returns a new idempotency key for one Publish call on topic (see publish.lua).
func (b *Backend) batchKey(topic string) string {
	return keys.Join(keys.Tag(b.opts.Prefix, topic), "batch", uuid.NewString())
}
