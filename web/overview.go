package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/relq/relq/backend"
)

// overviewView is the overview page: one page of topic × group rows.
type overviewView struct {
	Rows       []statsRow
	Query      string
	Page       int
	Pages      int
	Total      int
	Discovered time.Time
	DiscoverIn time.Duration
	Err        string
	// Multi: the dashboard shows more than one backend, so the rows say which.
	Multi bool
}

// statsRow is one row of the overview with the group's stats (Stats is zero for a backlog
// row, a topic with no group).
type statsRow struct {
	row
	Stats backend.Stats
	// Stuck: the oldest pending message has been held longer than Options.StuckAfter.
	Stuck bool
	// Gone: the group was deleted since the topics were discovered.
	Gone bool
}

// Key names the row in the page and in the JSON the page polls. Names cannot hold a space
// (backend.ValidateName), so no two rows share a key.
func (r statsRow) Key() string { return r.Backend + " " + r.Topic + " " + r.Group }

func (h *Handler) overview(w http.ResponseWriter, r *http.Request) (out, error) {
	v, err := h.overviewRows(r)
	if err != nil {
		return out{}, err
	}
	return out{page: "overview", title: "Overview", data: v}, nil
}

// overviewRows reads one page of rows: the catalog (no Redis), then one Stats per group row.
func (h *Handler) overviewRows(r *http.Request) (*overviewView, error) {
	// A rescan is a click on the overview's own link (or a typed URL): a page of another
	// site must not be able to make the dashboard scan the keyspace.
	site := r.Header.Get("Sec-Fetch-Site")
	rescan := r.FormValue("rescan") != "" && (site == "" || site == "same-origin" || site == "none")
	all, at, err := h.catalog.get(r.Context(), rescan)
	if err != nil && at.IsZero() {
		return nil, err
	}
	v := &overviewView{Query: r.FormValue("q"), Discovered: at, Multi: len(h.opts.Backends) > 1,
		DiscoverIn: max(0, time.Until(at.Add(h.opts.DiscoverEvery)))}
	if err != nil {
		v.Err = "topic discovery failed (the rows of a backend that failed are those found before): " + err.Error()
	}
	rows := all
	if v.Query != "" {
		rows = nil
		for _, row := range all {
			if strings.Contains(row.Topic, v.Query) || strings.Contains(row.Group, v.Query) {
				rows = append(rows, row)
			}
		}
	}
	v.Total = len(rows)
	v.Pages = max(1, (len(rows)+h.opts.PageSize-1)/h.opts.PageSize)
	v.Page, _ = strconv.Atoi(r.FormValue("page"))
	v.Page = min(max(v.Page, 1), v.Pages)
	rows = rows[min((v.Page-1)*h.opts.PageSize, len(rows)):min(v.Page*h.opts.PageSize, len(rows))]
	for _, row := range rows {
		sr := statsRow{row: row}
		if row.Group != "" {
			st, err := h.backends[row.Backend].Stats(r.Context(), &backend.StatsParams{Topic: row.Topic, Group: row.Group})
			switch {
			case errors.Is(err, backend.ErrGroupNotFound), errors.Is(err, backend.ErrTopicNotFound):
				sr.Gone = true
				h.catalog.markStale()
			case err != nil:
				return nil, err
			}
			sr.Stats = st
			sr.Stuck = st.OldestPendingAge > h.opts.StuckAfter
		}
		v.Rows = append(v.Rows, sr)
	}
	return v, nil
}

// jsonRow is a statsRow as the overview's script reads it: counts, ages in ms, counters.
type jsonRow struct {
	Key           string `json:"key"`
	Ready         int64  `json:"ready"`
	Delayed       int64  `json:"delayed"`
	Pending       int64  `json:"pending"`
	Dead          int64  `json:"dead"`
	Backlog       int64  `json:"backlog"`
	OldestReady   int64  `json:"oldestReadyMs"`
	OldestPending int64  `json:"oldestPendingMs"`
	Paused        bool   `json:"paused"`
	Stuck         bool   `json:"stuck"`
	Gone          bool   `json:"gone"`
	Published     int64  `json:"published"`
	Acked         int64  `json:"acked"`
	Nacked        int64  `json:"nacked"`
	DeadLettered  int64  `json:"deadLettered"`
	// Reregistered counts the group's re-registrations after its state vanished from Redis,
	// the latest at ReregisteredAt (ms since the epoch, Redis clock; 0 when unknown).
	Reregistered   int64 `json:"reregistered"`
	ReregisteredAt int64 `json:"reregisteredAtMs"`
	// BacklogDropped counts what the topic's backlog dropped, as of the last discovery.
	BacklogDropped int64 `json:"backlogDropped"`
}

// overviewJSON answers the overview's script, about once a second: the same rows as the
// page with the same query, read again.
func (h *Handler) overviewJSON(w http.ResponseWriter, r *http.Request) {
	v, err := h.overviewRows(r)
	w.Header().Set("Cache-Control", "no-store")
	if err != nil {
		http.Error(w, err.Error(), statusOf(err))
		return
	}
	res := struct {
		At   int64     `json:"at"` // ms since the epoch, this process's clock
		Rows []jsonRow `json:"rows"`
	}{At: time.Now().UnixMilli(), Rows: make([]jsonRow, 0, len(v.Rows))}
	for _, sr := range v.Rows {
		s, c := sr.Stats, sr.Stats.Counters
		res.Rows = append(res.Rows, jsonRow{Key: sr.Key(), Ready: s.Ready, Delayed: s.Delayed, Pending: s.Pending,
			Dead: s.Dead, Backlog: sr.Backlog, OldestReady: s.OldestReadyAge.Milliseconds(),
			OldestPending: s.OldestPendingAge.Milliseconds(), Paused: s.Paused, Stuck: sr.Stuck, Gone: sr.Gone,
			Published: c.Published, Acked: c.Acked, Nacked: c.Nacked, DeadLettered: c.DeadLettered,
			Reregistered: c.Reregistered, ReregisteredAt: unixMilli(s.ReregisteredAt), BacklogDropped: sr.BacklogDropped})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(res)
}
