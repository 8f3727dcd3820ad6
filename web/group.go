package web

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/relq/relq/backend"
)

// groupView is the group page.
type groupView struct {
	Backend, Topic, Group string
	Stats                 backend.Stats
	State                 backend.MessageState
	States                []backend.MessageState
	Messages              []messageRow
	Cursor, Next          string
	// Consumers hold the first page of pending messages (HeldOf says how many were looked at).
	Consumers   []consumer
	HeldOf      int
	MorePending bool
}

// Count is the number of the group's messages in state st.
func (v *groupView) Count(st backend.MessageState) int64 {
	switch st {
	case backend.StateReady:
		return v.Stats.Ready
	case backend.StateDelayed:
		return v.Stats.Delayed
	case backend.StatePending:
		return v.Stats.Pending
	}
	return v.Stats.Dead
}

// consumer is one consumer of a group and what it holds.
type consumer struct {
	Name string
	Held int
	// LeaseLeft is the shortest lease left of what it holds (negative: expired, waiting
	// for a reclaim).
	LeaseLeft time.Duration
	Oldest    time.Time
}

// messageRow is a message in a listing.
type messageRow struct {
	backend.MessageInfo
	Preview string
}

func (h *Handler) group(w http.ResponseWriter, r *http.Request) (out, error) {
	b, a, err := h.admin(r)
	if err != nil {
		return out{}, err
	}
	v := &groupView{Backend: b, Topic: r.FormValue("t"), Group: r.FormValue("g"), States: backend.States,
		State: backend.StateReady, Cursor: r.FormValue("cursor")}
	if s := r.FormValue("state"); s != "" {
		if v.State, err = backend.ParseState(s); err != nil {
			return out{}, &httpError{code: http.StatusBadRequest, msg: err.Error()}
		}
	}
	ctx := r.Context()
	page, err := h.listPage(ctx, a, v.Topic, v.Group, v.State, v.Cursor, &v.Messages)
	if err != nil {
		return out{}, err
	}
	v.Next = page.Next
	if v.Stats, err = a.Stats(ctx, &backend.StatsParams{Topic: v.Topic, Group: v.Group}); err != nil {
		return out{}, err
	}
	pending := page
	if v.State != backend.StatePending || v.Cursor != "" {
		if pending, err = a.Messages(ctx, &backend.MessagesParams{Topic: v.Topic, Group: v.Group, State: backend.StatePending, Count: h.opts.PageSize}); err != nil {
			return out{}, err
		}
	}
	v.Consumers, v.HeldOf, v.MorePending = consumers(pending.Messages), len(pending.Messages), pending.Next != ""
	return out{page: "group", title: v.Topic + " / " + v.Group, crumbs: topicCrumbs(b, v.Topic), data: v}, nil
}

// listPage reads one page of a group's messages in state st into rows.
func (h *Handler) listPage(ctx context.Context, a backend.Admin, topic, group string, st backend.MessageState, cursor string, rows *[]messageRow) (backend.MessagePage, error) {
	page, err := a.Messages(ctx, &backend.MessagesParams{Topic: topic, Group: group, State: st, Cursor: cursor, Count: h.opts.PageSize})
	for _, m := range page.Messages {
		*rows = append(*rows, messageRow{MessageInfo: m, Preview: preview(m)})
	}
	return page, err
}

// consumers groups pending messages by their holder, sorted by name.
func consumers(pending []backend.MessageInfo) []consumer {
	by := map[string]*consumer{}
	var out []consumer
	for _, m := range pending {
		c, ok := by[m.Consumer]
		if !ok {
			c = &consumer{Name: m.Consumer, LeaseLeft: m.LeaseLeft, Oldest: m.Since}
			by[m.Consumer] = c
		}
		c.Held++
		c.LeaseLeft = min(c.LeaseLeft, m.LeaseLeft)
		if !m.Since.IsZero() && m.Since.Before(c.Oldest) {
			c.Oldest = m.Since
		}
	}
	for _, c := range by {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b consumer) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// topicCrumbs are the breadcrumbs of a page under a topic.
func topicCrumbs(backend, topic string) []crumb {
	return []crumb{{Href: link("topic", "b", backend, "t", topic), Text: topic + " (" + backend + ")"}}
}

// groupCrumbs are the breadcrumbs of a page under a group.
func groupCrumbs(backend, topic, group string) []crumb {
	return append(topicCrumbs(backend, topic), crumb{Href: link("group", "b", backend, "t", topic, "g", group), Text: group})
}
