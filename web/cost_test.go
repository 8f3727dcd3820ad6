package web_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/web"
)

// counter is a go-redis hook that counts the commands a client sends, by name.
type counter struct {
	mu   sync.Mutex
	cmds map[string]int
}

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.add(cmd)
		return next(ctx, cmd)
	}
}
func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.add(cmd)
		}
		return next(ctx, cmds)
	}
}
func (c *counter) add(cmd redis.Cmder) {
	c.mu.Lock()
	c.cmds[strings.ToLower(cmd.Name())]++
	c.mu.Unlock()
}

// during counts the commands that fn sends.
func (c *counter) during(fn func()) (total int, names map[string]int) {
	c.mu.Lock()
	c.cmds = map[string]int{}
	c.mu.Unlock()
	fn()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.cmds {
		total += n
	}
	return total, c.cmds
}

// fill gives group "billing" of topic n messages in every state.
func fill(t *testing.T, e *adaptertest.Env, topic string, n int) {
	e.EnsureGroup(topic, "billing")
	for i := 0; i < 4*n; i += 500 {
		batch := make([]string, min(500, 4*n-i))
		for j := range batch {
			batch[j] = fmt.Sprintf(`{"n":%d}`, i+j)
		}
		e.Publish(topic, batch...)
	}
	for i := 0; i < n; i += 500 {
		e.PublishDelayed(topic, time.Hour, make([]string, min(500, n-i))...)
	}
	for i := 0; i < n; i += 500 {
		ds := e.Claim(topic, "billing", "dying", min(500, n-i))
		items := make([]backend.NackItem, len(ds))
		for j, d := range ds {
			items[j] = backend.NackItem{ID: d.ID, Attempt: d.Attempt, Reason: fmt.Sprintf("reason %d", j%3)}
		}
		require.Equal(t, len(ds), e.Nack(topic, "billing", "dying", 1, items...).DeadLettered)
	}
	for i := 0; i < n; i += 500 {
		e.ClaimLease(topic, "billing", "worker", min(500, n-i), time.Hour)
	}
}

// TestPageLoadCostIsBounded loads every page of a group holding 60 messages in each state
// and of one holding thousands, and checks that each page sends the same few commands to
// Redis: listings are paged, and no page load scans the keyspace.
func TestPageLoadCostIsBounded(t *testing.T) {
	for _, backend := range []string{"list", "zset", "streams"} {
		t.Run(backend, func(t *testing.T) {
			srv, prefix := adaptertest.Server(t)
			cnt := &counter{cmds: map[string]int{}}
			c := redis.NewClient(&redis.Options{Addr: srv.Options().Addr})
			c.AddHook(cnt)
			t.Cleanup(func() { _ = c.Close() })
			// No discovery runs during the loads measured but the first: it is older than an hour.
			s := newSiteOn(t, c, prefix, backend, func(o *web.Options) { o.PageSize, o.DiscoverEvery = 50, time.Hour })
			fill(t, s.env, "small", 60) // more than a page in every state
			fill(t, s.env, "large", 2000)
			id := s.env.Publish("small", "x")[0]

			pages := func(topic string) map[string]string {
				g := func(kv ...string) string {
					return q(append([]string{"b", backend, "t", topic, "g", "billing"}, kv...)...)
				}
				return map[string]string{
					"overview": "/" + q("q", topic), "api": "/api/overview" + q("q", topic),
					"topic": "/topic" + q("b", backend, "t", topic), "group": "/group" + g(),
					"delayed": "/group" + g("state", "delayed"), "pending": "/group" + g("state", "pending"),
					"dead": "/group" + g("state", "dead"), "dead letters": "/dead" + g(),
					"message": "/message" + g("id", id),
				}
			}
			s.page("/") // the first discovery, in the background, before the loads measured
			small, large := pages("small"), pages("large")
			large["message"] = small["message"] // one message costs what it costs
			for name := range small {
				s.page(small[name]) // load the scripts
				s.page(large[name])
				nSmall, cmds := cnt.during(func() { s.page(small[name]) })
				nLarge, cmdsLarge := cnt.during(func() { s.page(large[name]) })
				t.Logf("%-12s %d commands %v; with 2,000 in each state: %d %v", name, nSmall, cmds, nLarge, cmdsLarge)
				require.Equal(t, nSmall, nLarge, "%s: the cost of a page load grows with the queue", name)
				require.LessOrEqual(t, nLarge, 6, name)
				require.Zero(t, cmds["scan"]+cmdsLarge["scan"], "%s: a page load scanned the keyspace", name)
			}
		})
	}
}

// TestOverviewCostIsOnePerRow checks that the overview of many topics reads one page of rows:
// one Stats command per group shown, whatever the number of topics.
func TestOverviewCostIsOnePerRow(t *testing.T) {
	srv, prefix := adaptertest.Server(t)
	cnt := &counter{cmds: map[string]int{}}
	c := redis.NewClient(&redis.Options{Addr: srv.Options().Addr})
	c.AddHook(cnt)
	t.Cleanup(func() { _ = c.Close() })
	s := newSiteOn(t, c, prefix, "list", func(o *web.Options) { o.PageSize, o.DiscoverEvery = 20, time.Hour })
	for i := range 70 {
		s.env.EnsureGroup(fmt.Sprintf("topic-%02d", i), "g")
	}
	require.Contains(t, s.page("/"), "page 1 of 4 · 70 rows")
	for _, path := range []string{"/", "/?page=4", "/api/overview?page=2"} {
		n, cmds := cnt.during(func() { s.page(path) })
		want := 20
		if path == "/?page=4" {
			want = 10
		}
		require.Equal(t, want, n, "%s: %v", path, cmds)
		require.Zero(t, cmds["scan"], path)
	}
}
