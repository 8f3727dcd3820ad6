package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

// messagesCountDefault is the page size of Messages when the caller gives none.
const messagesCountDefault = 100

// Messages lists one page of a group's messages in one state (messages.lua, read-only), each
// source of the state read from where the cursor says, so a page costs O(Count · log N):
//
//   - ready: due retries (the retry ZSET) merged with the unread entries after the group's
//     position that are due, by due time;
//   - delayed: retries not due merged with the unread entries published with a delay that is
//     still to come (the topic's delayed ZSET, those after the group's position), by due time;
//   - pending: in lease expiry order as streams keeps leases, per consumer: the PEL of each
//     consumer (not the parking one), consumers by the deadline of their first entry, each
//     one's entries in ID order, with their lease left (the consumer's lease, or
//     backend.LeaseDefault for one relq has no record of, less the entry's idle time); a page
//     also reads each consumer's first entry and lease, O(consumers · log N);
//   - dead: the dead-letter stream, in the order they died.
//
// Count is capped at Options.BatchSize. A page may hold fewer than Count messages while Next
// is set (entries read and left out, such as unread ones an operator deleted).
// backend.ErrGroupNotFound when the group is not registered.
func (b *Backend) Messages(ctx context.Context, p *backend.MessagesParams) (backend.MessagePage, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return backend.MessagePage{}, err
	}
	if _, err := backend.ParseState(string(p.State)); err != nil {
		return backend.MessagePage{}, err
	}
	parts, err := decodeCursor(p.State, p.Cursor)
	if err != nil {
		return backend.MessagePage{}, err
	}
	count := p.Count
	if count <= 0 {
		count = messagesCountDefault
	}
	count = min(count, b.opts.BatchSize)
	k := b.groupKeys(p.Topic, p.Group)
	res, err := messagesScript.Run(ctx, b.client, k.inspectKeys(), p.Group, ParkedConsumer, string(p.State), count,
		backendkit.Millis(backend.LeaseDefault), parts[0], parts[1], parts[2], parts[3]).Slice()
	if err != nil {
		return backend.MessagePage{}, b.adminErr(err, p.Topic, p.Group)
	}
	page := backend.MessagePage{Messages: make([]backend.MessageInfo, 0, len(res)-5)}
	for _, v := range res[5:] {
		page.Messages = append(page.Messages, messageInfo(p.Topic, p.Group, v))
	}
	if backendkit.Int(res[0]) == 1 {
		page.Next = encodeCursor(p.State, toStrings(res[1:5]))
	}
	return page, nil
}

// Message shows one message of the group, wherever it is (message.lua, read-only):
// a dead letter, a delivery in the PEL (held, or parked for a retry), or an unread entry
// after the group's position. backend.ErrMessageNotFound when the group does not hold it.
func (b *Backend) Message(ctx context.Context, p *backend.MessageParams) (backend.MessageInfo, error) {
	id, k, err := b.messageCall(ctx, p)
	if err != nil {
		return backend.MessageInfo{}, err
	}
	res, err := messageScript.Run(ctx, b.client, k.inspectKeys(), p.Group, ParkedConsumer,
		backendkit.Millis(backend.LeaseDefault), id).Slice()
	if errors.Is(err, redis.Nil) {
		err = nil // the group does not hold it
	}
	if err != nil || res == nil {
		return backend.MessageInfo{}, b.messageErr(err, p)
	}
	return messageInfo(p.Topic, p.Group, res), nil
}

// DeleteMessage removes one message from the group for good (deletemessage.lua); the other
// groups of the topic keep their copy. A dead letter is deleted; a delivery in the PEL is
// acked (a holder's later ack or nack of it is stale). An entry the group has not read yet
// stays in the stream, which the other groups read, and is marked deleted for this group in
// its marks ZSET (O(log N)): the claim that reaches it acks it undelivered, and listings skip
// it meanwhile, while Stats still counts it as ready until then. With DeleteOnAck an entry
// no group needs any more leaves the stream. backend.ErrMessageNotFound when the group does
// not hold it.
func (b *Backend) DeleteMessage(ctx context.Context, p *backend.MessageParams) error {
	id, k, err := b.messageCall(ctx, p)
	if err != nil {
		return err
	}
	n, err := deleteMsgScript.Run(ctx, b.client, k.inspectKeys(), p.Group, ParkedConsumer, id, b.deleteOnAck()).Int64()
	if err != nil {
		return b.messageErr(err, p)
	}
	if n == 0 {
		return b.messageErr(nil, p)
	}
	return nil
}

