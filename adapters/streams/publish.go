package streams

import (
	"context"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

// Publish appends the batch to the topic's stream in one publish.lua call and returns the
// entry IDs, which are the delivery IDs. Every consumer group of the stream receives every
// entry. While the stream has no group the entries are the topic's backlog (see
// backend.BacklogLimitDefault), bounded by Options.BacklogLimit and BacklogTTL, which the
// first group registered takes. A delayed message is appended at once and parked by each
// group that reads it until it is due.
//
// When the script reports an ephemeral group of the topic whose members all expired, or a
// group delete left unfinished, Publish finishes it after the batch is stored; an error there
// is not the publish's (the next publish or Reclaim tries again).
func (b *Backend) Publish(ctx context.Context, p *backend.PublishParams) (backend.PublishResult, error) {
	if err := b.check(ctx, "topic", p.Topic); err != nil {
		return backend.PublishResult{}, err
	}
	if len(p.Messages) == 0 {
		return backend.PublishResult{}, nil
	}
	lane, token := b.lanes.Take()
	defer b.lanes.Free(lane)
	return b.publish(ctx, p, b.lanes.Field(lane), token)
}

// publish is Publish on a given lane (its meta field) and token: a resend of the call by the
// Redis client after a lost reply finds the lane's record its own and appends nothing twice
// (publish.lua). Tests resend a call with them.
func (b *Backend) publish(ctx context.Context, p *backend.PublishParams, lane, token string) (backend.PublishResult, error) {
	tk := b.topicKeys(p.Topic)
	res, err := publishScript.Run(ctx, b.client, tk.all(), b.publishArgs(p, lane, token)...).Slice()
	if err != nil {
		return backend.PublishResult{}, b.publishError(p.Topic, err)
	}
	return b.published(ctx, p.Topic, res), nil
}

// queuePublish queues Publish's call on pipe (EVALSHA, no fallback), so that a partitioned
// topic sends the parts of a batch bound for one primary in one round trip; done, once pipe
// ran, returns the result, or again when the script was not loaded on that primary yet and
// Publish itself must run (nothing was stored).
func (b *Backend) queuePublish(ctx context.Context, pipe redis.Pipeliner, p *backend.PublishParams) func() (backend.PublishResult, bool, error) {
	if err := b.check(ctx, "topic", p.Topic); err != nil {
		return func() (backend.PublishResult, bool, error) { return backend.PublishResult{}, false, err }
	}
	if len(p.Messages) == 0 {
		return func() (backend.PublishResult, bool, error) { return backend.PublishResult{}, false, nil }
	}
	lane, token := b.lanes.Take()
	cmd := publishScript.EvalSha(ctx, pipe, b.topicKeys(p.Topic).all(), b.publishArgs(p, b.lanes.Field(lane), token)...)
	return func() (backend.PublishResult, bool, error) {
		b.lanes.Free(lane)
		res, err := cmd.Slice()
		switch {
		case redis.HasErrorPrefix(err, "NOSCRIPT"):
			return backend.PublishResult{}, true, nil
		case err != nil:
			return backend.PublishResult{}, false, b.publishError(p.Topic, err)
		}
		return b.published(ctx, p.Topic, res), false, nil
	}
}

// publishError translates publish.lua's error replies.
func (b *Backend) publishError(topic string, err error) error {
	if strings.HasPrefix(err.Error(), "RELQFULL") {
		return &backend.BacklogFullError{Topic: topic, Limit: b.opts.BacklogLimit}
	}
	return backendkit.RedisFull(err)
}

// published is the result of publish.lua's reply res; it finishes what the script reported
// left to do (expired ephemeral groups, unfinished deletes).
func (b *Backend) published(ctx context.Context, topic string, res []any) backend.PublishResult {
	b.tidy(ctx, topic, toStrings(res[1]))
	return backend.PublishResult{IDs: toStrings(res[0]), BacklogDropped: backendkit.Int(res[2])}
}

// publishArgs is publish.lua's ARGV for p on lane and token.
func (b *Backend) publishArgs(p *backend.PublishParams, lane, token string) []any {
	names := b.codec.names()
	trim, trimArg := "", int64(0)
	switch {
	case b.opts.MaxLen > 0:
		trim, trimArg = "MAXLEN", b.opts.MaxLen
	case b.opts.MaxAge > 0:
		trim, trimArg = "MINID", backendkit.Millis(b.opts.MaxAge)
	}
	args := make([]any, 0, 9+len(names)+len(p.Messages)*(1+len(names)))
	args = append(args, lane, token, trim, trimArg, b.opts.BacklogLimit, backendkit.Millis(b.opts.BacklogTTL), b.opts.BatchSize,
		b.opts.BacklogFull == backend.BacklogRefuse, len(names))
	for _, n := range names {
		args = append(args, n)
	}
	for _, m := range p.Messages {
		args = append(args, backendkit.Millis(m.Delay))
		args = append(args, b.codec.values(m.Envelope)...)
	}
	return args
}

// EnsureGroup registers a durable consumer group on the topic's stream (and the stream),
// unless it exists, ephemeral or durable: the topic's first group takes the backlog,
// whatever p.FromOldest says; another group starts from the oldest retained entry when
// p.FromOldest (XGROUP CREATE ... 0), else from the next one ($). An existing group is left
// as it is.
func (b *Backend) EnsureGroup(ctx context.Context, p *backend.EnsureGroupParams) error {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return err
	}
	fromOldest := "0"
	if p.FromOldest {
		fromOldest = "1"
	}
	k := b.groupKeys(p.Topic, p.Group)
	return backendkit.RedisFull(ensureGroupScript.Run(ctx, b.client, k.registerKeys(), p.Group, fromOldest).Err())
}

// GroupNames lists the consumer groups of the topic's stream, sorted: relq's and any other
// program's (watermill-redisstream's, in FormatWatermill).
func (b *Backend) GroupNames(ctx context.Context, topic string) ([]string, error) {
	if err := b.check(ctx, "topic", topic); err != nil {
		return nil, err
	}
	infos, err := b.client.XInfoGroups(ctx, b.topicKeys(topic).stream).Result()
	if err != nil {
		if isNoSuchKey(err) {
			return []string{}, nil
		}
		return nil, err
	}
	groups := make([]string, 0, len(infos))
	for _, g := range infos {
		groups = append(groups, g.Name)
	}
	slices.Sort(groups)
	return groups, nil
}
