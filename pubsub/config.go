package pubsub

import (
	"fmt"
	"os"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/google/uuid"
	"github.com/relq/relq/backend"
)

// Defaults of PublisherConfig and SubscriberConfig.
const (
	MaxMessageBytesDefault   = 1 << 20
	ConcurrencyDefault       = 1
	PrefetchDefault          = 10
	LeaseDefault             = backend.LeaseDefault
	MaxDeliveriesDefault     = 10
	NackDelayMinDefault      = 100 * time.Millisecond
	NackDelayMaxDefault      = 30 * time.Second
	BlockDefault             = 500 * time.Millisecond
	CloseTimeoutDefault      = 30 * time.Second
	RetryMinDefault          = 50 * time.Millisecond
	RetryMaxDefault          = time.Second
	AckBatchDefault          = 1000
	EphemeralTTLDefault      = time.Minute
	ephemeralTTLMin          = 30 * time.Millisecond
	heartbeatFractionDefault = 3
)

// PublisherConfig configures a Publisher.
type PublisherConfig struct {
	// MaxMessageBytes bounds the encoded size of one message (UUID, metadata and payload).
	// Defaults to MaxMessageBytesDefault (1 MiB).
	MaxMessageBytes int
	// WaitReplicas, when positive, makes Publish wait (Redis WAIT) until that many replicas
	// acknowledged the write, so a failover loses nothing Publish reported as stored.
	// Defaults to 0 (no wait).
	WaitReplicas int
	// WaitTimeout bounds the WAIT; keep it below the Redis client's ReadTimeout (5s by default in
	// go-redis), which WAIT cannot outlast. Defaults to 1s when WaitReplicas is set.
	WaitTimeout time.Duration
	// Key, when set, gives the partition key of each message published to topic whose
	// metadata sets none (SetKey): on a partitioned topic, messages of one key go to one
	// partition, in publish order. "" leaves the message without a key (spread evenly).
	// Unpartitioned topics ignore keys. Defaults to nil (only SetKey's keys).
	Key func(topic string, msg *message.Message) string
}

// WithDefaults returns a copy with zero fields set to their defaults.
func (c PublisherConfig) WithDefaults() PublisherConfig {
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = MaxMessageBytesDefault
	}
	if c.WaitReplicas > 0 && c.WaitTimeout == 0 {
		c.WaitTimeout = time.Second
	}
	return c
}

func (c PublisherConfig) validate() error {
	switch {
	case c.MaxMessageBytes < 0:
		return &backend.ConfigError{Field: "MaxMessageBytes", Reason: "must not be negative"}
	case c.WaitReplicas < 0:
		return &backend.ConfigError{Field: "WaitReplicas", Reason: "must not be negative"}
	case c.WaitTimeout < 0:
		return &backend.ConfigError{Field: "WaitTimeout", Reason: "must not be negative"}
	}
	return nil
}

// Backoff returns the redelivery delay after a Nack of the given attempt (1 on the first
// delivery).
type Backoff func(attempt int) time.Duration

// ExponentialBackoff doubles from min per attempt up to max.
func ExponentialBackoff(min, max time.Duration) Backoff {
	return func(attempt int) time.Duration {
		d := min
		for i := 1; i < attempt && d < max; i++ {
			d *= 2
		}
		if d > max {
			d = max
		}
		return d
	}
}

