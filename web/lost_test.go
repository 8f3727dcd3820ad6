package web_test

// What the dashboard shows of what Redis lost: a group registered again after its keys
// vanished, and a topic's backlog drops, on the overview (problems column and its JSON), the
// group page and the topic page.

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/keys"
)

// smallBacklog is the backend named name on e's client and prefix with a backlog of 3.
func smallBacklog(t *testing.T, c redis.UniversalClient, prefix, name string) backend.Backend {
	t.Helper()
	var b backend.Backend
	var err error
	if name == "list" {
		b, err = list.New(c, list.Options{Prefix: prefix, BacklogLimit: 3})
	} else {
		b, err = zset.New(c, zset.Options{Prefix: prefix, BacklogLimit: 3})
	}
	require.NoError(t, err)
	return b
}

// dropFrom publishes n messages to topic, which has no group, through b and returns how many
// the backlog dropped.
func dropFrom(t *testing.T, b backend.Backend, topic string, n int) int64 {
	t.Helper()
	msgs := make([]backend.OutMessage, n)
	for i := range msgs {
		msgs[i].Envelope = adaptertest.Envelope("signup")
	}
	res, err := b.Publish(ctxT(t), &backend.PublishParams{Topic: topic, Messages: msgs})
	require.NoError(t, err)
	return res.BacklogDropped
}

// forget deletes every key of topic, as FLUSHALL or another client's DEL would.
func forget(t *testing.T, c redis.UniversalClient, prefix, topic string) {
	t.Helper()
	found, err := c.Keys(ctxT(t), keys.Tag(prefix, topic)+"*").Result()
	require.NoError(t, err)
	require.NotEmpty(t, found)
	require.NoError(t, c.Del(ctxT(t), found...).Err())
}

// registerAgain registers group again as its running subscription does when it finds the
// group's keys gone, knowing of known re-registrations before.
func registerAgain(t *testing.T, b backend.Backend, topic, group string, known int64) backend.RegisterAgainResult {
	t.Helper()
	res, err := b.RegisterAgain(ctxT(t), &backend.RegisterAgainParams{Topic: topic, Group: group, Known: known})
	require.NoError(t, err)
	require.True(t, res.Registered)
	return res
}

// rowOf is the overview's row of key in body.
func rowOf(t *testing.T, body, key string) string {
	t.Helper()
	row := regexp.MustCompile(`(?s)<tr data-key="` + regexp.QuoteMeta(key) + `"[^>]*>.*?</tr>`).FindString(body)
	require.NotEmpty(t, row, "no row %q", key)
	return row
}

// utc is a time as the dashboard writes it.
func utc(at time.Time) string { return at.UTC().Format("2006-01-02 15:04:05 UTC") }

func TestPagesShowWhatRedisLost(t *testing.T) {
	for _, backend := range []string{"list", "zset"} {
		t.Run(backend, func(t *testing.T) {
			s := newSite(t, backend, nil)
			e := s.env
			require.EqualValues(t, 2, dropFrom(t, smallBacklog(t, e.C, e.Prefix, backend), "signups", 5))
			e.EnsureGroup("orders", "billing")
			e.EnsureGroup("orders", "audit")
			e.Publish("orders", "a")
			forget(t, e.C, e.Prefix, "orders")
			again := registerAgain(t, e.B, "orders", "billing", 0)
			e.EnsureGroup("orders", "audit") // a new subscriber's registration: not a re-registration

			home := s.page("/")
			billing := rowOf(t, home, backend+" orders billing")
			require.Contains(t, billing, `class="warn"`)
			require.Regexp(t, `<span class="tag warn" title="Its state vanished from Redis \(a restart without persistence, a failover, `+
				`FLUSHALL, keys deleted by another client\) and its subscriptions registered it again: 1 time, the latest at `+
				regexp.QuoteMeta(utc(again.At))+`. Messages it held then may be lost.">re-registered 1× · \d[\d hms]*? ago</span>`, billing)
			audit := rowOf(t, home, backend+" orders audit")
			require.NotContains(t, audit, "re-registered")
			require.NotContains(t, audit, `class="warn"`)
			signups := rowOf(t, home, backend+" signups ")
			require.Contains(t, signups, `class="warn"`)
			require.Contains(t, signups, `">backlog dropped 2</span>`)
			require.Contains(t, signups, `title="The topic's backlog dropped 2 messages, the oldest first, past its limit while the topic had no group: no group received them."`)
			require.NotContains(t, billing, "backlog dropped", "orders' backlog dropped nothing")

			var polled struct {
				Rows []struct {
					Key              string
					Reregistered     int64
					ReregisteredAtMs int64
					BacklogDropped   int64
				}
			}
			require.NoError(t, json.Unmarshal([]byte(s.page("/api/overview")), &polled))
			got := map[string][3]int64{}
			for _, r := range polled.Rows {
				got[r.Key] = [3]int64{r.Reregistered, r.ReregisteredAtMs, r.BacklogDropped}
			}
			require.Equal(t, map[string][3]int64{
				backend + " orders audit":   {0, 0, 0},
				backend + " orders billing": {1, again.At.UnixMilli(), 0},
				backend + " signups ":       {0, 0, 2},
			}, got)

			group := s.page("/group" + q("b", backend, "t", "orders", "g", "billing"))
			require.Contains(t, group, `<dd id="n-reregistered">1</dd>`)
			require.Regexp(t, `<p class="flash warn" id="reregistered">Its state vanished from Redis \(.*\) and its subscriptions `+
				`registered it again: 1 time, the latest at `+regexp.QuoteMeta(utc(again.At))+` \(\d[\d hms]*? ago\)\. Messages it held then may be lost\.</p>`, group)
			group = s.page("/group" + q("b", backend, "t", "orders", "g", "audit"))
			require.Contains(t, group, `<dd id="n-reregistered">0</dd>`)
			require.NotContains(t, group, `id="reregistered"`)

			topic := s.page("/topic" + q("b", backend, "t", "signups"))
			require.Contains(t, topic, `<p class="flash warn" id="dropped">The backlog dropped <strong>2</strong> messages, the oldest first, `+
				`past its limit while the topic had no group: no group received them.</p>`)
			require.False(t, strings.Contains(s.page("/topic"+q("b", backend, "t", "orders")), `id="dropped"`))
		})
	}
}
