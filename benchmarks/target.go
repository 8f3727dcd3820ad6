package benchmarks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/seal"
	"github.com/relq/relq/pubsub"
)

// BaselineName names watermill-redisstream in reports.
const BaselineName = "redisstream"

// group is the consumer group of every subscriber of a measurement.
const group = "bench"

// Target is one implementation under measurement: a relq backend or the baseline.
type Target struct {
	// Name is "list", "zset", "streams" or BaselineName.
	Name string
	// newBackend builds the relq backend; nil for the baseline.
	newBackend func(c redis.UniversalClient, prefix string) (backend.Backend, error)
}

// Baseline reports whether this is watermill-redisstream.
func (t Target) Baseline() bool { return t.newBackend == nil }

// Targets returns the three relq backends and the baseline, in report order.
func Targets() []Target {
	return []Target{
		{Name: "list", newBackend: func(c redis.UniversalClient, p string) (backend.Backend, error) {
			return list.New(c, list.Options{Prefix: p})
		}},
		{Name: "zset", newBackend: func(c redis.UniversalClient, p string) (backend.Backend, error) {
			return zset.New(c, zset.Options{Prefix: p})
		}},
		{Name: "streams", newBackend: func(c redis.UniversalClient, p string) (backend.Backend, error) {
			return streams.New(c, streams.Options{Prefix: p})
		}},
		{Name: BaselineName},
	}
}

// Capabilities are the relq backend's; the baseline has none of them (no delay at all).
func (t Target) Capabilities() backend.Capabilities {
	if t.Baseline() {
		return backend.Capabilities{}
	}
	c := redis.NewClient(&redis.Options{}) // never dialled: New does not talk to Redis
	defer c.Close()
	be, err := t.newBackend(c, "caps")
	if err != nil {
		return backend.Capabilities{}
	}
	return be.Capabilities()
}

// instance is a target set up for one measurement: its own prefix (relq) or stream
// (baseline), so measurements never see each other's keys.
type instance struct {
	target Target
	// client is the caller's, for the measurement's own calls (INFO, clean-up).
	client *redis.Client
	// app is the relq backend's client, counted by sent like the baseline's clients.
	app     *redis.Client
	sent    *sentCounter
	prefix  string
	topic   string
	backend backend.Backend // nil for the baseline
	closers []func() error
	// tune, when set, adjusts the options of the clients the instance makes.
	tune func(*redis.Options)
}

func randomID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// open sets the target up under a fresh prefix named after scope.
func (t Target) open(client *redis.Client, scope string) (*instance, error) {
	return t.openTuned(client, scope, nil)
}

// openTuned is open with tune applied to the options of the instance's clients.
func (t Target) openTuned(client *redis.Client, scope string, tune func(*redis.Options)) (*instance, error) {
	in := &instance{
		target: t, client: client, sent: &sentCounter{}, tune: tune,
		prefix: fmt.Sprintf("relqbench-%s-%s-%s", scope, t.Name, randomID()),
	}
	if t.Baseline() {
		// redisstream names the stream after the topic, and has no prefix.
		in.topic = in.prefix
		return in, nil
	}
	in.topic = "bench"
	in.app = in.ownClient()
	be, err := t.newBackend(in.app, in.prefix)
	if err != nil {
		_ = in.app.Close()
		return nil, err
	}
	seal.Open(be).AddWaitHook(in.sent) // blocking claims run on connections of their own
	in.backend = be
	return in, nil
}

// ownClient returns a new client to the same server: watermill-redisstream's Publisher and
// Subscriber close the client they were given, so each gets its own. Its connections are
// named after the prefix, so SLOWLOG and CLIENT LIST tell them from everyone else's.
func (in *instance) ownClient() *redis.Client {
	opts := *in.client.Options()
	opts.ClientName = in.prefix
	if in.tune != nil {
		in.tune(&opts)
	}
	c := redis.NewClient(&opts)
	c.AddHook(in.sent)
	return c
}

