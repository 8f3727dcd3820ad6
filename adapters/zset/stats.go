package zset

import (
	"context"
	"time"

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
	s := pubsub.Stats{
		Topic:            p.Topic,
		Group:            p.Group,
		Ready:            toInt(res[0]),
		Delayed:          toInt(res[1]),
		Pending:          toInt(res[2]),
		Dead:             toInt(res[3]),
		OldestPendingAge: age(res[4]),
		OldestReadyAge:   age(res[5]),
	}
	counters, _ := res[6].([]any)
	for i := 0; i+1 < len(counters); i += 2 {
		name, _ := counters[i].(string)
		if f := counterField(&s.Counters, name); f != nil {
			*f = toInt(counters[i+1])
		}
	}
	return s, nil
}

// age converts a millisecond age from stats.lua (-1: none) to a duration.
func age(v any) time.Duration {
	n := toInt(v)
	if n < 0 {
		return 0
	}
	return time.Duration(n) * time.Millisecond
}

// counterField maps a field of the counters HASH, as the scripts name it, to its Counters field.
func counterField(c *pubsub.Counters, name string) *int64 {
	switch name {
	case "published":
		return &c.Published
	case "claimed":
		return &c.Claimed
	case "acked":
		return &c.Acked
	case "nacked":
		return &c.Nacked
	case "reclaimed":
		return &c.Reclaimed
	case "dead_lettered":
		return &c.DeadLettered
	case "stale_acks":
		return &c.StaleAcks
	case "stale_nacks":
		return &c.StaleNacks
	}
	return nil
}
