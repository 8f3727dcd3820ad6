package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/relq/relq/backend"
)

// action is one POST of the dashboard. Each names its target in form fields: b (backend), t
// (topic), g (group), id (a message), ids (selected messages), one (the message of the row
// whose button was pressed), all.
type action struct {
	// confirm, when set, describes what the action will remove; the action runs only once
	// the confirmation page is answered (field confirm=yes). Nil: no confirmation.
	confirm func(ctx context.Context, f *form) (*confirmView, error)
	// run performs it and says what it did and which page to show next (a dashboard path).
	run func(ctx context.Context, f *form) (done, next string, err error)
	// deletes names what the overview must no longer list after it: "group" or "topic".
	deletes string
}

// form is an action's target, read from the POST.
type form struct {
	backend, topic, group, id string
	ids                       []string
	all                       bool
	limit                     int
	back                      string // "message": come back to the message page
	a                         backend.Admin
}

func (f *form) groupLink() string { return link("group", "b", f.backend, "t", f.topic, "g", f.group) }
func (f *form) deadLink() string  { return link("dead", "b", f.backend, "t", f.topic, "g", f.group) }
func (f *form) msgLink(id string) string {
	return link("message", "b", f.backend, "t", f.topic, "g", f.group, "id", id)
}

// confirmView is the confirmation page of a destructive action.
type confirmView struct {
	Question string
	Lines    []string
	Button   string
	Cancel   string
	// Action and Fields are the form that the confirming button posts again.
	Action string
	Fields []kv
}

var actions = map[string]action{
	"pause": {run: func(ctx context.Context, f *form) (string, string, error) {
		return "Paused " + f.topic + " / " + f.group + ": its consumers get nothing until it is resumed.", f.groupLink(),
			f.a.PauseGroup(ctx, f.topic, f.group)
	}},
	"resume": {run: func(ctx context.Context, f *form) (string, string, error) {
		return "Resumed " + f.topic + " / " + f.group + ".", f.groupLink(), f.a.ResumeGroup(ctx, f.topic, f.group)
	}},
	"run": {run: func(ctx context.Context, f *form) (string, string, error) {
		return "Message " + f.id + " is due now.", f.msgLink(f.id), f.a.RunMessage(ctx, &backend.MessageParams{Topic: f.topic, Group: f.group, ID: f.id})
	}},
	"requeue": {confirm: confirmRequeueAll, run: requeue},
	"purge":   {confirm: confirmPurge, run: purge},
	"delete-message": {
		confirm: func(ctx context.Context, f *form) (*confirmView, error) {
			m, err := f.a.Message(ctx, &backend.MessageParams{Topic: f.topic, Group: f.group, ID: f.id})
			if err != nil {
				return nil, err
			}
			return &confirmView{Question: fmt.Sprintf("Delete message %s from %s / %s?", f.id, f.topic, f.group),
				Lines:  []string{fmt.Sprintf("It is %s, after %d attempts. The other groups of the topic keep their copy.", m.State, m.Attempts)},
				Button: "Delete the message", Cancel: f.msgLink(f.id)}, nil
		},
		run: func(ctx context.Context, f *form) (string, string, error) {
			return "Deleted message " + f.id + ".", f.groupLink(), f.a.DeleteMessage(ctx, &backend.MessageParams{Topic: f.topic, Group: f.group, ID: f.id})
		},
	},
	"delete-group": {
		deletes: "group",
		confirm: func(ctx context.Context, f *form) (*confirmView, error) {
			st, err := f.a.Stats(ctx, &backend.StatsParams{Topic: f.topic, Group: f.group})
			if err != nil {
				return nil, err
			}
			return &confirmView{Question: fmt.Sprintf("Delete group %s of topic %s?", f.group, f.topic),
				Lines: []string{fmt.Sprintf("It holds %s ready, %s delayed, %s pending and %s dead messages: all are deleted, and later publishes no longer reach it.",
					num(st.Ready), num(st.Delayed), num(st.Pending), num(st.Dead)),
					"Its running subscriptions stop with ErrGroupDeleted."},
				Button: "Delete the group", Cancel: f.groupLink()}, nil
		},
		run: func(ctx context.Context, f *form) (string, string, error) {
			return "Deleted group " + f.group + " of " + f.topic + ".", "", f.a.DeleteGroup(ctx, f.topic, f.group)
		},
	},
	"delete-topic": {
		deletes: "topic",
		confirm: func(ctx context.Context, f *form) (*confirmView, error) {
			info, err := f.a.Topic(ctx, f.topic)
			if err != nil {
				return nil, err
			}
			lines := []string{"Every key of the topic is deleted: its messages, its groups and their dead letters, its backlog."}
			if len(info.Groups) > 0 {
				lines = append(lines, "Groups: "+strings.Join(info.Groups, ", ")+".")
			}
			if info.Backlog > 0 {
				lines = append(lines, fmt.Sprintf("Backlog: %s messages.", num(info.Backlog)))
			}
			return &confirmView{Question: fmt.Sprintf("Delete topic %s (%s backend)?", f.topic, f.backend), Lines: lines,
				Button: "Delete the topic", Cancel: link("topic", "b", f.backend, "t", f.topic)}, nil
		},
		run: func(ctx context.Context, f *form) (string, string, error) {
			return "Deleted topic " + f.topic + ".", "", f.a.DeleteTopic(ctx, f.topic)
		},
	},
}

