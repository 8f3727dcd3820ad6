package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/web"
)

func groupForm(backend string) url.Values {
	return url.Values{"b": {backend}, "t": {"orders"}, "g": {"billing"}}
}

func (s *site) paused() bool {
	s.t.Helper()
	return s.env.Stats("orders", "billing").Paused
}

// TestActionsNeedCSRFAndSameOrigin checks that a POST without the page's CSRF token, or from
// another origin, changes nothing.
func TestActionsNeedCSRFAndSameOrigin(t *testing.T) {
	s := newSite(t, "list", nil)
	s.env.EnsureGroup("orders", "billing")

	f := groupForm("list")
	f.Set("csrf", "forged-token-forged-token-forged-token")
	code, _, body := s.post("/pause", f)
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, body, "CSRF token")
	require.False(t, s.paused())

	// The right token, but sent by a page of another site.
	f = groupForm("list")
	f.Set("csrf", s.csrf())
	req, _ := http.NewRequest(http.MethodPost, s.srv.URL+"/pause", strings.NewReader(f.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	res, err := s.client.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	require.False(t, s.paused())

	code, loc, _ := s.post("/pause", groupForm("list"))
	require.Equal(t, http.StatusSeeOther, code)
	require.Equal(t, "group?b=list&g=billing&t=orders", loc)
	require.True(t, s.paused())
	require.Contains(t, s.page("/"+loc), "Paused orders / billing", "the action's outcome shown once")
	require.NotContains(t, s.page("/"+loc), "Paused orders / billing")

	code, _, _ = s.post("/resume", groupForm("list"))
	require.Equal(t, http.StatusSeeOther, code)
	require.False(t, s.paused())
}

// TestReadOnlyRefusesEveryAction posts every action to a read-only dashboard: each is refused
// and nothing changes; its pages offer no action.
func TestReadOnlyRefusesEveryAction(t *testing.T) {
	s := newSite(t, "list", func(o *web.Options) { o.ReadOnly = true })
	s.env.EnsureGroup("orders", "billing")
	dead := s.deadLetter("orders", "billing", "x", "bad")
	before := s.env.Keys("orders")

	for _, action := range []string{"pause", "resume", "run", "requeue", "purge", "delete-message", "delete-group", "delete-topic"} {
		f := groupForm("list")
		f.Set("id", dead)
		f.Set("all", "yes")
		f.Set("confirm", "yes")
		f.Set("csrf", "whatever")
		code, _, body := s.post("/"+action, f)
		require.Equal(t, http.StatusForbidden, code, action)
		require.Contains(t, body, "read-only", action)
	}
	require.Equal(t, before, s.env.Keys("orders"))
	st := s.env.Stats("orders", "billing")
	require.EqualValues(t, 1, st.Dead)
	require.False(t, st.Paused)
	for _, path := range []string{"/group" + q("b", "list", "t", "orders", "g", "billing"), "/dead" + q("b", "list", "t", "orders", "g", "billing"),
		"/message" + q("b", "list", "t", "orders", "g", "billing", "id", dead), "/topic" + q("b", "list", "t", "orders")} {
		body := s.page(path)
		require.NotContains(t, body, `method="post"`, path)
		require.Contains(t, body, `id="read-only"`, path)
	}
}

// TestDestructiveActionsAskFirst checks that deleting a topic shows what it removes and
// deletes nothing until confirmed, then deletes every key of the topic (but for its groups'
// tombstone, which expires).
func TestDestructiveActionsAskFirst(t *testing.T) {
	s := newSite(t, "zset", nil)
	s.env.EnsureGroup("orders", "billing")
	s.env.Publish("orders", "a", "b")
	f := url.Values{"b": {"zset"}, "t": {"orders"}}
	code, _, body := s.post("/delete-topic", f)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "Delete topic orders (zset backend)?")
	require.Contains(t, body, "Groups: billing.")
	require.Contains(t, body, `name="confirm" value="yes"`)
	require.NotEmpty(t, s.env.Keys("orders"), "nothing deleted before the confirmation")

	code, loc, _ := s.confirm("/delete-topic", body)
	require.Equal(t, http.StatusSeeOther, code)
	require.Equal(t, "./", loc)
	require.Empty(t, s.env.KeysLeft("orders"), "every key but the group's expiring tombstone")
	require.Contains(t, s.page("/"), "Deleted topic orders.")
}

