package cli

// The topic or group an Admin verb (topic, group, msg) works on: found through each
// backend's backend.Admin, and Admin's typed errors told in words that say what exists.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/relq/relq/backend"
	"github.com/spf13/cobra"
)

// adminTopic is a topic found through a backend's Admin API.
type adminTopic struct {
	s     *session
	ref   topicRef
	admin backend.Admin
	info  backend.TopicInfo
}

// adminGroup is a group of an adminTopic.
type adminGroup struct {
	*adminTopic
	group string
}

// admin is b's Admin API; every backend of relq implements it.
func (b *source) admin() (backend.Admin, error) {
	a, ok := b.finder.(backend.Admin)
	if !ok {
		return nil, fmt.Errorf("the %s backend of this build has no Admin API (backend.Admin), which this command needs", b.name)
	}
	return a, nil
}

// describe is `orders (list backend, prefix "shop")`.
func (t *adminTopic) describe() string {
	return fmt.Sprintf("%s (%s backend, prefix %q)", t.ref.topic, t.ref.label(), t.s.prefix)
}

// name is "orders/billing".
func (g *adminGroup) name() string { return g.ref.topic + "/" + g.group }

// describe is `orders/billing (list backend, prefix "shop")`.
func (g *adminGroup) describe() string {
	return fmt.Sprintf("%s (%s backend, prefix %q)", g.name(), g.ref.label(), g.s.prefix)
}

// listTopics lists the topics of every backend of the session (a SCAN of the keyspace),
// sorted by name, then in the backends' order.
func (s *session) listTopics(ctx context.Context) ([]*adminTopic, error) {
	var all []*adminTopic
	for _, b := range s.backends {
		a, err := b.admin()
		if err != nil {
			return nil, err
		}
		infos, err := a.ListTopics(ctx)
		if err != nil {
			return nil, s.explain(fmt.Errorf("%s backend: list topics: %w", b.name, err))
		}
		for _, info := range infos {
			all = append(all, &adminTopic{s: s, ref: topicRef{topic: info.Name, backend: b}, admin: a, info: info})
		}
	}
	slices.SortStableFunc(all, func(a, b *adminTopic) int { return strings.Compare(a.ref.topic, b.ref.topic) })
	return all, nil
}

// findTopic finds topic on the session's backends (Admin.Topic, no SCAN unless it is not
// found: then the error lists the topics there are).
func (s *session) findTopic(ctx context.Context, topic string) (*adminTopic, error) {
	if err := backend.ValidateName("topic", topic); err != nil {
		return nil, err
	}
	var found []*adminTopic
	for _, b := range s.backends {
		a, err := b.admin()
		if err != nil {
			return nil, err
		}
		info, err := a.Topic(ctx, topic)
		if errors.Is(err, backend.ErrTopicNotFound) {
			continue
		}
		if err != nil {
			return nil, s.explain(fmt.Errorf("%s backend: topic %q: %w", b.name, topic, err))
		}
		found = append(found, &adminTopic{s: s, ref: topicRef{topic: topic, backend: b}, admin: a, info: info})
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		all, err := s.listTopics(ctx)
		refs := make([]topicRef, len(all))
		for i, t := range all {
			refs[i] = t.ref
		}
		return nil, s.notFoundAmong(topic, refs, err)
	}
	labels := make([]string, len(found))
	for i, t := range found {
		labels[i] = t.ref.label()
	}
	return nil, fmt.Errorf("topic %q exists under prefix %q in more than one backend (%s): pass --backend",
		topic, s.prefix, strings.Join(labels, ", "))
}

// openTopic connects and finds topic. The caller closes t.s.
func openTopic(ctx context.Context, env Env, conn *connOptions, topic string) (*adminTopic, error) {
	s, err := conn.connect(ctx, env)
	if err != nil {
		return nil, err
	}
	t, err := s.findTopic(ctx, topic)
	if err != nil {
		s.Close()
		return nil, err
	}
	return t, nil
}