func (in *instance) publisher() (message.Publisher, error) {
	var (
		pub message.Publisher
		err error
	)
	if in.target.Baseline() {
		pub, err = redisstream.NewPublisher(redisstream.PublisherConfig{Client: in.ownClient()}, watermill.NopLogger{})
	} else {
		pub, err = pubsub.NewPublisher(in.backend, pubsub.PublisherConfig{}, watermill.NopLogger{})
	}
	if err != nil {
		return nil, err
	}
	in.closers = append(in.closers, pub.Close)
	return pub, nil
}

// subscriberOptions tune a subscriber away from the library defaults, for recovery only.
type subscriberOptions struct {
	// lease is redisstream's MaxIdleTime; relq's subscriber lease stays at its default.
	lease time.Duration
	// scan is relq's ReclaimInterval or redisstream's ClaimInterval; zero keeps the default.
	scan time.Duration
	// concurrency is relq's Concurrency; zero keeps the default. redisstream has none: one
	// message in flight per subscriber.
	concurrency int
}

// subscriber returns a subscriber in the measurement's group with the library's defaults
// (relq: Concurrency 1, Prefetch 10, Block 500ms; redisstream: BlockTime 100ms, COUNT 1).
func (in *instance) subscriber(consumer string, o subscriberOptions) (message.Subscriber, error) {
	var (
		sub message.Subscriber
		err error
	)
	if in.target.Baseline() {
		sub, err = redisstream.NewSubscriber(redisstream.SubscriberConfig{
			Client: in.ownClient(), ConsumerGroup: group, Consumer: consumer,
			MaxIdleTime: o.lease, ClaimInterval: o.scan,
		}, watermill.NopLogger{})
	} else {
		sub, err = pubsub.NewSubscriber(in.backend, pubsub.SubscriberConfig{
			Group: group, Consumer: consumer, ReclaimInterval: o.scan, Concurrency: o.concurrency,
		}, watermill.NopLogger{})
	}
	if err != nil {
		return nil, err
	}
	in.closers = append(in.closers, sub.Close)
	return sub, nil
}

// ensureGroup creates the group so that a backlog published before anyone subscribes is
// kept for it. redisstream's group starts at the stream's first entry (OldestId "0"), so
// its subscribers read a backlog anyway.
func (in *instance) ensureGroup(ctx context.Context) error {
	if in.target.Baseline() {
		err := in.client.XGroupCreateMkStream(ctx, in.topic, group, "0").Err()
		if err != nil && err.Error() != "BUSYGROUP Consumer Group name already exists" {
			return err
		}
		return nil
	}
	return in.backend.EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: in.topic, Group: group})
}

// close shuts the instance down and deletes its keys.
func (in *instance) close(ctx context.Context) error {
	return errors.Join(in.shutdown(), in.clean(ctx))
}

// shutdown closes the subscribers and publishers, all at once (a relq subscriber's Close
// waits for its blocking claim, so one after the other would take 16 × Block), then the relq
// backend and client. Closing sends what a subscriber still has to send (relq's coalesced acks).
func (in *instance) shutdown() error {
	errs := make([]error, len(in.closers), len(in.closers)+1)
	var wg sync.WaitGroup
	for i, f := range in.closers {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = f() }()
	}
	wg.Wait()
	in.closers = nil
	if c, ok := in.backend.(io.Closer); ok {
		errs = append(errs, c.Close()) // its blocking claims' connections
	}
	if in.app != nil {
		errs = append(errs, in.app.Close())
		in.app = nil
	}
	return errors.Join(errs...)
}

// clean deletes the instance's keys: the baseline's stream, or every key of the relq prefix
// ("{prefix:<topic>}..." and "prefix:..."). Prefixes hold no glob characters.
func (in *instance) clean(ctx context.Context) error {
	if in.target.Baseline() {
		return in.client.Del(ctx, in.topic).Err()
	}
	for _, pattern := range []string{"{" + in.prefix + ":*", in.prefix + ":*"} {
		iter := in.client.Scan(ctx, 0, pattern, 1000).Iterator()
		var batch []string
		for iter.Next(ctx) {
			batch = append(batch, iter.Val())
			if len(batch) == 1000 {
				if err := in.client.Unlink(ctx, batch...).Err(); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
		if err := iter.Err(); err != nil {
			return err
		}
		if len(batch) > 0 {
			if err := in.client.Unlink(ctx, batch...).Err(); err != nil {
				return err
			}
		}
	}
	return nil
}