// targets are the messages an action on dead letters acts on: the row's own, else the
// selected ones; none when it acts on all of them (boxes ticked before "Requeue all" or
// "Purge all" are no part of it).
func (f *form) targets() []string {
	if f.all {
		return nil
	}
	if f.id != "" {
		return []string{f.id}
	}
	return f.ids
}

func confirmRequeueAll(ctx context.Context, f *form) (*confirmView, error) {
	if !f.all {
		return nil, nil // requeueing chosen dead letters retries them; nothing is lost
	}
	st, err := f.a.Stats(ctx, &backend.StatsParams{Topic: f.topic, Group: f.group})
	if err != nil {
		return nil, err
	}
	return &confirmView{Question: fmt.Sprintf("Requeue all %s dead letters of %s / %s?", num(st.Dead), f.topic, f.group),
		Lines:  []string{"They become ready again, with their attempts reset, and the group's consumers take them."},
		Button: "Requeue all", Cancel: f.deadLink()}, nil
}

func requeue(ctx context.Context, f *form) (string, string, error) {
	p := &backend.RequeueParams{Topic: f.topic, Group: f.group, IDs: f.targets(), All: f.all}
	if !p.All && len(p.IDs) == 0 {
		return "", "", &httpError{code: http.StatusBadRequest, msg: "no dead letter selected"}
	}
	n, err := f.a.RequeueDeadLetters(ctx, p)
	next := f.deadLink()
	if f.back == "message" && f.id != "" {
		next = f.msgLink(f.id)
	}
	return fmt.Sprintf("Requeued %s dead letter%s.", num(int64(n)), plural(n)), next, err
}

func confirmPurge(ctx context.Context, f *form) (*confirmView, error) {
	c := &confirmView{Button: "Purge", Cancel: f.deadLink(),
		Lines: []string{"Purged dead letters are deleted for good."}}
	if f.all {
		st, err := f.a.Stats(ctx, &backend.StatsParams{Topic: f.topic, Group: f.group})
		if err != nil {
			return nil, err
		}
		c.Question = fmt.Sprintf("Purge all %s dead letters of %s / %s?", num(st.Dead), f.topic, f.group)
		// At most those counted here, oldest first: letters that die while the question is
		// open are kept, unless others are requeued meanwhile.
		c.Fields = []kv{{"limit", strconv.FormatInt(st.Dead, 10)}}
		return c, nil
	}
	n := len(f.targets())
	if n == 0 {
		return nil, &httpError{code: http.StatusBadRequest, msg: "no dead letter selected"}
	}
	c.Question = fmt.Sprintf("Purge %d dead letter%s of %s / %s?", n, plural(n), f.topic, f.group)
	c.Lines = append(c.Lines, "IDs: "+strings.Join(f.targets(), ", "))
	return c, nil
}

func purge(ctx context.Context, f *form) (string, string, error) {
	if f.all {
		if f.limit <= 0 {
			return "Purged no dead letter.", f.deadLink(), nil
		}
		n, err := f.a.PurgeDeadLetters(ctx, &backend.PurgeParams{Topic: f.topic, Group: f.group, All: true, Limit: f.limit})
		return fmt.Sprintf("Purged %s dead letter%s.", num(int64(n)), plural(n)), f.deadLink(), err
	}
	ids := f.targets()
	if len(ids) == 0 {
		return "", "", &httpError{code: http.StatusBadRequest, msg: "no dead letter selected"}
	}
	// One atomic purge: an ID that is no longer a dead letter (requeued meanwhile, maybe
	// already claimed) is skipped, never deleted.
	n, err := f.a.PurgeDeadLetters(ctx, &backend.PurgeParams{Topic: f.topic, Group: f.group, IDs: ids})
	done := fmt.Sprintf("Purged %d dead letter%s.", n, plural(n))
	if skipped := len(ids) - n; err == nil && skipped > 0 {
		done += fmt.Sprintf(" %d of those chosen were no longer dead letters and were kept.", skipped)
	}
	return done, f.deadLink(), err
}

