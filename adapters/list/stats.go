package list

import (
	"context"

	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/pubsub"
)

// ageWindow is how many entries Stats reads at each end of ready (OldestReadyAge) and at the
// oldest end of processing (OldestPendingAge).
const ageWindow = 100

// Stats reads the group's state in one read-only script, so the numbers are one snapshot and
// the ages are measured on the Redis clock. OldestReadyAge comes from the ready-since time each
// ready entry carries ("id@ms"), looked at among the ageWindow entries at each end of the
// ready list (see stats.lua for when that is exact); OldestPendingAge from the pending-since time
// kept with each holder ("consumer:since": when the id was claimed or, for an orphan, first seen
// by Reclaim), among the ageWindow oldest claims at the right end of processing.
func (b *Backend) Stats(ctx context.Context, p *pubsub.StatsParams) (pubsub.Stats, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return pubsub.Stats{}, err
	}
	k := b.groupKeys(p.Topic, p.Group)
	res, err := statsScript.Run(ctx, b.client, k.statsKeys(), ageWindow).Slice()
	if err != nil {
		return pubsub.Stats{}, err
	}
	return backendkit.DecodeStats(p.Topic, p.Group, res), nil
}
