package streams

import (
	"context"
	"fmt"

	"github.com/relq/relq/internal/backendkit"
	"github.com/relq/relq/pubsub"
)

var regainScript = script("regain")

// RegisterAgain creates the consumer group again for a running subscription that found it
// gone without a tombstone (regain.lua): after p.After when the stream still holds that
// entry, else so that the group reads every entry the stream got since it vanished (see the
// script). Durable as EnsureGroup would make it, or joined as Join would with p.Ephemeral.
// Under a tombstone: an error matching pubsub.ErrGroupDeleted.
func (b *Backend) RegisterAgain(ctx context.Context, p *pubsub.RegisterAgainParams) (pubsub.RegisterAgainResult, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return pubsub.RegisterAgainResult{}, err
	}
	eph, err := backendkit.RegainMode(p)
	if err != nil {
		return pubsub.RegisterAgainResult{}, err
	}
	after, _ := parseID(p.After) // "" for none, or for an ID not of this backend's
	k := b.groupKeys(p.Topic, p.Group)
	cmd := regainScript.Run(ctx, b.client, k.registerKeys(), p.Group, eph, p.Consumer, backendkit.Millis(p.TTL), p.Known, after)
	if err := cmd.Err(); err != nil {
		return pubsub.RegisterAgainResult{}, backendkit.RedisFull(err)
	}
	switch status, _ := cmd.Val().(string); status {
	case "deleted":
		return pubsub.RegisterAgainResult{}, fmt.Errorf("streams: register group %q of topic %q again: %w", p.Group, p.Topic, pubsub.ErrGroupDeleted)
	case "durable":
		return pubsub.RegisterAgainResult{}, fmt.Errorf("streams: join group %q of topic %q: %w", p.Group, p.Topic, pubsub.ErrNotEphemeral)
	}
	res, err := cmd.Slice()
	if err != nil {
		return pubsub.RegisterAgainResult{}, err
	}
	r := backendkit.DecodeRegain(res)
	return r, nil
}
