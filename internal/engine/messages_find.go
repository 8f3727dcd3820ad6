package engine

import (
	"context"
	"fmt"
	"regexp"

	"github.com/relq/relq/backend"
)

// deliveryID is the form of the delivery IDs of list and zset: the topic's counter, which
// Lua keeps exact below 2^53 (16 digits).
var deliveryID = regexp.MustCompile(`^[1-9][0-9]{0,15}$`)

// Message shows one message of a group, wherever it is, in one read-only script. Pending and
// dead messages, and the list backend's delayed ones, are found by ID in O(log N); the zset
// backend's delayed ones too when their priority is 0 or one of the first priorities in its
// queue. A ready message (and a zset delayed one of another priority) is searched for among
// the AdminDepth nearest the consume end (the earliest due): beyond that, when the group may
// hold it, backend.ErrTooDeep.
func (e *Engine) Message(ctx context.Context, p *backend.MessageParams) (backend.MessageInfo, error) {
	if err := e.checkMessage(ctx, p); err != nil {
		return backend.MessageInfo{}, err
	}
	res, err := e.run(ctx, "message", e.Keys(p.Topic, p.Group).all, p.Group, p.ID, AdminDepth).Slice()
	if err != nil {
		return backend.MessageInfo{}, e.adminError(err, p.Topic, p.Group, p.ID)
	}
	ms := decodeMessages(p.Topic, p.Group, res[0], res[1:])
	if len(ms) != 1 {
		return backend.MessageInfo{}, fmt.Errorf("relq %s: message %s: malformed reply", e.store.Name, p.ID)
	}
	return ms[0], nil
}

// DeleteMessage deletes one message of a group in one script, found as Message finds it. A
// pending, delayed or dead message and its record go at once, and its body with the last
// group that held it; a holder's later ack or nack of it is stale. A ready one is marked
// ACKED in the group's retries (the store cannot remove it by ID): hidden from listings and
// Message at once, it is dropped undelivered, and its body freed, by the claim that reaches
// it; Stats counts it as ready until then.
func (e *Engine) DeleteMessage(ctx context.Context, p *backend.MessageParams) error {
	if err := e.checkMessage(ctx, p); err != nil {
		return err
	}
	err := e.run(ctx, "deletemessage", e.Keys(p.Topic, p.Group).all, p.Group, p.ID, AdminDepth).Err()
	return e.adminError(err, p.Topic, p.Group, p.ID)
}

// RunMessage makes a delayed message of a group due now, in one script: the list backend puts
// it at the back of ready, the zset backend in its queue behind the due messages of its
// priority (waking a blocked consumer). backend.ErrNotDelayed when the group holds it in
// another state.
func (e *Engine) RunMessage(ctx context.Context, p *backend.MessageParams) error {
	if err := e.checkMessage(ctx, p); err != nil {
		return err
	}
	err := e.run(ctx, "runmessage", e.Keys(p.Topic, p.Group).all, p.Group, p.ID, AdminDepth).Err()
	return e.adminError(err, p.Topic, p.Group, p.ID)
}

// checkMessage validates p: names as Check does; an ID that is no delivery ID of this
// engine is not found.
func (e *Engine) checkMessage(ctx context.Context, p *backend.MessageParams) error {
	if err := e.Check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return err
	}
	if !deliveryID.MatchString(p.ID) {
		return fmt.Errorf("%w: %q is not a delivery ID of the %s backend", backend.ErrMessageNotFound, p.ID, e.store.Name)
	}
	return nil
}
