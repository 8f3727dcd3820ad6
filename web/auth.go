package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
)

// Cookies of the dashboard. None has a Path, so each belongs to the directory the dashboard
// is mounted at.
const (
	tokenCookie = "relq_web_token"
	csrfCookie  = "relq_web_csrf"
	flashCookie = "relq_web_flash"
)

// authorized checks Options.Token or basic auth, and answers the request itself when it is
// not: a login page (token) or a 401 challenge (basic auth).
func (h *Handler) authorized(w http.ResponseWriter, r *http.Request) bool {
	o := &h.opts
	if o.BasicUser != "" {
		user, pass, ok := r.BasicAuth()
		if !ok || !same(user, o.BasicUser) || !same(pass, o.BasicPassword) {
			w.Header().Set("WWW-Authenticate", `Basic realm="relq", charset="UTF-8"`)
			http.Error(w, "relq web: this dashboard needs a user name and password", http.StatusUnauthorized)
			return false
		}
	}
	if o.Token == "" || strings.HasPrefix(r.URL.Path, "/static/") || r.URL.Path == "/login" {
		return true
	}
	if auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && same(auth, o.Token) {
		return true
	}
	if c, err := r.Cookie(tokenCookie); err == nil && same(c.Value, o.Token) {
		return true
	}
	if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/api/") {
		seeOther(w, h.rel(r, "login?next="+url.QueryEscape(r.URL.RequestURI())))
		return false
	}
	http.Error(w, "relq web: this dashboard needs its token (Authorization: Bearer, or log in)", http.StatusUnauthorized)
	return false
}

// same compares two secrets in constant time.
func same(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

func (h *Handler) loginForm(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, "login", "Log in", nil, loginView{Next: r.FormValue("next")})
}

type loginView struct {
	Next  string
	Wrong bool
}

// login checks the token typed in the login page and keeps it in a cookie. It is the one
// POST without a CSRF token (there is no session yet); the cross-origin check still applies.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if err := h.cop.Check(r); err != nil {
		http.Error(w, "relq web: cross-origin request refused", http.StatusForbidden)
		return
	}
	next := r.FormValue("next")
	if h.opts.Token == "" || !same(r.FormValue("token"), h.opts.Token) {
		h.render(w, r, http.StatusUnauthorized, "login", "Log in", nil, loginView{Next: next, Wrong: true})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: h.opts.Token, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	// next is a path inside the dashboard (as authorized wrote it); anything else goes home.
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.Contains(next, `\`) {
		next = "/"
	}
	seeOther(w, h.rel(r, strings.TrimPrefix(next, "/")))
}

// csrfToken returns the request's CSRF token, setting the cookie that holds it when the
// browser has none: forms echo it in a hidden field, and a POST whose field and cookie
// differ is refused (double submit; a page of another site can neither read the cookie nor
// set it).
func csrfToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) >= 32 {
		return c.Value
	}
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	tok := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: tok, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	return tok
}

// checkCSRF refuses a POST from another origin or without the CSRF token of its cookie.
func (h *Handler) checkCSRF(r *http.Request) error {
	if err := h.cop.Check(r); err != nil {
		return &httpError{code: http.StatusForbidden, msg: "cross-origin request refused"}
	}
	c, err := r.Cookie(csrfCookie)
	if err != nil || c.Value == "" || !same(r.PostFormValue("csrf"), c.Value) {
		return &httpError{code: http.StatusForbidden, msg: "the form's CSRF token is missing or stale: reload the page and try again"}
	}
	return nil
}

// rel turns a path relative to the dashboard's root into one relative to the request, so
// that redirects work wherever the dashboard is mounted.
func (h *Handler) rel(r *http.Request, target string) string {
	depth := strings.Count(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if depth == 0 {
		if target == "" {
			return "./"
		}
		return target
	}
	return strings.Repeat("../", depth) + target
}

// seeOther redirects to loc as it is. http.Redirect would make a relative loc absolute from
// the request's path, which is not the browser's path when the dashboard is mounted under a
// prefix with http.StripPrefix.
func seeOther(w http.ResponseWriter, loc string) {
	w.Header().Set("Location", loc)
	w.WriteHeader(http.StatusSeeOther)
}
