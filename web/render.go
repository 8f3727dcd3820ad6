package web

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/relq/relq/internal/human"
)

// view is what the layout of every page is given.
type view struct {
	Page     string // the page's template name, also the body's class
	Title    string
	Crumbs   []crumb
	CSRF     string
	ReadOnly bool
	Prefix   string
	Flash    string
	FlashErr bool
	Data     any
}

// crumb is one link of the breadcrumb line.
type crumb struct{ Href, Text string }

// out is what a page handler hands to the layout.
type out struct {
	page   string
	title  string
	crumbs []crumb
	data   any
}

// pageNames are the templates under assets/templates, each rendered inside layout.html.
var pageNames = []string{"overview", "topic", "group", "message", "dead", "confirm", "login", "error"}

func parsePages() (map[string]*template.Template, error) {
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "assets/templates/layout.html", "assets/templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("relq web: template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// page adapts a page handler: it renders what the handler returns, or its error as a page
// with the error's status.
func (h *Handler) page(fn func(w http.ResponseWriter, r *http.Request) (out, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		o, err := fn(w, r)
		if err != nil {
			code := statusOf(err)
			if code >= 500 {
				h.log.Error("relq web: page failed", "path", r.URL.Path, "error", err)
			}
			h.render(w, r, code, "error", http.StatusText(code), nil, err.Error())
			return
		}
		h.render(w, r, http.StatusOK, o.page, o.title, o.crumbs, o.data)
	}
}

// render writes a page: the layout around the template named page.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, code int, page, title string, crumbs []crumb, data any) {
	v := view{Page: page, Title: title, Crumbs: crumbs, ReadOnly: h.opts.ReadOnly, Prefix: h.opts.Prefix, Data: data}
	if !h.opts.ReadOnly {
		v.CSRF = csrfToken(w, r, h.secure(r))
	}
	if c, err := r.Cookie(flashCookie); err == nil {
		msg, _ := url.QueryUnescape(c.Value)
		v.Flash, v.FlashErr = strings.CutPrefix(msg, "!")
		http.SetCookie(w, &http.Cookie{Name: flashCookie, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: h.secure(r)})
	}
	var b bytes.Buffer
	if err := h.pages[page].Execute(&b, v); err != nil {
		h.log.Error("relq web: render failed", "page", page, "error", err)
		http.Error(w, "relq web: render failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// flash shows msg once, on the page the browser is sent to next.
func (h *Handler) flash(w http.ResponseWriter, r *http.Request, msg string, isErr bool) {
	if isErr {
		msg = "!" + msg
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: url.QueryEscape(msg), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: h.secure(r)})
}

// staticFiles serves the embedded CSS and script; they change only with the binary.
func staticFiles(fsys fs.FS) http.Handler {
	files := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") { // files only, no listing
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=300")
		files.ServeHTTP(w, r)
	})
}

// link is a dashboard path with its query, relative to the dashboard's root: link("group",
// "b", "list", "t", "orders").
func link(page string, kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	if len(q) == 0 {
		return page
	}
	return page + "?" + q.Encode()
}

var funcs = template.FuncMap{
	"link":  link,
	"num":   num,
	"dur":   dur,
	"when":  when,
	"ago":   ago,
	"ms":    func(d time.Duration) int64 { return d.Milliseconds() },
	"inc":   func(n int) int { return n + 1 },
	"dec":   func(n int) int { return n - 1 },
	"int64": func(n int) int64 { return int64(n) },
}

// num writes n with thousands separators.
func num(n int64) string { return human.Thousands(n) }

// dur writes d to a person's precision: "850ms", "12s", "3m 5s", "2h 10m", "3d 4h"; "–"
// for zero.
func dur(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	var s string
	switch {
	case d == 0:
		return "–"
	case d < time.Second:
		s = fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		s = fmt.Sprintf("%dm %ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		s = fmt.Sprintf("%dh %dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		s = fmt.Sprintf("%dd %dh", int(d.Hours())/24, int(d.Hours())%24)
	}
	if neg {
		return "-" + s
	}
	return s
}

// ago writes how long before now t was, "3m 5s ago" (at least "1ms ago", whatever the
// clocks); "" for the zero time.
func ago(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return dur(max(time.Since(t), time.Millisecond)) + " ago"
}

// unixMilli is t in ms since the epoch, 0 for the zero time.
func unixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// when writes a time in UTC to the second; "–" for the zero time.
func when(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}
