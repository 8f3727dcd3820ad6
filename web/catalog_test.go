package web_test

import (
	"context"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/web"
)

// gatedAdmin stands for a slow SCAN: its second topic discovery reads the keyspace, then
// waits for release; the ones after it wait until the dashboard closes, so that what the
// overview shows is what the second one found.
type gatedAdmin struct {
	backend.Admin
	calls   atomic.Int32
	read    chan struct{}
	release chan struct{}
}

func (g *gatedAdmin) ListTopics(ctx context.Context) ([]backend.TopicInfo, error) {
	switch g.calls.Add(1) {
	case 1:
		return g.Admin.ListTopics(ctx)
	case 2:
		topics, err := g.Admin.ListTopics(ctx)
		select { // the test may have failed and closed the dashboard: never block its Close
		case g.read <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return topics, err
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestDeletedTopicStaysOffTheOverview deletes a topic while a discovery that read the
// keyspace before the delete is still running: when that discovery ends, the overview must
// not list the topic again.
func TestDeletedTopicStaysOffTheOverview(t *testing.T) {
	gate := &gatedAdmin{read: make(chan struct{}), release: make(chan struct{})}
	s := newSite(t, "list", func(o *web.Options) {
		gate.Admin = o.Backends[0].Admin
		o.Backends[0].Admin = gate
		o.DiscoverEvery = time.Millisecond // every page load starts one, in the background
	})
	s.env.EnsureGroup("orders", "billing")
	s.env.EnsureGroup("emails", "sender")
	require.Contains(t, s.page("/"), `>orders<`) // the first discovery

	// A page load starts the second once the first is older than DiscoverEvery; it reads
	// both topics and waits.
	require.Eventually(t, func() bool {
		s.page("/api/overview")
		select {
		case <-gate.read:
			return true
		case <-time.After(5 * time.Millisecond):
			return false
		}
	}, 10*time.Second, time.Millisecond)
	code, _, _ := s.post("/delete-topic", url.Values{"b": {"list"}, "t": {"orders"}, "confirm": {"yes"}})
	require.Equal(t, http.StatusSeeOther, code)
	require.NotContains(t, s.page("/"), `>orders<`, "gone at once")
	close(gate.release)
	// A third discovery starts only once the second has ended and its rows are in.
	require.Eventually(t, func() bool { s.page("/api/overview"); return gate.calls.Load() == 3 }, 10*time.Second, time.Millisecond)
	body := s.page("/")
	require.NotContains(t, body, `>orders<`, "a discovery that read the keys before the delete brought it back")
	require.Contains(t, body, `>emails<`)
}
