package streams

import "github.com/relq/relq/internal/keys"

// topicKeys are the keys shared by every group of one topic.
type topicKeys struct {
	base      string // the hash-tagged start of relq's keys of the topic
	stream    string // STREAM: the messages, one entry each
	published string // STRING: the topic's publish counter
	delayed   string // ZSET id -> due ms: entries published with a delay
	deadRefs  string // HASH id -> number of groups keeping it as a dead letter
	meta      string // HASH backlog_from: the entry ID after which the backlog starts; p:<instance>:<n>: publish lanes (publish.lua)
	paused    string // SET of the paused groups
	ephemeral string // ZSET group -> ms when its last membership runs out: the ephemeral groups
	deleting  string // SET of the deleted groups whose dead letters are still being released
	tombs     string // ZSET group -> when its tombstone expires (ms): groups an operator deleted
}

// groupKeys are relq's keys of one consumer group; the group itself lives in the stream.
type groupKeys struct {
	group       string
	retry       string // ZSET padded id -> due ms: deliveries parked for a retry
	leases      string // HASH consumer -> lease ms
	pendingAt   string // ZSET id -> claimed at ms
	dead        string // STREAM: dead letters
	deadIndex   string // HASH id -> dead-letter entry id
	deadOrder   string // ZSET padded dead-letter entry id -> 0: dead letters by rank, for paging
	counters    string // HASH: cumulative counters and published_base
	wake        string // STREAM of its last entry: scripts that park deliveries append, to wake claims
	reclaimFrom string // HASH consumer -> PEL entry ID: where Reclaim's walk of a large holder goes on
	members     string // ZSET consumer -> membership deadline ms, of an ephemeral group
	marks       string // ZSET padded id..":d" (deleted) or ":r" (run now) -> 0: unread entries an operator changed
	deadGone    string // STREAM: a deleted group's dead letters, while their references are released
	holders     string // ZSET consumer -> ms: consumers that may hold entries, by when the earliest of their leases may expire
	quiet       string // ZSET consumer -> ms: consumers relq's claims made, by when they count as quiet (no claim since)
	topic       topicKeys
}

// topicKeys returns the keys of topic. Every key shares one hash tag, so every script touches
// one Cluster slot: {prefix:topic} in FormatNative; in FormatWatermill the stream is the bare
// topic (watermill-redisstream's name) and relq's keys are tagged {topic}, which hashes to the
// stream's slot. Names are validated before they get here: they hold no braces.
func (b *Backend) topicKeys(topic string) topicKeys {
	var base, stream string
	if b.opts.Format == FormatWatermill {
		stream = topic
		base = keys.Join("{"+topic+"}", b.opts.Prefix)
	} else {
		base = keys.Tag(b.opts.Prefix, topic)
		stream = keys.Join(base, "stream")
	}
	return topicKeys{
		base:      base,
		stream:    stream,
		published: keys.Join(base, "published"),
		delayed:   keys.Join(base, "delayed"),
		deadRefs:  keys.Join(base, "dead_refs"),
		meta:      keys.Join(base, "meta"),
		paused:    keys.Join(base, "paused"),
		ephemeral: keys.Join(base, "ephemeral"),
		deleting:  keys.Join(base, "deleting"),
		tombs:     keys.Join(base, "tombs"),
	}
}

// groupKeys returns the keys of group on topic. Group names hold no ':', so the keys of two
// groups cannot collide.
func (b *Backend) groupKeys(topic, group string) groupKeys {
	tk := b.topicKeys(topic)
	g := func(name string) string { return keys.Join(tk.base, "g", group, name) }
	return groupKeys{
		group:       group,
		retry:       g("retry"),
		leases:      g("leases"),
		pendingAt:   g("pending_at"),
		dead:        g("dead"),
		deadIndex:   g("dead_index"),
		deadOrder:   g("dead_order"),
		counters:    g("counters"),
		wake:        g("wake"),
		reclaimFrom: g("reclaim_from"),
		members:     g("members"),
		marks:       g("marks"),
		deadGone:    g("dead_gone"),
		holders:     g("holders"),
		quiet:       g("quiet"),
		topic:       tk,
	}
}

// The KEYS lists of the scripts, in the order their headers give.

// all lists every key of the topic: those the topic's last group takes along. The tombs ZSET
// is not among them: it outlives the topic by design (see luakit's common.lua), so scripts
// that need it get it after the keys they take along.
func (k topicKeys) all() []string {
	return []string{k.stream, k.published, k.delayed, k.deadRefs, k.meta, k.paused, k.ephemeral, k.deleting}
}

// own lists every key of the group, the tomb of its dead letters included.
func (k groupKeys) own() []string {
	return []string{k.retry, k.leases, k.pendingAt, k.counters, k.wake, k.reclaimFrom, k.members, k.marks,
		k.dead, k.deadIndex, k.deadOrder, k.deadGone, k.holders, k.quiet}
}

// topicAnd is the topic's keys (all) followed by more.
func (k topicKeys) topicAnd(more ...string) []string {
	return append(k.all(), more...)
}

// registerKeys are the topic's keys, the group's own, then the topic's tombs.
func (k groupKeys) registerKeys() []string {
	return append(k.topic.topicAnd(k.own()...), k.topic.tombs)
}

func (k groupKeys) claimKeys() []string {
	return []string{k.topic.stream, k.retry, k.topic.delayed, k.counters, k.leases, k.pendingAt, k.topic.published, k.wake,
		k.dead, k.deadIndex, k.topic.deadRefs, k.deadOrder, k.topic.paused, k.marks, k.topic.tombs, k.holders, k.quiet}
}

func (k groupKeys) ackKeys() []string {
	return []string{k.topic.stream, k.retry, k.counters, k.pendingAt, k.topic.deadRefs}
}

func (k groupKeys) nackKeys() []string {
	return []string{k.topic.stream, k.retry, k.counters, k.pendingAt, k.dead, k.deadIndex, k.topic.deadRefs, k.deadOrder, k.wake}
}

func (k groupKeys) extendKeys() []string {
	return []string{k.topic.stream, k.leases}
}

func (k groupKeys) reclaimKeys() []string {
	return []string{k.topic.stream, k.retry, k.counters, k.pendingAt, k.leases, k.dead, k.deadIndex,
		k.topic.deadRefs, k.topic.delayed, k.deadOrder, k.wake, k.reclaimFrom, k.topic.ephemeral, k.topic.deleting,
		k.holders, k.quiet}
}

func (k groupKeys) deadLettersKeys() []string {
	return []string{k.dead, k.deadOrder}
}

func (k groupKeys) requeueKeys() []string {
	return []string{k.topic.stream, k.retry, k.dead, k.deadIndex, k.topic.deadRefs, k.deadOrder, k.wake}
}

func (k groupKeys) purgeKeys() []string {
	return []string{k.topic.stream, k.dead, k.deadIndex, k.topic.deadRefs, k.deadOrder}
}

func (k groupKeys) statsKeys() []string {
	return []string{k.topic.stream, k.retry, k.topic.delayed, k.counters, k.topic.published, k.pendingAt, k.dead, k.topic.paused,
		k.marks}
}

func (k groupKeys) injectKeys() []string {
	return []string{k.topic.stream, k.topic.published, k.counters}
}

// inspectKeys are the keys the Admin scripts read and write of a group and its topic.
func (k groupKeys) inspectKeys() []string {
	return k.topic.topicAnd(k.retry, k.pendingAt, k.leases, k.dead, k.deadIndex, k.deadOrder, k.marks, k.wake)
}
