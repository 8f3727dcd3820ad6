package partition

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/relq/relq/backend"
)

// messagesDefault is the page a zero MessagesParams.Count reads, as in the backends.
const messagesDefault = 100

// Messages lists a group's messages in one state partition after partition, each in its own
// order (the order its messages are delivered, fall due, expire or died in). The cursor names
// the partition and the inner backend's cursor within it: "<partition>|<cursor>".
func (b *Backend) Messages(ctx context.Context, p *backend.MessagesParams) (backend.MessagePage, error) {
	a, err := b.admin()
	if err != nil {
		return backend.MessagePage{}, err
	}
	if err := check(p.Topic, p.Group); err != nil {
		return backend.MessagePage{}, err
	}
	t, err := b.topics.get(ctx, p.Topic)
	if err != nil {
		return backend.MessagePage{}, err
	}
	if t.single() {
		return a.Messages(ctx, p)
	}
	i, cursor, err := splitCursor(p.Cursor, t.layout.Count())
	if err != nil {
		return backend.MessagePage{}, err
	}
	count := p.Count
	if count <= 0 {
		count = messagesDefault
	}
	var out backend.MessagePage
	for len(out.Messages) < count {
		q := *p
		q.Topic, q.Cursor, q.Count = t.layout.Name(i), cursor, count-len(out.Messages)
		page, err := a.Messages(ctx, &q)
		if err != nil {
			return backend.MessagePage{}, err
		}
		for _, m := range page.Messages {
			out.Messages = append(out.Messages, b.outerMessage(p.Topic, i, m))
		}
		switch {
		case page.Next != "":
			cursor = page.Next
		case i+1 < t.layout.Count():
			i, cursor = i+1, ""
		default:
			return out, nil
		}
	}
	out.Next = strconv.Itoa(i) + "|" + cursor
	return out, nil
}

// splitCursor reads a Messages cursor: "" starts at partition 0.
func splitCursor(c string, p int) (int, string, error) {
	if c == "" {
		return 0, "", nil
	}
	head, inner, ok := strings.Cut(c, "|")
	i, err := strconv.Atoi(head)
	if !ok || err != nil || i < 0 || i >= p || strconv.Itoa(i) != head {
		return 0, "", fmt.Errorf("%w: %q", backend.ErrBadCursor, c)
	}
	return i, inner, nil
}

// outerMessage names a message of partition i as the topic's.
func (b *Backend) outerMessage(topic string, i int, m backend.MessageInfo) backend.MessageInfo {
	m.ID = OuterID(i, m.ID)
	m.Topic = topic
	return m
}

// Message shows a message in its partition.
func (b *Backend) Message(ctx context.Context, p *backend.MessageParams) (backend.MessageInfo, error) {
	var out backend.MessageInfo
	err := b.onMessage(ctx, p, func(a backend.Admin, i int, q *backend.MessageParams) error {
		m, err := a.Message(ctx, q)
		out = m
		if i >= 0 {
			out = b.outerMessage(p.Topic, i, m)
		}
		return err
	})
	return out, err
}

// DeleteMessage deletes a message from its partition's group.
func (b *Backend) DeleteMessage(ctx context.Context, p *backend.MessageParams) error {
	return b.onMessage(ctx, p, func(a backend.Admin, _ int, q *backend.MessageParams) error {
		return a.DeleteMessage(ctx, q)
	})
}

// RunMessage makes a delayed message due now in its partition.
func (b *Backend) RunMessage(ctx context.Context, p *backend.MessageParams) error {
	return b.onMessage(ctx, p, func(a backend.Admin, i int, q *backend.MessageParams) error {
		if err := a.RunMessage(ctx, q); err != nil || i < 0 {
			return err
		}
		b.bells.ring(ctx, b.cfg.Tag(p.Topic), []int{i}, true, 0)
		return nil
	})
}

// onMessage runs f on the partition p.ID names; ErrMessageNotFound for an ID that names none.
// A topic of one partition is the inner backend's: f runs on p itself, with i = -1.
func (b *Backend) onMessage(ctx context.Context, p *backend.MessageParams, f func(a backend.Admin, i int, q *backend.MessageParams) error) error {
	a, err := b.admin()
	if err != nil {
		return err
	}
	if err := check(p.Topic, p.Group); err != nil {
		return err
	}
	t, err := b.topics.get(ctx, p.Topic)
	if err != nil {
		return err
	}
	if t.single() {
		return f(a, -1, p)
	}
	i, inner, ok := SplitID(p.ID, t.layout.Count())
	if !ok {
		return fmt.Errorf("message %q of group %q of topic %q: %w", p.ID, p.Group, p.Topic, backend.ErrMessageNotFound)
	}
	return f(a, i, &backend.MessageParams{Topic: t.layout.Name(i), Group: p.Group, ID: inner})
}
