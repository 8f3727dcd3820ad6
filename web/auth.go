package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
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
	if c, err := r.Cookie(tokenCookie); err == nil && same(c.Value, h.tokenProof()) {
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
	// Lax, not Strict: a link to a page of the dashboard from a chat or an alert opens it
	// logged in; the CSRF token and the cross-origin check guard the POSTs.
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: h.tokenProof(), HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: h.secure(r)})
	seeOther(w, h.rel(r, safeNext(next)))
}

// tokenProof is what the login cookie holds: an HMAC of the token, so that the cookie jar
// does not hold the token itself.
func (h *Handler) tokenProof() string {
	m := hmac.New(sha256.New, []byte(h.opts.Token))
	m.Write([]byte("relq web login"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// secure reports whether cookies should be Secure: over TLS, or Options.SecureCookies.
func (h *Handler) secure(r *http.Request) bool { return r.TLS != nil || h.opts.SecureCookies }

// safeNext turns the login page's next (a dashboard path such as "/group?b=list&t=orders",
// as authorized wrote it) into a reference relative to the dashboard's root, or "" (the
// overview) for anything that could lead elsewhere: a scheme, a host, a backslash, a control
// character, a dot segment.
func safeNext(next string) string {
	if next == "" || strings.ContainsFunc(next, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return ""
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
		return ""
	}
	for _, seg := range strings.Split(u.Path, "/") { // decoded: %2e is a dot here
		if seg == "." || seg == ".." {
			return "" // it would climb out of the directory the dashboard is mounted at
		}
	}
	ref := "./" + strings.TrimLeft(u.EscapedPath(), "/")
	if u.RawQuery != "" {
		ref += "?" + u.RawQuery
	}
	return ref
}

// csrfToken returns the request's CSRF token, setting the cookie that holds it when the
// browser has none: forms echo it in a hidden field, and a POST whose field and cookie
// differ is refused (double submit; a page of another site can neither read the cookie nor
// set it).
func csrfToken(w http.ResponseWriter, r *http.Request, secure bool) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) >= 32 {
		return c.Value
	}
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	tok := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: tok, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure})
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
