package web_test

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/web"
)

// backendOf builds the backend named name on c under prefix.
func backendOf(t testing.TB, c redis.UniversalClient, name, prefix string) backend.Backend {
	t.Helper()
	var b backend.Backend
	var err error
	switch name {
	case "list":
		b, err = list.New(c, list.Options{Prefix: prefix})
	case "zset":
		b, err = zset.New(c, zset.Options{Prefix: prefix})
	default:
		b, err = streams.New(c, streams.Options{Prefix: prefix})
	}
	require.NoError(t, err)
	return b
}

// site is a dashboard served by httptest over one backend, with a browser-like client that
// keeps cookies and does not follow redirects.
type site struct {
	t      *testing.T
	env    *adaptertest.Env
	h      *web.Handler
	srv    *httptest.Server
	client *http.Client
	name   string
}

func newSite(t *testing.T, be string, edit func(*web.Options)) *site {
	t.Helper()
	c, prefix := adaptertest.Server(t)
	return newSiteOn(t, c, prefix, be, edit)
}

func newSiteOn(t *testing.T, c *redis.Client, prefix, be string, edit func(*web.Options)) *site {
	t.Helper()
	b := backendOf(t, c, be, prefix)
	opts := web.Options{Backends: []web.Backend{{Name: be, Admin: b.(backend.Admin)}}, Prefix: prefix}
	if edit != nil {
		edit(&opts)
	}
	h, err := web.New(opts)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); srv.Close() }) // Close first: it ends what a request may wait for
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &site{t: t, env: adaptertest.NewEnv(t, c, prefix, b), h: h, srv: srv, client: client, name: be}
}

// get fetches path and returns the status and body.
func (s *site) get(path string) (int, string) {
	s.t.Helper()
	res, err := s.client.Get(s.srv.URL + path)
	require.NoError(s.t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(s.t, err)
	return res.StatusCode, string(body)
}

// page fetches path and requires a 200.
func (s *site) page(path string) string {
	s.t.Helper()
	code, body := s.get(path)
	require.Equal(s.t, http.StatusOK, code, "GET %s: %s", path, body)
	return body
}

// post submits form to path as the page's own form would: with the CSRF token of the last
// page loaded (from the cookie jar) and a same-origin Origin header. It returns the status,
// the Location and the body.
func (s *site) post(path string, form url.Values) (int, string, string) {
	s.t.Helper()
	if form.Get("csrf") == "" {
		form.Set("csrf", s.csrf())
	}
	req, err := http.NewRequest(http.MethodPost, s.srv.URL+path, strings.NewReader(form.Encode()))
	require.NoError(s.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	res, err := s.client.Do(req)
	require.NoError(s.t, err)
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Location"), string(body)
}

var hiddenField = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// confirm answers a confirmation page (body) as its confirming button does: it posts the
// page's hidden fields, and only those, to path.
func (s *site) confirm(path, body string) (int, string, string) {
	s.t.Helper()
	f := url.Values{}
	for _, m := range hiddenField.FindAllStringSubmatch(body, -1) {
		f.Add(m[1], html.UnescapeString(m[2]))
	}
	require.Equal(s.t, "yes", f.Get("confirm"), "not a confirmation page: %s", body)
	return s.post(path, f)
}

// csrf returns the CSRF token the dashboard gave this client, loading a page if it has none.
func (s *site) csrf() string {
	u, _ := url.Parse(s.srv.URL + "/")
	for _, c := range s.client.Jar.Cookies(u) {
		if c.Name == "relq_web_csrf" {
			return c.Value
		}
	}
	s.get("/login") // every page sets it; the login page renders whatever the auth
	for _, c := range s.client.Jar.Cookies(u) {
		if c.Name == "relq_web_csrf" {
			return c.Value
		}
	}
	s.t.Fatal("no CSRF cookie after a page load")
	return ""
}

// q is a query string: q("b", "list", "t", "orders") is "?b=list&t=orders".
func q(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return "?" + v.Encode()
}

// deadLetter publishes payload to topic for group and nacks it into the dead letters
// (MaxDeliveries 1), returning its ID.
func (s *site) deadLetter(topic, group, payload, reason string) string {
	s.t.Helper()
	id := s.env.Publish(topic, payload)[0]
	ds := s.env.Claim(topic, group, "c-dead", 1)
	require.Len(s.t, ds, 1)
	require.Equal(s.t, id, ds[0].ID)
	res := s.env.Nack(topic, group, "c-dead", 1, backend.NackItem{ID: ds[0].ID, Attempt: ds[0].Attempt, Reason: reason})
	require.Equal(s.t, 1, res.DeadLettered)
	return id
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