// TestDeadLetterActions requeues one, purges the selected, then purges all with the count
// the confirmation showed.
func TestDeadLetterActions(t *testing.T) {
	s := newSite(t, "streams", nil)
	s.env.EnsureGroup("orders", "billing")
	var ids []string
	for _, p := range []string{"a", "b", "c", "d"} {
		ids = append(ids, s.deadLetter("orders", "billing", p, "reason "+p))
	}
	dead := func() int64 { return s.env.Stats("orders", "billing").Dead }

	f := groupForm("streams")
	f.Set("one", ids[0])
	f.Add("ids", ids[1]) // selected, but the row's own button names ids[0]
	code, loc, _ := s.post("/requeue", f)
	require.Equal(t, http.StatusSeeOther, code)
	require.Contains(t, loc, "dead?")
	require.EqualValues(t, 3, dead())
	require.EqualValues(t, 1, s.env.Stats("orders", "billing").Ready)
	got := s.env.Claim("orders", "billing", "c", 10)
	require.Len(t, got, 1)
	require.Equal(t, ids[0], got[0].ID, "the requeued letter is delivered again")
	s.env.Ack("orders", "billing", "c", got...)

	f = groupForm("streams")
	f["ids"] = []string{ids[1], ids[2]}
	code, _, body := s.post("/purge", f)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "Purge 2 dead letters")
	require.EqualValues(t, 3, dead())
	code, _, _ = s.confirm("/purge", body)
	require.Equal(t, http.StatusSeeOther, code)
	require.EqualValues(t, 1, dead())

	f = groupForm("streams")
	f.Set("all", "yes")
	code, _, body = s.post("/purge", f)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "Purge all 1 dead letters")
	s.deadLetter("orders", "billing", "e", "arrived after the question") // not counted: kept
	code, _, _ = s.confirm("/purge", body)
	require.Equal(t, http.StatusSeeOther, code)
	page, err := s.env.B.(backend.Admin).Messages(ctxT(t), &backend.MessagesParams{Topic: "orders", Group: "billing", State: backend.StateDead})
	require.NoError(t, err)
	require.Len(t, page.Messages, 1)
	require.Equal(t, "arrived after the question", page.Messages[0].Reason)
}

// TestAllIgnoresTickedBoxes presses "Purge all" and "Requeue all" with a box ticked: the form
// posts the ticked ID with all=yes, and the action is on every dead letter, as the button
// says (the backend refuses IDs together with All).
func TestAllIgnoresTickedBoxes(t *testing.T) {
	s := newSite(t, "zset", nil)
	s.env.EnsureGroup("orders", "billing")
	a := s.deadLetter("orders", "billing", "a", "bad")
	s.deadLetter("orders", "billing", "b", "bad")
	f := groupForm("zset")
	f.Set("all", "yes")
	f.Set("ids", a)
	code, _, body := s.post("/purge", f)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "Purge all 2 dead letters")
	code, loc, _ := s.confirm("/purge", body)
	require.Equal(t, http.StatusSeeOther, code)
	require.Contains(t, s.page("/"+loc), "Purged 2 dead letters.")
	require.EqualValues(t, 0, s.env.Stats("orders", "billing").Dead)

	c := s.deadLetter("orders", "billing", "c", "bad")
	s.deadLetter("orders", "billing", "d", "bad")
	f.Set("ids", c)
	code, _, body = s.post("/requeue", f)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "Requeue all 2 dead letters")
	code, loc, _ = s.confirm("/requeue", body)
	require.Equal(t, http.StatusSeeOther, code)
	require.Contains(t, s.page("/"+loc), "Requeued 2 dead letters.")
	st := s.env.Stats("orders", "billing")
	require.EqualValues(t, 0, st.Dead)
	require.EqualValues(t, 2, st.Ready)
}

