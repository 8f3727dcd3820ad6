package pubsub

import (
	"context"

	"github.com/ThreeDotsLabs/watermill"
)

// assigner is a backend whose topics are partitioned (backend.Capabilities.Partitioned): the
// subscriptions of a group share the partitions, each a member of the group's assignment
// from its start to its end. A backend that is no assigner serves every consumer alike.
type assigner interface {
	Assign(ctx context.Context, topic, group, consumer string) error
	Unassign(ctx context.Context, topic, group, consumer string) error
}

// assign makes the subscription a member of its group's assignment. Should it fail, the
// subscription claims from every partition, as a consumer that is no member does: the
// delivery contract holds either way.
func (s *subscription) assign() {
	a, ok := s.backend.(assigner)
	if !ok {
		return
	}
	if err := a.Assign(s.hard, s.topic, s.config.Group, s.config.Consumer); err != nil {
		s.logger.Info("relq: could not join the group's share of the partitions; claiming from all of them", watermill.LogFields{"error": err.Error()})
	}
}

// unassign ends the membership once the subscription settled what it held, so that the
// group's other subscriptions take its partitions at once rather than after its lease.
func (s *subscription) unassign() {
	a, ok := s.backend.(assigner)
	if !ok {
		return
	}
	if err := a.Unassign(s.hard, s.topic, s.config.Group, s.config.Consumer); err != nil {
		s.logger.Info("relq: could not leave the group's share of the partitions; they move on after the lease", watermill.LogFields{"error": err.Error()})
	}
}