// RunMessage makes a delayed message of the group due now (runmessage.lua): a parked retry is
// rescheduled at now; an unread entry published with a delay is marked due for this group
// only (the topic's delayed ZSET keeps its due time for the others), which the claim that
// reads it and Stats honour. backend.ErrNotDelayed when the group holds it but it is not delayed.
func (b *Backend) RunMessage(ctx context.Context, p *backend.MessageParams) error {
	id, k, err := b.messageCall(ctx, p)
	if err != nil {
		return err
	}
	n, err := runMsgScript.Run(ctx, b.client, k.inspectKeys(), p.Group, ParkedConsumer, id).Int64()
	switch {
	case err != nil:
		return b.messageErr(err, p)
	case n == 0:
		return b.messageErr(nil, p)
	case n < 0:
		return fmt.Errorf("streams: message %s of group %q of topic %q: %w", p.ID, p.Group, p.Topic, backend.ErrNotDelayed)
	}
	return nil
}

// messageCall checks a call on one message and returns its ID in Redis's form. An ID that is
// no entry ID names no message.
func (b *Backend) messageCall(ctx context.Context, p *backend.MessageParams) (string, groupKeys, error) {
	if err := b.check(ctx, "topic", p.Topic, "group", p.Group); err != nil {
		return "", groupKeys{}, err
	}
	id, _ := parseID(p.ID)
	if id == "" {
		return "", groupKeys{}, b.messageErr(nil, p)
	}
	return id, b.groupKeys(p.Topic, p.Group), nil
}

// messageErr is ErrGroupNotFound for a script's reply on a group that is not registered,
// ErrMessageNotFound for a nil err, else err.
func (b *Backend) messageErr(err error, p *backend.MessageParams) error {
	if err == nil {
		return fmt.Errorf("streams: message %s of group %q of topic %q: %w", p.ID, p.Group, p.Topic, backend.ErrMessageNotFound)
	}
	return b.adminErr(err, p.Topic, p.Group)
}

func (b *Backend) adminErr(err error, topic, group string) error {
	if groupGone(err) {
		return fmt.Errorf("streams: group %q of topic %q: %w", group, topic, backend.ErrGroupNotFound)
	}
	return backendkit.RedisFull(err)
}

// messageInfo decodes inspect.lua's msg: {id, state, attempts, due ms (-1), consumer, lease
// left ms, claimed at ms (-1), reason, dead at ms (-1), fields (nil: gone)}.
func messageInfo(topic, group string, v any) backend.MessageInfo {
	f, _ := v.([]any)
	if len(f) < 10 {
		return backend.MessageInfo{Topic: topic, Group: group, Err: fmt.Errorf("streams: malformed message reply %v", v)}
	}
	m := backend.MessageInfo{Topic: topic, Group: group, Attempts: int(backendkit.Int(f[2]))}
	m.ID, _ = f[0].(string)
	state, _ := f[1].(string)
	m.State = backend.MessageState(state)
	if due := backendkit.Int(f[3]); due >= 0 {
		m.Due = time.UnixMilli(due)
	}
	m.Consumer, _ = f[4].(string)
	if m.State == backend.StatePending {
		m.LeaseLeft = time.Duration(backendkit.Int(f[5])) * time.Millisecond
		m.Since = time.UnixMilli(backendkit.Int(f[6]))
	}
	m.Reason, _ = f[7].(string)
	if at := backendkit.Int(f[8]); at >= 0 {
		m.DeadAt = time.UnixMilli(at)
	}
	fields := toStrings(f[9])
	switch env, err := decodeEntry(fields); {
	case len(fields) == 0:
		m.BodyMissing = true
	case err != nil:
		m.Err, m.Raw = err, rawOf(fields)
	default:
		m.Envelope = env
	}
	return m
}