// openGroup connects and finds group on topic. The caller closes g.s.
func openGroup(ctx context.Context, env Env, conn *connOptions, topic, group string) (*adminGroup, error) {
	if err := backend.ValidateName("group", group); err != nil {
		return nil, err
	}
	t, err := openTopic(ctx, env, conn, topic)
	if err != nil {
		return nil, err
	}
	g := &adminGroup{adminTopic: t, group: group}
	if !slices.Contains(t.info.Groups, group) {
		t.s.Close()
		return nil, g.notFound()
	}
	return g, nil
}

// onTopic makes the RunE of a verb on topic args[0]: it connects, finds the topic (or says
// which there are), runs do on it and closes the connection, so that no verb forgets to.
func onTopic(env Env, conn *connOptions, do func(cmd *cobra.Command, t *adminTopic) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		t, err := openTopic(cmd.Context(), env, conn, args[0])
		if err != nil {
			return err
		}
		defer t.s.Close()
		return do(cmd, t)
	}
}

// onGroup makes the RunE of a verb on group args[1] of topic args[0], as onTopic does; do
// gets args for what follows them (a message ID).
func onGroup(env Env, conn *connOptions, do func(cmd *cobra.Command, g *adminGroup, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		g, err := openGroup(cmd.Context(), env, conn, args[0], args[1])
		if err != nil {
			return err
		}
		defer g.s.Close()
		return do(cmd, g, args)
	}
}

// notFound is the error for a group the topic does not have; it lists those it has.
func (g *adminGroup) notFound() error {
	if len(g.info.Groups) == 0 {
		return fmt.Errorf("group %q not found: topic %q (%s) has no groups", g.group, g.ref.topic, g.ref.label())
	}
	return fmt.Errorf("group %q not found on topic %q (%s); its groups: %s",
		g.group, g.ref.topic, g.ref.label(), strings.Join(g.info.Groups, ", "))
}

// explain tells an error of the topic's Admin calls in words; what says what failed.
func (t *adminTopic) explain(what string, err error) error {
	if errors.Is(err, backend.ErrTopicNotFound) {
		return fmt.Errorf("topic %s is gone: it was deleted meanwhile", t.describe())
	}
	return t.s.explain(fmt.Errorf("%s: %w", what, err))
}

// explain tells an error of the group's Admin calls in words; what says what failed.
func (g *adminGroup) explain(what string, err error) error {
	switch {
	case errors.Is(err, backend.ErrGroupNotFound), errors.Is(err, backend.ErrGroupDeleted):
		return fmt.Errorf("group %s is gone: it was deleted meanwhile", g.describe())
	case errors.Is(err, backend.ErrBadCursor):
		return fmt.Errorf("%s: the --cursor given is not one that a page of this listing printed "+
			"(a cursor is valid for the topic, group and --state it came from); leave it out to start at the top", what)
	}
	return g.adminTopic.explain(what, err)
}

// noMessage is the error for an ID the group does not hold.
func (g *adminGroup) noMessage(id string) error {
	return fmt.Errorf("no message %q in %s: the group does not hold it (relq msg ls %s %s --state STATE lists what it holds)",
		id, g.describe(), g.ref.topic, g.group)
}

// relqGroup reports whether group is one relq can read: a streams topic may carry another
// program's consumer group, under a name relq refuses, which the listings leave out.
func relqGroup(group string) bool { return backend.ValidateName("group", group) == nil }

// groupStats reads the counts of group, one of the topic's groups as listed.
func (t *adminTopic) groupStats(ctx context.Context, group string) (backend.Stats, error) {
	st, err := t.admin.Stats(ctx, &backend.StatsParams{Topic: t.ref.topic, Group: group})
	if err != nil {
		return backend.Stats{}, t.explain("stats of "+t.ref.topic+"/"+group, err)
	}
	return st, nil
}

// stats reads the group's counts.
func (g *adminGroup) stats(ctx context.Context) (backend.Stats, error) {
	st, err := g.admin.Stats(ctx, &backend.StatsParams{Topic: g.ref.topic, Group: g.group})
	if err != nil {
		return backend.Stats{}, g.explain("stats of "+g.name(), err)
	}
	return st, nil
}
