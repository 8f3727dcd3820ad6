package engine

import (
	"context"
	"fmt"

	"github.com/relq/relq/backend"
)

// PauseGroup stops deliveries to a group (pause.lua sets the paused flag of its registry
// value): its claims return nothing, a blocking one after sleeping out its Block, while
// publishes still store its messages and leases taken run their course. Idempotent.
// backend.ErrGroupNotFound when the group is not registered.
func (e *Engine) PauseGroup(ctx context.Context, topic, group string) error {
	return e.pause(ctx, topic, group, true)
}

// ResumeGroup undoes PauseGroup: consumers claim again from their next Claim, at most a Block
// later. Idempotent. backend.ErrGroupNotFound when the group is not registered.
func (e *Engine) ResumeGroup(ctx context.Context, topic, group string) error {
	return e.pause(ctx, topic, group, false)
}

func (e *Engine) pause(ctx context.Context, topic, group string, on bool) error {
	if err := e.Check(ctx, "topic", topic, "group", group); err != nil {
		return err
	}
	flag := 0
	if on {
		flag = 1
	}
	found, err := e.run(ctx, "pause", e.topicKeys(topic).list(), group, flag).Int()
	if err != nil {
		return err
	}
	if found == 0 {
		return fmt.Errorf("%s: group %q of topic %q: %w", e.store.Name, group, topic, backend.ErrGroupNotFound)
	}
	return nil
}
