package metrics

// What one scrape reads from a backend: its topics, the stats of their groups, and its
// eviction policy.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/relq/relq/backend"
)

// source is one backend and what the collector remembers of it.
type source struct {
	backend backend.Backend
	lister  backend.TopicLister // set when the topics are discovered at each scrape
	// admin is set when the backend has the Admin API, which describes a topic's backlog in
	// the round trip that lists its groups.
	admin backend.Admin
	// healthy is the outcome of the last scrape, so a state change is logged once.
	healthy atomic.Bool
	// evicting is whether the last scrape found an eviction policy that drops queue keys,
	// likewise.
	evicting atomic.Bool
}

// read returns every topic, the stats of every group of each, and the eviction policy where
// the backend reads it, or the first error: 1 round trip per topic for its groups (and, with
// the Admin API, its backlog) and 1 per group for its stats, 1 for the policy, plus the topic
// scan when discovering.
func (s *source) read(ctx context.Context, topics []string) result {
	var r result
	if er, ok := s.backend.(backend.EvictionReader); ok {
		e, err := er.Eviction(ctx)
		if err != nil {
			return result{err: fmt.Errorf("eviction policy: %w", err)}
		}
		r.eviction = &e
	}
	var err error
	if r.topics, err = s.readTopics(ctx, topics); err != nil {
		return result{err: err}
	}
	if r.stats, err = s.readStats(ctx, r.topics); err != nil {
		return result{err: err}
	}
	return r
}

// readTopics describes the configured topics, or every topic when discovering, sorted by
// name; a configured topic that has neither a group nor a backlog is left out.
func (s *source) readTopics(ctx context.Context, names []string) ([]backend.TopicInfo, error) {
	var out []backend.TopicInfo
	switch {
	case s.lister != nil && s.admin != nil:
		// The scan describes each topic it finds: no round trip more per topic.
		found, err := s.admin.ListTopics(ctx)
		if err != nil {
			return nil, fmt.Errorf("list topics: %w", err)
		}
		out = found
	case s.lister != nil:
		found, err := s.lister.TopicNames(ctx)
		if err != nil {
			return nil, fmt.Errorf("list topics: %w", err)
		}
		names = found
		fallthrough
	default:
		for _, topic := range names {
			if err := backend.ValidateName("topic", topic); err != nil {
				return nil, err
			}
			t, err := s.describe(ctx, topic)
			if errors.Is(err, backend.ErrTopicNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		}
	}
	// Sorted and unique already by contract; a duplicate would fail the whole scrape.
	slices.SortFunc(out, func(a, b backend.TopicInfo) int { return strings.Compare(a.Name, b.Name) })
	out = slices.CompactFunc(out, func(a, b backend.TopicInfo) bool { return a.Name == b.Name })
	for _, t := range out {
		if err := backend.ValidateName("topic", t.Name); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// describe returns a topic's groups, and its backlog where the backend has the Admin API.
func (s *source) describe(ctx context.Context, topic string) (backend.TopicInfo, error) {
	if s.admin != nil {
		t, err := s.admin.Topic(ctx, topic)
		if err != nil {
			return t, fmt.Errorf("topic %q: %w", topic, err)
		}
		return t, nil
	}
	groups, err := s.backend.GroupNames(ctx, topic)
	if err != nil {
		return backend.TopicInfo{}, fmt.Errorf("groups of topic %q: %w", topic, err)
	}
	return backend.TopicInfo{Name: topic, Groups: groups}, nil
}

// readStats returns the stats of every group of topics, or the first error.
func (s *source) readStats(ctx context.Context, topics []backend.TopicInfo) ([]backend.Stats, error) {
	var out []backend.Stats
	for _, t := range topics {
		for _, group := range t.Groups {
			if backend.ValidateName("group", group) != nil {
				// Another program's consumer group on a streams topic, under a name relq
				// does not accept: not relq's to report, and no reason to drop the rest.
				continue
			}
			st, err := s.backend.Stats(ctx, &backend.StatsParams{Topic: t.Name, Group: group})
			if err != nil {
				return nil, fmt.Errorf("stats of topic %q group %q: %w", t.Name, group, err)
			}
			st.Topic, st.Group = t.Name, group
			out = append(out, st)
		}
	}
	return out, nil
}
