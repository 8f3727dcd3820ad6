package cli

// Which backend holds a topic. Each backend finds its own topics by a key only it writes
// (list T:groups, zset T:zgroups, streams T:stream), so a topic name used by two backends
// under one prefix shows twice, and the commands that take --topic ask for --backend.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/relq/relq/backend"
)

// topicRef is one topic of the session and the backend whose keys hold it.
type topicRef struct {
	topic   string
	backend *source
}

// label is the backend column: "list", "zset" or "streams".
func (r topicRef) label() string { return r.backend.name }

// merge turns each backend's topics into refs, sorted by topic, then in the backends' order.
func merge(found map[*source][]string, order []*source) []topicRef {
	var refs []topicRef
	for _, b := range order {
		for _, topic := range found[b] {
			refs = append(refs, topicRef{topic: topic, backend: b})
		}
	}
	slices.SortStableFunc(refs, func(a, b topicRef) int { return strings.Compare(a.topic, b.topic) })
	return refs
}

// discover returns every topic of the session's backends (a SCAN of the keyspace).
func (s *session) discover(ctx context.Context) ([]topicRef, error) {
	found := map[*source][]string{}
	for _, b := range s.backends {
		topics, err := b.TopicNames(ctx)
		if err != nil {
			return nil, s.explain(fmt.Errorf("%s backend: find topics: %w", b.name, err))
		}
		found[b] = topics
	}
	return merge(found, s.backends), nil
}

// resolve finds topic without a SCAN (HasTopic on each backend), or returns an error that
// lists the topics that exist.
func (s *session) resolve(ctx context.Context, topic string) (topicRef, error) {
	if err := backend.ValidateName("topic", topic); err != nil {
		return topicRef{}, err
	}
	found := map[*source][]string{}
	for _, b := range s.backends {
		ok, err := b.HasTopic(ctx, topic)
		if err != nil {
			return topicRef{}, s.explain(fmt.Errorf("%s backend: topic %q: %w", b.name, topic, err))
		}
		if ok {
			found[b] = []string{topic}
		}
	}
	refs := merge(found, s.backends)
	switch len(refs) {
	case 1:
		return refs[0], nil
	case 0:
		return topicRef{}, s.notFound(ctx, topic)
	}
	labels := make([]string, len(refs))
	for i, r := range refs {
		labels[i] = r.label()
	}
	return topicRef{}, fmt.Errorf("topic %q exists under prefix %q in more than one backend (%s): pass --backend",
		topic, s.prefix, strings.Join(labels, ", "))
}

// notFound is the error for an unknown topic; it lists the topics there are.
func (s *session) notFound(ctx context.Context, topic string) error {
	refs, err := s.discover(ctx)
	return s.notFoundAmong(topic, refs, err)
}

// notFoundAmong is the error for an unknown topic, given the topics there are (or the error
// that listing them gave).
func (s *session) notFoundAmong(topic string, refs []topicRef, err error) error {
	where := fmt.Sprintf("under prefix %q in %s", s.prefix, s.backendsText())
	if err != nil {
		return fmt.Errorf("topic %q not found %s (and listing the topics failed: %w)", topic, where, err)
	}
	if len(refs) == 0 {
		return fmt.Errorf("topic %q not found: there are no topics %s at all (is --prefix right?)", topic, where)
	}
	list := make([]string, len(refs))
	for i, r := range refs {
		list[i] = fmt.Sprintf("%s (%s)", r.topic, r.label())
	}
	return fmt.Errorf("topic %q not found %s; topics: %s", topic, where, strings.Join(list, ", "))
}

// backendsText names the backends looked in: "the list backend", "list, zset and streams".
func (s *session) backendsText() string {
	if len(s.backends) == 1 {
		return "the " + s.backends[0].name + " backend"
	}
	return "the list, zset and streams backends"
}

// groups returns the groups of ref, checking that group (when not empty) is one of them.
func (s *session) groups(ctx context.Context, ref topicRef, group string) ([]string, error) {
	groups, err := ref.backend.GroupNames(ctx, ref.topic)
	if err != nil {
		return nil, s.explain(fmt.Errorf("topic %q: groups: %w", ref.topic, err))
	}
	if group == "" || slices.Contains(groups, group) {
		return groups, nil
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("group %q not found: topic %q (%s) has no groups", group, ref.topic, ref.label())
	}
	return nil, fmt.Errorf("group %q not found on topic %q (%s); its groups: %s",
		group, ref.topic, ref.label(), strings.Join(groups, ", "))
}
