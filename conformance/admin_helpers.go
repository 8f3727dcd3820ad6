package conformance

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// need skips the test for want of what reason names, or fails it when the Harness declares
// itself Complete: a backend of relq's own must never skip a lifecycle case.
func need(t *testing.T, h Harness, ok bool, reason string) {
	t.Helper()
	if ok {
		return
	}
	if h.Complete {
		t.Fatalf("conformance: %s, but the Harness declares itself Complete", reason)
	}
	t.Skip(reason)
}

// adminOf returns the Harness's Admin, or the Backend when it implements backend.Admin.
func adminOf(t *testing.T, h Harness) backend.Admin {
	t.Helper()
	a := h.Admin
	if a == nil {
		a, _ = h.Backend.(backend.Admin)
	}
	need(t, h, a != nil, "the backend implements no backend.Admin and the Harness gives none")
	return a
}

// ephemeralOf returns the Backend as backend.Ephemeral.
func ephemeralOf(t *testing.T, h Harness) backend.Ephemeral {
	t.Helper()
	e, ok := h.Backend.(backend.Ephemeral)
	need(t, h, ok, "the backend implements no backend.Ephemeral")
	return e
}

// peerOf returns another Backend on the test's namespace, as another process has.
func peerOf(t *testing.T, h Harness) backend.Backend {
	t.Helper()
	need(t, h, h.Peer != nil, "the Harness gives no Peer to stand in for another process")
	b, err := h.Peer()
	require.NoError(t, err)
	return b
}

// topicKeys returns the keys the backend keeps for topic (Harness.Keys).
func topicKeys(t *testing.T, h Harness, topic string) []string {
	t.Helper()
	need(t, h, h.Keys != nil, "the Harness gives no Keys to list a topic's keys with")
	ks, err := h.Keys(topic)
	require.NoError(t, err)
	return ks
}

// keysNaming returns the keys one of whose parts (between ':', '{' and '}') is name. Group
// names hold none of those characters, so a key of a group's own names it this way.
func keysNaming(keys []string, name string) []string {
	var out []string
	for _, k := range keys {
		parts := strings.FieldsFunc(k, func(r rune) bool { return r == ':' || r == '{' || r == '}' })
		if slices.Contains(parts, name) {
			out = append(out, k)
		}
	}
	return out
}

// requireNoGroupKeys checks that no key of topic names group.
func requireNoGroupKeys(t *testing.T, h Harness, topic, group string) {
	t.Helper()
	require.Empty(t, keysNaming(topicKeys(t, h, topic), group), "keys of group %q of topic %q remain", group, topic)
}

// requireNoKeys waits until topic has no key in Redis, then checks that none comes back for
// a moment (a late write of a stopping subscriber would create one again).
func requireNoKeys(t *testing.T, h Harness, topic, why string) {
	t.Helper()
	var last []string
	ok := poll(waitTimeout, func() bool {
		last = topicKeys(t, h, topic)
		return len(last) == 0
	})
	require.True(t, ok, "%s: topic %q keeps keys %q", why, topic, last)
	never(t, 300*time.Millisecond, func() bool {
		last = topicKeys(t, h, topic)
		return len(last) > 0
	}, why+": keys came back")
}

// requireTopicGone checks that the Admin knows topic no more: Topic fails with
// ErrTopicNotFound and ListTopics leaves it out.
func requireTopicGone(t *testing.T, a backend.Admin, topic string) {
	t.Helper()
	_, err := a.Topic(context.Background(), topic)
	require.ErrorIs(t, err, backend.ErrTopicNotFound, "topic %q", topic)
	topics, err := a.ListTopics(context.Background())
	require.NoError(t, err)
	for _, ti := range topics {
		require.NotEqual(t, topic, ti.Name, "ListTopics lists a topic that has no key")
	}
}

// groupNames returns the names of groups, in their order.
func groupNames(groups []backend.GroupInfo) []string {
	names := make([]string, len(groups))
	for i, g := range groups {
		names[i] = g.Name
	}
	return names
}

func listGroups(t *testing.T, a backend.Admin, topic string) []backend.GroupInfo {
	t.Helper()
	groups, err := a.ListGroups(context.Background(), topic)
	require.NoError(t, err)
	return groups
}

