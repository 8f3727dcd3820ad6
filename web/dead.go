package web

import (
	"cmp"
	"net/http"
	"slices"

	"github.com/relq/relq/backend"
)

// reasonPages is how many pages of dead letters, the oldest first, the reasons are counted
// over: one bounded read per page load, however many dead letters there are. The Admin API
// returns whole messages, so the bound is in messages read (bodies included), not only in
// commands.
const reasonPages = 2

// deadView is the dead letters page of a group.
type deadView struct {
	Backend, Topic, Group string
	Dead                  int64
	Reasons               []reason
	// ReasonsOf is how many dead letters the reasons were counted over (all of them when
	// it equals Dead).
	ReasonsOf    int
	Letters      []messageRow
	Cursor, Next string
}

type reason struct {
	Text  string
	Count int
}

func (h *Handler) dead(w http.ResponseWriter, r *http.Request) (out, error) {
	b, a, err := h.admin(r)
	if err != nil {
		return out{}, err
	}
	v := &deadView{Backend: b, Topic: r.FormValue("t"), Group: r.FormValue("g"), Cursor: r.FormValue("cursor")}
	ctx := r.Context()
	page, err := h.listPage(ctx, a, v.Topic, v.Group, backend.StateDead, v.Cursor, &v.Letters)
	if err != nil {
		return out{}, err
	}
	v.Next = page.Next
	st, err := a.Stats(ctx, &backend.StatsParams{Topic: v.Topic, Group: v.Group})
	if err != nil {
		return out{}, err
	}
	v.Dead = st.Dead
	window := page
	if v.Cursor != "" || page.Next != "" {
		if window, err = a.Messages(ctx, &backend.MessagesParams{Topic: v.Topic, Group: v.Group, State: backend.StateDead, Count: reasonPages * h.opts.PageSize}); err != nil {
			return out{}, err
		}
	}
	v.Reasons, v.ReasonsOf = reasons(window.Messages), len(window.Messages)
	return out{page: "dead", title: "Dead letters of " + v.Topic + " / " + v.Group, crumbs: groupCrumbs(b, v.Topic, v.Group), data: v}, nil
}

// reasons counts dead letters by reason, the most frequent first.
func reasons(dead []backend.MessageInfo) []reason {
	count := map[string]int{}
	for _, m := range dead {
		count[m.Reason]++
	}
	out := make([]reason, 0, len(count))
	for text, n := range count {
		out = append(out, reason{Text: text, Count: n})
	}
	slices.SortFunc(out, func(a, b reason) int { return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Text, b.Text)) })
	return out
}
