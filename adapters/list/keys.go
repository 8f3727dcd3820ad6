package list

import (
	"github.com/google/uuid"
	"github.com/relq/relq/internal/keys"
)

// topicKeys are the keys shared by every group of one topic.
type topicKeys struct {
	seq    string // STRING: the delivery ID counter
	bodies string // HASH id -> envelope bytes, stored once for all groups
	refs   string // HASH id -> number of groups still holding the body, when more than one
	groups string // SET of registered groups
}

// groupKeys are the keys of one group of one topic.
type groupKeys struct {
	ready      string // LIST of "id@ms" (ready since ms): LPUSH at the back, claimed from the right
	processing string // LIST of ids claimed (BLMOVE/LMOVE target), newest on the left
	delayed    string // ZSET id -> due time (ms)
	leases     string // ZSET id -> lease deadline (ms)
	holders    string // HASH id -> "consumer:pending since (ms)" (":since" for an orphan lease)
	attempts   string // HASH id -> deliveries so far
	dead       string // ZSET id -> dead-lettered at (ms)
	reasons    string // HASH id -> dead-letter reason
	counters   string // HASH of cumulative counters
	topic      topicKeys
}

// topicKeys returns the keys of topic. Names are validated before they get here, so the hash
// tag {prefix:topic} keeps every key of the topic in one Cluster slot.
func (b *Backend) topicKeys(topic string) topicKeys {
	tag := keys.Tag(b.opts.Prefix, topic)
	return topicKeys{
		seq:    keys.Join(tag, "seq"),
		bodies: keys.Join(tag, "bodies"),
		refs:   keys.Join(tag, "refs"),
		groups: keys.Join(tag, "groups"),
	}
}

// groupKeys returns the keys of group on topic. Group names hold no ':', so the keys of two
// groups cannot collide.
func (b *Backend) groupKeys(topic, group string) groupKeys {
	tag := keys.Tag(b.opts.Prefix, topic)
	g := func(name string) string { return keys.Join(tag, "g", group, name) }
	return groupKeys{
		ready:      g("ready"),
		processing: g("processing"),
		delayed:    g("delayed"),
		leases:     g("leases"),
		holders:    g("holders"),
		attempts:   g("attempts"),
		dead:       g("dead"),
		reasons:    g("dead_reasons"),
		counters:   g("counters"),
		topic:      b.topicKeys(topic),
	}
}

// The KEYS lists of the scripts, in the order their headers give.

func (k groupKeys) claimKeys() []string {
	return []string{k.ready, k.processing, k.delayed, k.leases, k.holders, k.attempts,
		k.counters, k.topic.bodies}
}

func (k groupKeys) registerKeys() []string {
	return []string{k.ready, k.processing, k.leases, k.holders, k.attempts, k.counters,
		k.topic.bodies}
}

func (k groupKeys) ackKeys() []string {
	return []string{k.processing, k.leases, k.holders, k.attempts, k.counters, k.topic.bodies,
		k.topic.refs}
}

// settleKeys serve nack.lua and reclaim.lua.
func (k groupKeys) settleKeys() []string {
	return []string{k.ready, k.processing, k.delayed, k.holders, k.attempts, k.leases, k.dead,
		k.reasons, k.counters}
}

func (k groupKeys) extendKeys() []string {
	return []string{k.leases, k.holders, k.attempts}
}

// publishKeys are the three keys of the group that publish.lua writes.
func (k groupKeys) publishKeys() []string {
	return []string{k.ready, k.delayed, k.counters}
}

func (k groupKeys) deadLettersKeys() []string {
	return []string{k.dead, k.reasons, k.attempts, k.topic.bodies}
}

func (k groupKeys) requeueKeys() []string {
	return []string{k.ready, k.dead, k.reasons, k.attempts, k.topic.bodies}
}

func (k groupKeys) purgeKeys() []string {
	return []string{k.dead, k.reasons, k.attempts, k.topic.bodies, k.topic.refs}
}

func (k groupKeys) statsKeys() []string {
	return []string{k.ready, k.delayed, k.processing, k.dead, k.holders, k.counters}
}

func (k groupKeys) injectKeys() []string {
	return []string{k.topic.seq, k.topic.bodies, k.topic.groups, k.ready, k.counters}
}

// batchKey returns a new idempotency key for one Publish call on topic (see publish.lua).
func (b *Backend) batchKey(topic string) string {
	return keys.Join(keys.Tag(b.opts.Prefix, topic), "batch", uuid.NewString())
}
