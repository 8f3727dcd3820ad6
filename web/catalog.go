package web

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/relq/relq/backend"
)

// catalog keeps the topics and groups of every backend, found by Admin.ListTopics (a SCAN of
// the keyspace). A page load reads it and does not scan: a discovery runs in the background
// when the last one is older than Options.DiscoverEvery or a delete made it stale. Only the
// very first page load waits for one, and a "Rescan" asks for one and waits for it.
type catalog struct {
	h *Handler

	mu      sync.Mutex
	rows    []row
	at      time.Time // when the rows were discovered; zero before the first discovery
	err     error     // the last discovery's error
	stale   bool      // a delete happened since: discover at the next get
	running bool
	done    chan struct{} // closed when the running discovery ends
	first   chan struct{} // closed when the first discovery ends
	started bool          // the first discovery started (or Close came first)
	closed  bool
	// forgets are the deletes made while a discovery runs, which it applies to what it found
	// (it may have read the keys before the delete).
	forgets []forgotten
}

// forgotten is a deleted topic (group "") or group.
type forgotten struct{ backend, topic, group string }

func (f forgotten) covers(r row) bool {
	return r.Backend == f.backend && r.Topic == f.topic && (f.group == "" || r.Group == f.group)
}

// row is one line of the overview: a group of a topic, or a topic's backlog when the topic
// has no group yet (Group ""). Backlog and BacklogDropped are the topic's, as of the
// discovery.
type row struct {
	Backend        string
	Topic          string
	Group          string
	Backlog        int64
	BacklogDropped int64
}

func newCatalog(h *Handler) *catalog { return &catalog{h: h, first: make(chan struct{})} }

// get returns the rows and when they were discovered, starting a discovery when they are
// older than Options.DiscoverEvery, stale, or older than rescanMin when rescan is asked. It
// waits for the first discovery, and for the running one when rescan is asked; otherwise a
// discovery goes on in the background.
func (c *catalog) get(ctx context.Context, rescan bool) ([]row, time.Time, error) {
	c.mu.Lock()
	age := time.Since(c.at)
	// A stale catalog, or a rescan, starts one no sooner than rescanMin after the last: a
	// row that keeps reporting its group gone must not make every poll scan the keyspace.
	if !c.running && (!c.started || age >= c.h.opts.DiscoverEvery || (c.stale || rescan) && age >= rescanMin) {
		c.start()
	}
	wait := c.first
	if rescan && c.running {
		wait = c.done
	}
	c.mu.Unlock()
	select {
	case <-wait:
	case <-ctx.Done():
		return nil, time.Time{}, ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rows, c.at, c.err
}

// markStale makes the next get discover again: a page met a group that is gone.
func (c *catalog) markStale() {
	c.mu.Lock()
	c.stale = true
	c.mu.Unlock()
}

// forget drops the rows of a deleted topic (group "") or group at once, so the page after the
// delete no longer lists them, and makes the next get discover again.
func (c *catalog) forget(backend, topic, group string) {
	f := forgotten{backend, topic, group}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rows = slices.DeleteFunc(slices.Clone(c.rows), f.covers)
	c.stale = true
	if c.running {
		c.forgets = append(c.forgets, f)
	}
}

// close stops discoveries from starting; the Handler then waits for the running one.
func (c *catalog) close() {
	c.mu.Lock()
	c.closed = true
	if !c.started { // nobody will close first
		c.started = true
		c.err = errors.New("relq web: the dashboard is closed")
		close(c.first)
	}
	c.mu.Unlock()
}

// start runs a discovery in the background; c.mu is held.
func (c *catalog) start() {
	if c.closed {
		return
	}
	first := !c.started
	c.started, c.running, c.stale = true, true, false
	c.forgets = nil
	c.done = make(chan struct{})
	done := c.done
	c.h.wg.Add(1)
	go func() {
		defer close(done)
		defer c.h.wg.Done()
		ctx, cancel := context.WithTimeout(c.h.ctx, time.Minute)
		rows, failed, err := c.discover(ctx)
		cancel()
		c.mu.Lock()
		defer c.mu.Unlock()
		c.running = false
		c.err = err
		for _, r := range c.rows { // a backend that failed keeps the rows found before
			if failed[r.Backend] {
				rows = append(rows, r)
			}
		}
		sortRows(rows, c.h.opts.Backends)
		for _, f := range c.forgets {
			rows = slices.DeleteFunc(rows, f.covers)
		}
		c.rows, c.at = rows, time.Now()
		c.forgets = nil
		if err != nil {
			c.h.log.Error("relq web: topic discovery failed", "error", err)
		}
		if first {
			close(c.first)
		}
	}()
}

// discover lists every topic and group of every backend. A backend whose listing fails is
// named in failed, and its error joined into err; the others' rows are returned.
func (c *catalog) discover(ctx context.Context) (rows []row, failed map[string]bool, err error) {
	failed = map[string]bool{}
	var errs []error
	for _, b := range c.h.opts.Backends {
		topics, err := b.Admin.ListTopics(ctx)
		if err != nil {
			failed[b.Name] = true
			errs = append(errs, fmt.Errorf("%s backend: list topics: %w", b.Name, err))
			continue
		}
		for _, t := range topics {
			rows = append(rows, topicRows(b.Name, t)...)
		}
	}
	return rows, failed, errors.Join(errs...)
}

// sortRows sorts rows by topic, then in the order of the backends, then by group.
func sortRows(rows []row, backends []Backend) {
	order := map[string]int{}
	for i, b := range backends {
		order[b.Name] = i
	}
	slices.SortStableFunc(rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(order[a.Backend], order[b.Backend]), cmp.Compare(a.Group, b.Group))
	})
}

// topicRows are the overview rows of one topic: one per group, or one for its backlog.
func topicRows(backend string, t backend.TopicInfo) []row {
	if len(t.Groups) == 0 {
		return []row{{Backend: backend, Topic: t.Name, Backlog: t.Backlog, BacklogDropped: t.BacklogDropped}}
	}
	rows := make([]row, 0, len(t.Groups))
	for _, g := range t.Groups {
		rows = append(rows, row{Backend: backend, Topic: t.Name, Group: g, Backlog: t.Backlog, BacklogDropped: t.BacklogDropped})
	}
	return rows
}
