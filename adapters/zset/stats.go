package zset

import (
	"context"

	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/pubsub"
)

// Stats reads the group's state in one read-only script, so the numbers are one snapshot on
// the Redis clock. Ready counts the members of the ready ZSET whose due time has come,
// Delayed the others (delayed publishes and nack backoff). OldestReadyAge is measured from the
// due time of the earliest due member (a released or immediately retried message keeps the due
// time it had); OldestPendingAge from pending_at, the time each pending id was claimed.
func (b *Backend) Stats(ctx context.Context, p *pubsub.StatsParams) (pubsub.Stats, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return pubsub.Stats{}, err
	}
	k := b.groupKeys(p.Topic, p.Group)
	res, err := statsScript.Run(ctx, b.client, k.statsKeys()).Slice()
	if err != nil {
		return pubsub.Stats{}, err
	}
	return backendkit.DecodeStats(p.Topic, p.Group, res), nil
}
