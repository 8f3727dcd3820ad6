package engine

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

// QueuePublish queues the first attempt of Publish on pipe (EVALSHA, no fallback), so that a
// partitioned topic sends the parts of a batch bound for one primary in one round trip. done,
// called once pipe ran, returns the result; again reports an attempt that stored nothing and
// needs Publish itself: a cached registry to learn, groups to sweep or to register again, the
// script not loaded on that primary yet.
func (e *Engine) QueuePublish(ctx context.Context, pipe redis.Pipeliner, p *backend.PublishParams) (done func() (res backend.PublishResult, again bool, err error)) {
	if err := e.Check(ctx, "topic", p.Topic); err != nil {
		return func() (backend.PublishResult, bool, error) { return backend.PublishResult{}, false, err }
	}
	if len(p.Messages) == 0 {
		return func() (backend.PublishResult, bool, error) { return backend.PublishResult{}, false, nil }
	}
	lane, token := e.lanes.Take()
	reg := e.cached(p.Topic)
	head := append(e.topicKeys(p.Topic).list(), e.backlog(p.Topic)...)
	keys, args := e.publishCall(p.Topic, head, reg, e.lanes.Field(lane), token, p.Messages)
	cmd := e.scripts["publish"].EvalSha(ctx, pipe, keys, args...)
	return func() (backend.PublishResult, bool, error) {
		e.lanes.Free(lane)
		if err := cmd.Err(); err != nil {
			if redis.HasErrorPrefix(err, "NOSCRIPT") {
				return backend.PublishResult{}, true, nil
			}
			return backend.PublishResult{}, false, e.scriptError(err)
		}
		res, err := cmd.Slice()
		if err != nil || len(res) == 0 {
			return backend.PublishResult{}, true, nil
		}
		switch backendkit.Int(res[0]) {
		case 1:
			return e.published(ctx, p.Topic, reg, res, len(p.Messages)), false, nil
		case 3:
			return backend.PublishResult{}, false, &backend.BacklogFullError{Topic: p.Topic, Limit: e.backlogLimit}
		case 0:
			_, _ = e.remember(p.Topic, res[1:]) // so that Publish's first try has it
		}
		return backend.PublishResult{}, true, nil
	}
}
