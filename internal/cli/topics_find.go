package cli

// Which backend holds a topic. The list and zset backends keep the same registry, counters
// and dead-letter keys and differ only in a group's ready store (a LIST or a ZSET), so a
// topic with nothing ready in any group is found by both; the tools show it once, as
// "list|zset", read it through either (the numbers are the same), and ask for --backend
// before they change it.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/relq/relq/pubsub"
)

// topicRef is one topic of the session and the backends whose keys it matches: one, or list
// and zset when nothing tells them apart.
type topicRef struct {
	topic    string
	backends []*backend
}

// label is the backend column: "list", "streams", "list|zset".
func (r topicRef) label() string {
	names := make([]string, len(r.backends))
	for i, b := range r.backends {
		names[i] = b.name
	}
	return strings.Join(names, "|")
}

// ambiguous reports a topic that both list and zset find.
func (r topicRef) ambiguous() bool { return len(r.backends) > 1 }

// reader is the backend that reads the topic: any of them reads it alike.
func (r topicRef) reader() *backend { return r.backends[0] }

// writer is the backend that may change the topic, or an error asking for --backend.
func (r topicRef) writer(prefix string) (*backend, error) {
	if r.ambiguous() {
		return nil, fmt.Errorf("topic %q has nothing ready, so its keys under prefix %q do not tell whether the "+
			"list or the zset backend wrote it (they share every other key): pass --backend list or --backend zset",
			r.topic, prefix)
	}
	return r.backends[0], nil
}

// ambiguityNote explains the "list|zset" label under a table that shows one.
const ambiguityNote = "list|zset: nothing is ready in this topic, and the list and zset backends share every other key,\n" +
	"so its keys do not tell which one wrote it; the numbers read the same through either.\n" +
	"dead requeue and purge need --backend list or --backend zset for it.\n"

// merge turns each backend's topics into refs, sorted by topic then backend: a topic found by
// list and zset becomes one ref; streams topics always stand alone (their keys are others).
func merge(found map[*backend][]string, order []*backend) []topicRef {
	var refs []topicRef
	shared := map[string]int{} // topic -> index in refs of its list/zset ref
	for _, b := range order {
		for _, topic := range found[b] {
			if b.name == "list" || b.name == "zset" {
				if i, ok := shared[topic]; ok {
					refs[i].backends = append(refs[i].backends, b)
					continue
				}
				shared[topic] = len(refs)
			}
			refs = append(refs, topicRef{topic: topic, backends: []*backend{b}})
		}
	}
	slices.SortStableFunc(refs, func(a, b topicRef) int { return strings.Compare(a.topic, b.topic) })
	return refs
}

// discover returns every topic of the session's backends (a SCAN of the keyspace).
func (s *session) discover(ctx context.Context) ([]topicRef, error) {
	found := map[*backend][]string{}
	for _, b := range s.backends {
		topics, err := b.Topics(ctx)
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
	if err := pubsub.ValidateName("topic", topic); err != nil {
		return topicRef{}, err
	}
	found := map[*backend][]string{}
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
	where := fmt.Sprintf("under prefix %q in %s", s.prefix, s.backendsText())
	refs, err := s.discover(ctx)
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
	groups, err := ref.reader().Groups(ctx, ref.topic)
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
