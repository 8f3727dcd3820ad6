package streams

import (
	"context"
	"fmt"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

var regainScript = script("regain")

// RegisterAgain creates the consumer group again for a running subscription that found it
// gone without a tombstone (regain.lua): after p.After when the stream still holds that
// entry, else so that the group reads every entry the stream got since it vanished (see the
// script). Durable as EnsureGroup would make it, or joined as Join would with p.Ephemeral.
// Under a tombstone: an error matching backend.ErrGroupDeleted.
func (b *Backend) RegisterAgain(ctx context.Context, p *backend.RegisterAgainParams) (backend.RegisterAgainResult, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return backend.RegisterAgainResult{}, err
	}
	eph, err := backendkit.RegainMode(p)
	if err != nil {
		return backend.RegisterAgainResult{}, err
	}
	after, _ := parseID(p.After) // "" for none, or for an ID not of this backend's
	k := b.groupKeys(p.Topic, p.Group)
	cmd := regainScript.Run(ctx, b.client, k.registerKeys(), p.Group, eph, p.Consumer, backendkit.Millis(p.TTL), p.Known, after)
	if err := cmd.Err(); err != nil {
		return backend.RegisterAgainResult{}, backendkit.RedisFull(err)
	}
	switch status, _ := cmd.Val().(string); status {
	case "deleted":
		return backend.RegisterAgainResult{}, fmt.Errorf("streams: register group %q of topic %q again: %w", p.Group, p.Topic, backend.ErrGroupDeleted)
	case "durable":
		return backend.RegisterAgainResult{}, fmt.Errorf("streams: join group %q of topic %q: %w", p.Group, p.Topic, backend.ErrNotEphemeral)
	}
	res, err := cmd.Slice()
	if err != nil {
		return backend.RegisterAgainResult{}, err
	}
	r := backendkit.DecodeRegain(res)
	return r, nil
}
