package web_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/web"
)

// TestPagesShowEveryState renders every page on each backend with a message in every state
// and checks that each shows what an operator looks for.
func TestPagesShowEveryState(t *testing.T) {
	for _, be := range []string{"list", "zset", "streams"} {
		t.Run(be, func(t *testing.T) {
			s := newSite(t, be, nil)
			s.env.EnsureGroup("orders", "billing")
			dead := s.deadLetter("orders", "billing", `{"order":7}`, "card declined")
			ready := s.env.Publish("orders", `{"order":1,"items":["a","b"]}`, "plain text note")[0]
			delayed := s.env.PublishDelayed("orders", time.Hour, "later")[0]
			s.env.Publish("orders", "held")
			held := s.env.Claim("orders", "billing", "worker-1", 2)
			require.Len(t, held, 2)

			home := s.page("/")
			require.Contains(t, home, ">orders<")
			require.Contains(t, home, ">billing<")
			require.Contains(t, home, `data-key="`+be+` orders billing"`)

			topic := s.page("/topic" + q("b", be, "t", "orders"))
			require.Contains(t, topic, "billing")
			require.Contains(t, topic, `id="delete-topic"`)

			group := s.page("/group" + q("b", be, "t", "orders", "g", "billing"))
			require.Contains(t, group, "worker-1", "the consumer holding messages")
			require.Contains(t, group, `id="pause"`)
			for _, st := range backend.States {
				body := s.page("/group" + q("b", be, "t", "orders", "g", "billing", "state", string(st)))
				switch st {
				case backend.StateDelayed:
					require.Contains(t, body, ">"+delayed+"<")
				case backend.StatePending:
					require.Contains(t, body, ">"+held[0].ID+"<")
				case backend.StateDead:
					require.Contains(t, body, "card declined")
				}
			}

			msg := s.page("/message" + q("b", be, "t", "orders", "g", "billing", "id", dead))
			require.Contains(t, msg, "card declined")
			require.Contains(t, msg, "JSON, 11 bytes")
			require.Contains(t, msg, "&#34;order&#34;: 7", "the payload indented as JSON")
			require.Contains(t, msg, `id="requeue"`)
			msg = s.page("/message" + q("b", be, "t", "orders", "g", "billing", "id", delayed))
			require.Contains(t, msg, `id="run"`)
			require.Contains(t, msg, "text, 5 bytes")
			msg = s.page("/message" + q("b", be, "t", "orders", "g", "billing", "id", ready, "as", "hex"))
			require.Contains(t, msg, "binary, hex dump")
			require.Contains(t, msg, "7b 22 6f 72")

			deadPage := s.page("/dead" + q("b", be, "t", "orders", "g", "billing"))
			require.Contains(t, deadPage, "card declined")
			require.Contains(t, deadPage, `value="`+dead+`"`)
		})
	}
}

// TestMissingThingsAre404 checks that a page about something that does not exist says so.
func TestMissingThingsAre404(t *testing.T) {
	s := newSite(t, "list", nil)
	s.env.EnsureGroup("orders", "billing")
	for path, want := range map[string]string{
		"/topic" + q("b", "list", "t", "nothing"):                              "not found",
		"/group" + q("b", "list", "t", "orders", "g", "nobody"):                "not found",
		"/message" + q("b", "list", "t", "orders", "g", "billing", "id", "99"): "holds no message 99",
		"/topic" + q("b", "zset", "t", "orders"):                               `no backend &#34;zset&#34; here`,
		"/group" + q("b", "list", "t", "orders", "g", "billing", "state", "x"): "unknown message state",
	} {
		code, body := s.get(path)
		require.Contains(t, []int{http.StatusNotFound, http.StatusBadRequest}, code, path)
		require.Contains(t, body, want, path)
		require.True(t, strings.Contains(body, `id="error"`), path)
	}
}

// failingAdmin is a backend whose topic discovery fails: Redis refusing its SCAN, say.
type failingAdmin struct{ backend.Admin }

func (failingAdmin) ListTopics(context.Context) ([]backend.TopicInfo, error) {
	return nil, errors.New("NOPERM this user has no permissions to run the 'scan' command")
}

// TestOverviewOfEveryBackend shows the three backends on one overview, each row naming its
// backend, and a fourth whose discovery fails: the error is shown above the others' rows.
func TestOverviewOfEveryBackend(t *testing.T) {
	c, prefix := adaptertest.Server(t)
	var backends []web.Backend
	for _, name := range []string{"list", "zset", "streams"} {
		b := backendOf(t, c, name, prefix)
		require.NoError(t, b.EnsureGroup(ctxT(t), &backend.EnsureGroupParams{Topic: name + "-topic", Group: "g"}))
		backends = append(backends, web.Backend{Name: name, Admin: b.(backend.Admin)})
	}
	backends = append(backends, web.Backend{Name: "broken", Admin: failingAdmin{backends[0].Admin}})
	s := newSiteOn(t, c, prefix, "list", func(o *web.Options) { o.Backends = backends })
	body := s.page("/")
	for _, name := range []string{"list", "zset", "streams"} {
		require.Contains(t, body, `data-key="`+name+` `+name+`-topic g"`)
		require.Contains(t, body, "<td>"+name+"</td>", "the backend column")
	}
	require.Contains(t, body, "broken backend: list topics: NOPERM")
}