// SubscriberConfig configures a Subscriber. Every Subscribe call of one Subscriber uses it.
type SubscriberConfig struct {
	// Group is the consumer group: every group receives every message, and the consumers of
	// one group share its messages. Defaults to DefaultGroup ("default").
	Group string
	// Consumer names this subscriber inside its group, for leases and stats. Each Subscribe
	// call holds its deliveries under this name with a suffix of its own
	// ("worker-1.3f9a0c1d2e4b"), so that no two subscriptions share a fencing token. At most
	// 187 bytes.
	// Defaults to "<hostname>-<pid>-<random>".
	Consumer string
	// Concurrency is how many messages one Subscribe call has in flight (delivered and not
	// yet acked or nacked). Defaults to 1, so handlers see messages one at a time in order.
	Concurrency int
	// Ordered hands out the messages of each partition one at a time, each once the one
	// before it was acked, dead-lettered, or put back for a retry whose delay the partition
	// then waits out: the messages of one key (SetKey, PublisherConfig.Key) are handled in
	// publish order, across nacks, crashes, lease expiries and a change of the group's shares.
	// A message that keeps failing holds back the rest of its partition until it is
	// dead-lettered. Partitions are still handled side by side, up to Concurrency. Every
	// subscription of the group should set it alike. Only relq's adapters honour it. See
	// docs/partitions.md. Defaults to false.
	Ordered bool
	// Prefetch is how many claimed messages wait in memory, beyond those in flight, so a
	// handler rarely waits for a round trip. They hold leases too; Close releases them at
	// once. Defaults to PrefetchDefault (10); set -1 for no prefetch.
	Prefetch int
	// Lease is how long a claimed message stays with this subscriber without a heartbeat
	// before another may reclaim it. Defaults to LeaseDefault (30s).
	Lease time.Duration
	// HeartbeatInterval is how often leases of held messages are extended.
	// Defaults to Lease/3.
	HeartbeatInterval time.Duration
	// ReclaimInterval is how often this subscriber sweeps its group for expired leases, with
	// ±20% jitter. Between sweeps it also returns expired leases a few milliseconds after
	// the earliest one expires, where the backend reports that time
	// (ReclaimResult.NextExpiry); leases taken after a sweep are found by the next one, so
	// keep ReclaimInterval below the Lease of the group's consumers. Defaults to Lease/2.
	ReclaimInterval time.Duration
	// MaxDeliveries is how many deliveries a message gets before it is dead-lettered, on a
	// nack or when its lease expires. Defaults to MaxDeliveriesDefault (10); -1 means no limit.
	MaxDeliveries int
	// NackBackoff gives the redelivery delay after a Nack; SetNackDelay overrides it per
	// message. Defaults to ExponentialBackoff(NackDelayMinDefault, NackDelayMaxDefault).
	NackBackoff Backoff
	// Block bounds one blocking claim. A stop (Close, or Subscribe's ctx cancelled) ends a
	// blocked claim at once, except on a backend that must let it run to its end (list's
	// BLMOVE), where Close may wait up to Block for it. Defaults to BlockDefault (500ms).
	Block time.Duration
	// CloseTimeout is how long Close waits for in-flight handlers to ack or nack; their
	// leases then expire and the messages are reclaimed. Defaults to CloseTimeoutDefault (30s).
	CloseTimeout time.Duration
	// RetryMin and RetryMax bound the capped exponential backoff between attempts while
	// Redis is unreachable. Default to RetryMinDefault (50ms) and RetryMaxDefault (1s).
	RetryMin time.Duration
	RetryMax time.Duration
	// FromOldest makes a new group start from the oldest retained message on backends with
	// Capabilities.NewGroupReplay. Defaults to false (new messages only). Not with Ephemeral.
	FromOldest bool
	// Ephemeral makes Group an ephemeral group (request-reply, per-instance broadcast): it
	// exists while a subscription of it runs, and its keys go with the last one. Each Subscribe
	// call joins the group as a member (SubscribeInitialize joins for EphemeralTTL, until a
	// Subscribe takes over), renews its membership every EphemeralTTL/3, and leaves once it
	// stopped and flushed its acks; the last member's leave deletes the group. A process that
	// dies leaves its memberships to expire after EphemeralTTL. The backend must implement
	// Ephemeral (list, zset and streams do); otherwise NewSubscriber fails with a
	// *ConfigError. Defaults to false: the group is durable and stays until deleted.
	Ephemeral bool
	// EphemeralTTL is how long an ephemeral group's membership lasts without a renewal: the
	// longest a group outlives a subscriber process that died. Renewed every EphemeralTTL/3,
	// so a renewal may fail twice, or be late by up to two thirds of it (a GC pause, a slow
	// Redis), before the membership runs out. At least 30ms, and only with Ephemeral.
	// Defaults to EphemeralTTLDefault (1m).
	EphemeralTTL time.Duration
	// AckBatch bounds the acks, and the nacks, that one Backend call carries, so that no call
	// makes a script too long for Redis or for the client's ReadTimeout; more waiting go in
	// the next calls, and claiming pauses while more than AckBatch wait. A call the client
	// times out is split in halves and sent again (see the acker). Defaults to
	// AckBatchDefault (1000, the backends' own BatchSizeDefault).
	AckBatch int
}