// TestTokenAuth checks the login page, the cookie it sets, the bearer header, and that the
// next page after login stays inside the dashboard.
func TestTokenAuth(t *testing.T) {
	s := newSite(t, "list", func(o *web.Options) { o.Token = "s3cret-token" })
	code, body := s.get("/api/overview")
	require.Equal(t, http.StatusUnauthorized, code, body)
	code, _ = s.get("/")
	require.Equal(t, http.StatusSeeOther, code)

	req, _ := http.NewRequest(http.MethodGet, s.srv.URL+"/", nil)
	req.Header.Set("Authorization", "Bearer s3cret-token")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)

	code, _, body = s.post("/login", url.Values{"token": {"wrong"}, "next": {"/topic?b=list"}})
	require.Equal(t, http.StatusUnauthorized, code)
	require.Contains(t, body, "not this dashboard")
	for next, want := range map[string]string{
		"/group?b=list&t=orders": "./group?b=list&t=orders",
		"//evil.example/x":       "./",
		"/https:evil.example/x":  "./https:evil.example/x", // a path of the dashboard: 404
		"/\t//evil.example/x":    "./",
		"/javascript:alert(1)":   "./javascript:alert(1)",
		"https://evil.example/":  "./",
		"/\\evil.example":        "./",
	} {
		code, loc, _ := s.post("/login", url.Values{"token": {"s3cret-token"}, "next": {next}})
		require.Equal(t, http.StatusSeeOther, code, next)
		require.Equal(t, want, loc, "next %q", next)
		u, err := url.Parse(s.srv.URL + "/login")
		require.NoError(t, err)
		target, err := u.Parse(loc)
		require.NoError(t, err)
		require.Equal(t, u.Host, target.Host, "next %q leaves the dashboard", next)
		require.Equal(t, "http", target.Scheme)
	}
	require.Contains(t, s.page("/"), "Overview")
	for _, c := range s.client.Jar.Cookies(mustURL(t, s.srv.URL)) {
		require.NotContains(t, c.Value, "s3cret-token", "the cookie %s holds the token itself", c.Name)
	}
}

// TestBasicAuth checks that every path, the assets included, asks for the user and password.
func TestBasicAuth(t *testing.T) {
	s := newSite(t, "list", func(o *web.Options) { o.BasicUser, o.BasicPassword = "ops", "pw" })
	for _, path := range []string{"/", "/static/app.css", "/api/overview"} {
		code, _ := s.get(path)
		require.Equal(t, http.StatusUnauthorized, code, path)
	}
	req, _ := http.NewRequest(http.MethodGet, s.srv.URL+"/", nil)
	req.SetBasicAuth("ops", "pw")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
}

func mustURL(t *testing.T, raw string) *url.URL {
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u
}

// TestAllowedHosts checks that a dashboard limited to its own host names refuses a request
// naming another host: a page of another site whose name was rebound to 127.0.0.1.
func TestAllowedHosts(t *testing.T) {
	s := newSite(t, "list", func(o *web.Options) { o.AllowedHosts = []string{"localhost", "127.0.0.1", "::1"} })
	s.env.EnsureGroup("orders", "billing")
	require.Contains(t, s.page("/"), "Overview") // httptest serves on 127.0.0.1
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		req, _ := http.NewRequest(method, s.srv.URL+"/pause", strings.NewReader(groupForm("list").Encode()))
		req.Host = "attacker.example:" + mustURL(t, s.srv.URL).Port()
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "http://"+req.Host)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusMisdirectedRequest, res.StatusCode, method)
	}
	require.False(t, s.paused())
}

// TestPurgeSelectedKeepsWhatWasRequeued answers a purge confirmation after one of the chosen
// letters was requeued and claimed meanwhile: that one is kept, pending, and only the other
// is purged.
func TestPurgeSelectedKeepsWhatWasRequeued(t *testing.T) {
	s := newSite(t, "list", nil)
	s.env.EnsureGroup("orders", "billing")
	a := s.deadLetter("orders", "billing", "a", "bad")
	b := s.deadLetter("orders", "billing", "b", "bad")
	f := groupForm("list")
	f["ids"] = []string{a, b}
	code, _, body := s.post("/purge", f)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "Purge 2 dead letters")

	n, err := s.env.B.RequeueDeadLetters(ctxT(t), &backend.RequeueParams{Topic: "orders", Group: "billing", IDs: []string{a}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	claimed := s.env.Claim("orders", "billing", "worker", 1)
	require.Len(t, claimed, 1)

	code, loc, _ := s.confirm("/purge", body)
	require.Equal(t, http.StatusSeeOther, code)
	require.Contains(t, s.page("/"+loc), "Purged 1 dead letter. 1 of those chosen were no longer dead letters and were kept.")
	st := s.env.Stats("orders", "billing")
	require.EqualValues(t, 0, st.Dead)
	require.EqualValues(t, 1, st.Pending, "the requeued letter, claimed since, is still held")
	require.Equal(t, 1, s.env.Ack("orders", "billing", "worker", claimed...).Acked)

	f["ids"] = make([]string, 51) // more than a page of checkboxes
	code, _, body = s.post("/purge", f)
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, body, "at most 50 at a time")
}
