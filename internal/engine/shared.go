package engine

import (
	"context"

	"github.com/relq/relq/backend"
)

// Shared is the part of the contract an engine-based adapter (list, zset) passes on as the
// engine has it: everything but Name, Capabilities and Claim, which are the adapter's own.
// An adapter embeds it under an unexported name, so that its exported methods are exactly the
// contract's and the engine's other methods stay out of its API.
type Shared interface {
	Publish(ctx context.Context, p *backend.PublishParams) (backend.PublishResult, error)
	EnsureGroup(ctx context.Context, p *backend.EnsureGroupParams) error
	RegisterAgain(ctx context.Context, p *backend.RegisterAgainParams) (backend.RegisterAgainResult, error)
	Ack(ctx context.Context, p *backend.AckParams) (backend.AckResult, error)
	Nack(ctx context.Context, p *backend.NackParams) (backend.NackResult, error)
	Extend(ctx context.Context, p *backend.ExtendParams) (lost []string, err error)
	Reclaim(ctx context.Context, p *backend.ReclaimParams) (backend.ReclaimResult, error)
	GroupNames(ctx context.Context, topic string) ([]string, error)
	Close() error
	backend.Admin
	backend.Ephemeral
	backend.TopicLister
	backend.ReplicaWaiter
	backend.EvictionReader
}

var _ Shared = (*Engine)(nil)