// WithDefaults returns a copy with zero fields set to their defaults.
func (c SubscriberConfig) WithDefaults() SubscriberConfig {
	if c.Group == "" {
		c.Group = backend.DefaultGroup
	}
	if c.Consumer == "" {
		host, _ := os.Hostname()
		if backend.ValidateName("consumer", host) != nil {
			host = "consumer"
		}
		c.Consumer = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), uuid.NewString()[:8])
	}
	if c.Concurrency == 0 {
		c.Concurrency = ConcurrencyDefault
	}
	if c.Prefetch == 0 {
		c.Prefetch = PrefetchDefault
	} else if c.Prefetch < 0 {
		c.Prefetch = 0
	}
	if c.Lease == 0 {
		c.Lease = LeaseDefault
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = c.Lease / heartbeatFractionDefault
	}
	if c.ReclaimInterval == 0 {
		c.ReclaimInterval = c.Lease / 2
	}
	if c.MaxDeliveries == 0 {
		c.MaxDeliveries = MaxDeliveriesDefault
	} else if c.MaxDeliveries < 0 {
		c.MaxDeliveries = 0
	}
	if c.NackBackoff == nil {
		c.NackBackoff = ExponentialBackoff(NackDelayMinDefault, NackDelayMaxDefault)
	}
	if c.Block == 0 {
		c.Block = BlockDefault
	}
	if c.CloseTimeout == 0 {
		c.CloseTimeout = CloseTimeoutDefault
	}
	if c.RetryMin == 0 {
		c.RetryMin = RetryMinDefault
	}
	if c.RetryMax == 0 {
		c.RetryMax = RetryMaxDefault
	}
	if c.AckBatch == 0 {
		c.AckBatch = AckBatchDefault
	}
	if c.Ephemeral && c.EphemeralTTL == 0 {
		c.EphemeralTTL = EphemeralTTLDefault
	}
	return c
}

// validate checks a config after WithDefaults.
func (c SubscriberConfig) validate() error {
	if err := backend.ValidateName("group", c.Group); err != nil {
		return &backend.ConfigError{Field: "Group", Reason: err.Error()}
	}
	if err := backend.ValidateName("consumer", c.Consumer); err != nil {
		return &backend.ConfigError{Field: "Consumer", Reason: err.Error()}
	}
	switch {
	case len(c.Consumer) > backend.MaxNameLength-consumerSuffixLen:
		return &backend.ConfigError{Field: "Consumer", Reason: fmt.Sprintf("longer than %d bytes (each Subscribe call adds a %d-byte suffix)",
			backend.MaxNameLength-consumerSuffixLen, consumerSuffixLen)}
	case c.Concurrency < 1:
		return &backend.ConfigError{Field: "Concurrency", Reason: "must be at least 1"}
	case c.Lease < 10*time.Millisecond:
		return &backend.ConfigError{Field: "Lease", Reason: "must be at least 10ms"}
	case c.HeartbeatInterval <= 0 || c.HeartbeatInterval >= c.Lease:
		return &backend.ConfigError{Field: "HeartbeatInterval", Reason: "must be positive and shorter than Lease"}
	case c.ReclaimInterval <= 0:
		return &backend.ConfigError{Field: "ReclaimInterval", Reason: "must be positive"}
	case c.Block < time.Millisecond:
		return &backend.ConfigError{Field: "Block", Reason: "must be at least 1ms"}
	case c.CloseTimeout < 0:
		return &backend.ConfigError{Field: "CloseTimeout", Reason: "must not be negative"}
	case c.RetryMin <= 0 || c.RetryMax < c.RetryMin:
		return &backend.ConfigError{Field: "RetryMax", Reason: "RetryMin must be positive and RetryMax at least RetryMin"}
	case c.AckBatch < 1:
		return &backend.ConfigError{Field: "AckBatch", Reason: "must be at least 1"}
	case !c.Ephemeral && c.EphemeralTTL != 0:
		return &backend.ConfigError{Field: "EphemeralTTL", Reason: "is set but Ephemeral is not"}
	case c.Ephemeral && c.EphemeralTTL < ephemeralTTLMin:
		return &backend.ConfigError{Field: "EphemeralTTL", Reason: "must be at least 30ms (it is renewed every EphemeralTTL/3)"}
	case c.Ephemeral && c.FromOldest:
		return &backend.ConfigError{Field: "FromOldest", Reason: "cannot be set with Ephemeral: an ephemeral group starts with the next publish (or takes the topic's backlog)"}
	}
	return nil
}

// renewInterval is how often a subscription of an ephemeral group renews its membership.
func (c SubscriberConfig) renewInterval() time.Duration { return c.EphemeralTTL / 3 }