func isNotFound(err error) bool { return statusOf(err) == http.StatusNotFound }

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// act serves an action's POST: read-only and CSRF checks, the confirmation page when the
// action asks for one, then the action and a redirect to the page it names, with what it
// did shown there once.
func (h *Handler) act(a action) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/")
		if h.opts.ReadOnly {
			h.render(w, r, http.StatusForbidden, "error", "Read-only", nil, "This dashboard is read-only: "+name+" is refused.")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		if err := r.ParseForm(); err != nil {
			h.render(w, r, http.StatusBadRequest, "error", "Bad request", nil, err.Error())
			return
		}
		if err := h.checkCSRF(r); err != nil {
			h.render(w, r, statusOf(err), "error", "Refused", nil, err.Error())
			return
		}
		f, err := h.readForm(r)
		if err != nil {
			h.render(w, r, statusOf(err), "error", http.StatusText(statusOf(err)), nil, err.Error())
			return
		}
		if a.confirm != nil && r.PostFormValue("confirm") != "yes" {
			c, err := a.confirm(r.Context(), f)
			if err != nil {
				h.render(w, r, statusOf(err), "error", http.StatusText(statusOf(err)), nil, err.Error())
				return
			}
			if c != nil {
				c.Action = name
				c.Fields = append(formFields(r.PostForm), c.Fields...)
				h.render(w, r, http.StatusOK, "confirm", "Confirm", nil, c)
				return
			}
		}
		done, next, err := a.run(r.Context(), f)
		switch gone := err == nil || isNotFound(err); { // a failed delete leaves its rows
		case !gone:
		case a.deletes == "group":
			h.catalog.forget(f.backend, f.topic, f.group)
		case a.deletes == "topic":
			h.catalog.forget(f.backend, f.topic, "")
		}
		if err != nil {
			if statusOf(err) >= 500 {
				h.log.Error("relq web: action failed", "action", name, "error", err)
			}
			h.flash(w, r, name+" failed: "+err.Error(), true)
		} else {
			h.flash(w, r, done, false)
		}
		if err != nil && isNotFound(err) {
			next = "" // what it was about is gone: go home
		}
		seeOther(w, h.rel(r, next))
	}
}

// readForm reads and checks an action's target.
func (h *Handler) readForm(r *http.Request) (*form, error) {
	b, a, err := h.admin(r)
	if err != nil {
		return nil, err
	}
	f := &form{backend: b, a: a, topic: r.PostFormValue("t"), group: r.PostFormValue("g"), id: r.PostFormValue("id"),
		ids: r.PostForm["ids"], all: r.PostFormValue("all") == "yes", back: r.PostFormValue("back")}
	if one := r.PostFormValue("one"); one != "" {
		f.id = one
	}
	if len(f.ids) > h.opts.PageSize { // a page's checkboxes at most
		return nil, &httpError{code: http.StatusBadRequest, msg: fmt.Sprintf("%d messages chosen: at most %d at a time", len(f.ids), h.opts.PageSize)}
	}
	if err := backend.ValidateName("topic", f.topic); err != nil {
		return nil, err
	}
	if s := r.PostFormValue("limit"); s != "" {
		if f.limit, err = strconv.Atoi(s); err != nil {
			return nil, &httpError{code: http.StatusBadRequest, msg: "limit: " + err.Error()}
		}
	}
	return f, nil
}

// formFields are the fields of a POST to repeat in its confirmation, without the CSRF
// token (the page adds the current one).
func formFields(v url.Values) []kv {
	var out []kv
	for k, vals := range v {
		if k == "csrf" || k == "confirm" {
			continue
		}
		for _, val := range vals {
			out = append(out, kv{k, val})
		}
	}
	slices.SortStableFunc(out, func(a, b kv) int { return strings.Compare(a.Key, b.Key) })
	return out
}
