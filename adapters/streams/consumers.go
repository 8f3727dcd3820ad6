package streams

import (
	"context"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

// CleanupResult reports what CleanupConsumers did.
type CleanupResult struct {
	Removed int // consumers deleted from the group
	Parked  int // their pending deliveries, parked for another consumer
}

// CleanupConsumers removes the group's consumers that have not read for at least idle,
// without dropping their pending deliveries, which XGROUP DELCONSUMER alone would: each such
// consumer's entries idle at least that long are first parked, due at once and with their
// delivery count kept (they count as the attempt they were), then the consumer is deleted
// once nothing is pending for it. A consumer whose entries are younger (a handler still
// heartbeating) keeps them and stays. It runs cleanup.lua calls of at most Options.BatchSize
// parked entries each.
//
// Reclaim does the safe part of this by itself: it removes consumers with nothing pending
// after Options.ConsumerIdleTimeout.
func (b *Backend) CleanupConsumers(ctx context.Context, topic, group string, idle time.Duration) (CleanupResult, error) {
	if err := b.check(ctx, "topic", topic, "group", group); err != nil {
		return CleanupResult{}, err
	}
	if idle < 0 {
		return CleanupResult{}, &backend.ConfigError{Field: "idle", Reason: "must not be negative"}
	}
	k := b.groupKeys(topic, group)
	var total CleanupResult
	for {
		n, err := backendkit.Ints(cleanupScript.Run(ctx, b.client, k.cleanupKeys(),
			group, ParkedConsumer, backendkit.Millis(idle), b.opts.BatchSize, topic).Slice())
		if err != nil {
			return total, err
		}
		total.Removed += int(n[0])
		total.Parked += int(n[1])
		if n[2] == 0 {
			return total, nil
		}
	}
}