// topicInfo returns Admin.Topic with an empty group list as nil, so infos compare.
func topicInfo(t *testing.T, a backend.Admin, topic string) backend.TopicInfo {
	t.Helper()
	ti, err := a.Topic(context.Background(), topic)
	require.NoError(t, err)
	return normalTopic(ti)
}

func normalTopic(ti backend.TopicInfo) backend.TopicInfo {
	if len(ti.Groups) == 0 {
		ti.Groups = nil
	}
	return ti
}

// showMessage returns Admin.Message of one message of a group.
func showMessage(t *testing.T, a backend.Admin, topic, group, id string) backend.MessageInfo {
	t.Helper()
	m, err := a.Message(context.Background(), &backend.MessageParams{Topic: topic, Group: group, ID: id})
	require.NoError(t, err, "message %s of group %q", id, group)
	require.Equal(t, id, m.ID)
	require.Equal(t, topic, m.Topic)
	require.Equal(t, group, m.Group)
	return m
}

// listAll pages through Admin.Messages from the first page and returns every message and
// how many pages it took. No ID may be listed twice, no page may hold more than p.Count.
func listAll(t *testing.T, a backend.Admin, p backend.MessagesParams) ([]backend.MessageInfo, int) {
	t.Helper()
	const maxPages = 1000
	count := p.Count
	if count == 0 {
		count = 100
	}
	p.Cursor = ""
	var all []backend.MessageInfo
	seen := map[string]bool{}
	for pages := 1; ; pages++ {
		require.LessOrEqual(t, pages, maxPages, "Messages gave no last page in %d pages", maxPages)
		page, err := a.Messages(context.Background(), &p)
		require.NoError(t, err, "page %d of the %s messages of group %q", pages, p.State, p.Group)
		require.LessOrEqual(t, len(page.Messages), count, "page %d holds more than Count", pages)
		for _, m := range page.Messages {
			require.False(t, seen[m.ID], "message %s listed twice (page %d)", m.ID, pages)
			seen[m.ID] = true
			require.Equal(t, p.State, m.State, "message %s listed as %s", m.ID, p.State)
			require.Equal(t, p.Topic, m.Topic)
			require.Equal(t, p.Group, m.Group)
		}
		all = append(all, page.Messages...)
		if page.Next == "" {
			return all, pages
		}
		p.Cursor = page.Next
	}
}

func messageIDs(ms []backend.MessageInfo) []string {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return ids
}

// clearErrors are the errors a call racing a delete may fail with: relq's own, never a raw
// script error.
var clearErrors = []error{backend.ErrTopicNotFound, backend.ErrGroupNotFound, backend.ErrGroupDeleted}

func isClearError(err error) bool {
	for _, e := range clearErrors {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// waitDone waits until done is closed (what says what that means), failing the test if it
// is not within waitTimeout.
func waitDone(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(waitTimeout):
		require.FailNow(t, "never happened: "+what, "waited %v", waitTimeout)
	}
}

// drainUntilClosed acks what ch delivers until it closes, recording each delivery, and
// closes the returned channel then. It never touches t.
func drainUntilClosed(ch <-chan *message.Message, r *recorder) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for msg := range ch {
			r.add(msg, 0)
			msg.Ack()
		}
	}()
	return done
}

// sleepUntil lets time pass until at: a wait for a deadline to be surely behind, never an
// assertion.
func sleepUntil(at time.Time) { time.Sleep(time.Until(at)) }

// groupState is what a delete elsewhere must leave alone in a group's Stats.
type groupState struct {
	counts   counts
	counters backend.Counters
	paused   bool
}

func stateOf(s backend.Stats) groupState {
	return groupState{counts: countsOf(s), counters: s.Counters, paused: s.Paused}
}

// requireSteadyState waits until the group's state is settled (nothing pending) and
// unchanged for a moment, and returns it.
func requireSteadyState(t *testing.T, h Harness, topic, group string) groupState {
	t.Helper()
	var last groupState
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		s, err := h.Backend.Stats(context.Background(), &backend.StatsParams{Topic: topic, Group: group})
		if !assert.NoError(c, err) {
			return
		}
		now := stateOf(s)
		assert.Zero(c, now.counts.Pending, "group %q of topic %q has deliveries in flight", group, topic)
		assert.Equal(c, last, now, "the state of group %q of topic %q still changes", group, topic)
		last = now
	}, waitTimeout, 50*time.Millisecond)
	return last
}
