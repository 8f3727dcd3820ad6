package web_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/web"
)

// TestMountedUnderAPrefix mounts the dashboard at /ops/relq/ of an application's own mux,
// behind the application's own auth, and follows its links and redirects as a browser does:
// every one stays under the prefix.
func TestMountedUnderAPrefix(t *testing.T) {
	c, prefix := adaptertest.Server(t)
	b := backendOf(t, c, "list", prefix)
	h, err := web.New(web.Options{Backends: []web.Backend{{Name: "list", Admin: b.(backend.Admin)}}})
	require.NoError(t, err)
	defer h.Close()
	mux := http.NewServeMux()
	mux.Handle("/ops/relq/", requireStaff(http.StripPrefix("/ops/relq", h)))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "the application's page", http.StatusTeapot)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	require.NoError(t, b.EnsureGroup(ctxT(t), &backend.EnsureGroupParams{Topic: "orders", Group: "billing"}))

	jar, _ := cookiejar.New(nil)
	var visited []string
	client := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		visited = append(visited, req.URL.Path)
		req.Header.Set("X-Staff", "yes")
		return nil
	}}
	get := func(u string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.Header.Set("X-Staff", "yes")
		res, err := client.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res, string(b)
	}
	res, body := get(srv.URL + "/ops/relq")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "/ops/relq/", res.Request.URL.Path, "redirected to the directory")
	require.Contains(t, body, ">billing<")

	// Every relative link of the overview, resolved as a browser does, is the dashboard's.
	links := regexp.MustCompile(`(?:href|src|data-poll)="([^"#]*)"`).FindAllStringSubmatch(body, -1)
	require.NotEmpty(t, links)
	for _, l := range links {
		u, err := res.Request.URL.Parse(strings.ReplaceAll(l[1], "&amp;", "&"))
		require.NoError(t, err)
		r2, _ := get(u.String())
		require.Equal(t, http.StatusOK, r2.StatusCode, "link %q → %s", l[1], u)
		require.True(t, strings.HasPrefix(u.Path, "/ops/relq/"), u.Path)
	}

	// A POST redirects back under the prefix.
	groupURL := srv.URL + "/ops/relq/group?b=list&t=orders&g=billing"
	_, body = get(groupURL)
	tok := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	require.NotNil(t, tok)
	form := url.Values{"b": {"list"}, "t": {"orders"}, "g": {"billing"}, "csrf": {tok[1]}}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/ops/relq/pause", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Staff", "yes")
	req.Header.Set("Origin", srv.URL)
	res, err = client.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "/ops/relq/group", res.Request.URL.Path)
	st, err := b.Stats(ctxT(t), &backend.StatsParams{Topic: "orders", Group: "billing"})
	require.NoError(t, err)
	require.True(t, st.Paused)

	// Without the application's auth, nothing of the dashboard answers.
	res, err = http.Get(srv.URL + "/ops/relq/")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusForbidden, res.StatusCode)
}
