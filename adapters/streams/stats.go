package streams

import (
	"context"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

// statsWindow is how many unread entries, and how many delayed entries not due yet, stats.lua
// looks at one by one: Ready, Delayed and OldestReadyAge are exact when either set fits in it
// (see stats.lua for the estimate beyond), and a Stats call costs O(statsWindow + log N).
const statsWindow = 100

// statsCountCap bounds how many unread entries stats.lua counts one by one where Redis cannot
// tell a group's lag (Redis 6.2, which has no lag; or entries deleted after the group's
// last-delivered-id). Beyond it Redis 7 gives an estimate, and Ready on 6.2 stops there.
const statsCountCap = 1000

// Stats reads the group's state in one read-only script, so the numbers are one snapshot and
// the ages are measured on the Redis clock. Ready counts the entries the group has not read
// (the lag) that are due, and parked retries that are due; Delayed the rest of both; Pending
// the PEL without the parking consumer's entries. OldestPendingAge is the time since the
// oldest pending delivery was claimed; OldestReadyAge the time since the oldest ready message
// became due. Published counts relq's publishes routed to the group (since it was created,
// plus what it could replay then). With more than statsWindow entries unread and more than
// statsWindow delayed ones not due, the split of the unread between Ready and Delayed is an
// estimate, and OldestReadyAge may be an upper bound (stats.lua says when each is exact).
func (b *Backend) Stats(ctx context.Context, p *backend.StatsParams) (backend.Stats, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return backend.Stats{}, err
	}
	k := b.groupKeys(p.Topic, p.Group)
	res, err := statsScript.Run(ctx, b.client, k.statsKeys(), p.Group, ParkedConsumer, statsWindow, statsCountCap).Slice()
	if err != nil {
		return backend.Stats{}, err
	}
	s := backendkit.DecodeStats(p.Topic, p.Group, res)
	// Published is the topic's publish count less the group's published_base: the count when
	// the group was created, less what it could replay then.
	counters := toStrings(res[6])
	base := int64(0)
	for i := 0; i+1 < len(counters); i += 2 {
		if counters[i] == "published_base" {
			base = backendkit.Int(counters[i+1])
		}
	}
	s.Counters.Published = max(backendkit.Int(res[7])-base, 0)
	s.Paused = backendkit.Int(res[8]) == 1
	return s, nil
}
