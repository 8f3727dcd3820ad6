package streams

import (
	"context"
	"fmt"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

var _ backend.Ephemeral = (*Backend)(nil)

// Join makes p.Consumer a member of the ephemeral group p.Group until p.TTL from the Redis
// clock's now (join.lua), registering the group when it is new (the topic's first group takes
// the backlog; another starts with the next publish). While every group of the topic is
// ephemeral, the topic's keys expire with the latest membership of its groups, so a topic
// whose processes all died leaves no key. A group whose every membership ran out is deleted
// first, and joined as a new one, except by a renewal (p.Renew), which never registers the
// group: it fails with backend.ErrGroupDeleted when an operator deleted the group (a
// tombstone), and with backend.ErrGroupLost when it is gone without one or expired (the
// subscription registers it again).
// backend.ErrNotEphemeral when the group is registered as durable.
func (b *Backend) Join(ctx context.Context, p *backend.JoinParams) error {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
		return err
	}
	if p.TTL <= 0 {
		return &backend.ConfigError{Field: "JoinParams.TTL", Reason: "must be positive"}
	}
	k := b.groupKeys(p.Topic, p.Group)
	for range 3 {
		renew := "0"
		if p.Renew {
			renew = "1"
		}
		status, err := joinScript.Run(ctx, b.client, k.registerKeys(), p.Group, p.Consumer, backendkit.Millis(p.TTL), renew).Text()
		if err != nil {
			return backendkit.RedisFull(err)
		}
		switch status {
		case "durable":
			return fmt.Errorf("streams: join group %q of topic %q: %w", p.Group, p.Topic, backend.ErrNotEphemeral)
		case "deleted":
			return fmt.Errorf("streams: renew membership of group %q of topic %q: %w", p.Group, p.Topic, backend.ErrGroupDeleted)
		case "lost":
			return fmt.Errorf("streams: renew membership of group %q of topic %q: %w", p.Group, p.Topic, backend.ErrGroupLost)
		case "expired":
			if _, err := b.deleteGroup(ctx, p.Topic, p.Group, modeExpired, ""); err != nil {
				return err
			}
			if p.Renew { // the group it renewed is gone with what it held; no operator deleted it
				return fmt.Errorf("streams: renew membership of group %q of topic %q: it expired: %w", p.Group, p.Topic, backend.ErrGroupLost)
			}
		default:
			return nil
		}
	}
	return fmt.Errorf("streams: join group %q of topic %q: it kept expiring", p.Group, p.Topic)
}

// Leave ends p.Consumer's membership; the last member's Leave deletes the group as
// DeleteGroup does. Leaving a group that is not registered does nothing;
// backend.ErrNotEphemeral when the group is durable.
func (b *Backend) Leave(ctx context.Context, p *backend.LeaveParams) error {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group, "consumer", p.Consumer); err != nil {
		return err
	}
	status, err := b.deleteGroup(ctx, p.Topic, p.Group, modeLeave, p.Consumer)
	if err == nil && status == "durable" {
		return fmt.Errorf("streams: leave group %q of topic %q: %w", p.Group, p.Topic, backend.ErrNotEphemeral)
	}
	return err
}
