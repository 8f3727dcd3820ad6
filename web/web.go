package web

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/partition"
)

// Backend is one relq backend shown by the dashboard.
type Backend struct {
	// Name is how pages and URLs name it: "list", "zset", "streams", or any name that
	// backend.ValidateName accepts for an adapter of your own.
	Name  string
	Admin backend.Admin
}

// Options configure a Handler.
type Options struct {
	// Backends are the backends to show, in the order the overview lists them.
	Backends []Backend
	// Prefix is the key prefix the backends were built with, shown in the header.
	Prefix string
	// ReadOnly hides every action and refuses each of them (every POST but the login's) with
	// 403 Forbidden.
	ReadOnly bool
	// Token, when set, is asked of every request but the login page's and the stylesheet's
	// and script's: as "Authorization: Bearer <token>", or once in the login page, which
	// then keeps a proof of it in an HttpOnly cookie.
	Token string
	// BasicUser and BasicPassword, when set, are asked of every request by HTTP basic auth.
	BasicUser     string
	BasicPassword string
	// AllowedHosts, when set, are the only host names (without port) the dashboard answers
	// to; any other Host header gets 421 Misdirected Request. A dashboard without
	// authentication on loopback needs it: a page of another site that rebinds its own name
	// to 127.0.0.1 is same-origin with it otherwise. `relq web` sets it on loopback.
	AllowedHosts []string
	// SecureCookies marks the dashboard's cookies Secure even when the request did not come
	// over TLS to this process: behind a proxy that terminates HTTPS.
	SecureCookies bool
	// DiscoverEvery is how old the topics found by the last discovery (a SCAN of the
	// keyspace, in the background) may be before a page load starts another; zero: 30 s. A
	// topic created since shows on the first page load after such a discovery ended, or at
	// once with the overview's "Rescan" link.
	DiscoverEvery time.Duration
	// StuckAfter flags a group whose oldest pending message has been held longer; zero: 5 min.
	StuckAfter time.Duration
	// PageSize bounds the rows of a page (overview rows, messages, dead letters); zero: 50,
	// at most 500.
	PageSize int
	// Logger receives errors that a page cannot show; nil: slog.Default().
	Logger *slog.Logger
}

// Defaults of Options.
const (
	DiscoverEveryDefault = 30 * time.Second
	StuckAfterDefault    = 5 * time.Minute
	PageSizeDefault      = 50
	pageSizeMax          = 500
	// rescanMin is how soon after a discovery the "Rescan" link may start another.
	rescanMin = 5 * time.Second
)

//go:embed assets
var assets embed.FS

// Handler serves the dashboard. It is safe for concurrent use; Close ends a topic discovery
// that is still running.
type Handler struct {
	opts     Options
	backends map[string]backend.Admin
	mux      *http.ServeMux
	pages    map[string]*template.Template
	catalog  *catalog
	cop      *http.CrossOriginProtection
	log      *slog.Logger
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// New returns a Handler for opts.
func New(opts Options) (*Handler, error) {
	if len(opts.Backends) == 0 {
		return nil, errors.New("relq web: no backend in Options.Backends")
	}
	if (opts.BasicUser == "") != (opts.BasicPassword == "") {
		return nil, errors.New("relq web: basic auth needs both BasicUser and BasicPassword")
	}
	if opts.DiscoverEvery <= 0 {
		opts.DiscoverEvery = DiscoverEveryDefault
	}
	if opts.StuckAfter <= 0 {
		opts.StuckAfter = StuckAfterDefault
	}
	if opts.PageSize <= 0 {
		opts.PageSize = PageSizeDefault
	}
	opts.PageSize = min(opts.PageSize, pageSizeMax)
	opts.AllowedHosts = slices.Clone(opts.AllowedHosts)
	opts.Backends = slices.Clone(opts.Backends)
	h := &Handler{opts: opts, backends: map[string]backend.Admin{}, log: opts.Logger}
	if h.log == nil {
		h.log = slog.Default()
	}
	for i, b := range opts.Backends {
		if err := backend.ValidateName("backend", b.Name); err != nil {
			return nil, fmt.Errorf("relq web: %w", err)
		}
		if b.Admin == nil {
			return nil, fmt.Errorf("relq web: backend %q has no Admin", b.Name)
		}
		if _, dup := h.backends[b.Name]; dup {
			return nil, fmt.Errorf("relq web: backend %q named twice", b.Name)
		}
		if be, ok := b.Admin.(backend.Backend); ok {
			// A topic created with partitions shows as one topic, its counts added up.
			b.Admin = partition.Open(be).(backend.Admin)
			h.opts.Backends[i] = b
		}
		h.backends[b.Name] = b.Admin
	}
	for i, a := range opts.AllowedHosts {
		if h.opts.AllowedHosts[i] = hostName(a); h.opts.AllowedHosts[i] == "" {
			return nil, fmt.Errorf("relq web: allowed host %q: no host name", a)
		}
	}
	var err error
	if h.pages, err = parsePages(); err != nil {
		return nil, err
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.catalog = newCatalog(h)
	h.cop = http.NewCrossOriginProtection()
	h.routes()
	return h, nil
}

// Close ends a topic discovery that is still running and waits for it. The Handler answers
// requests after Close, without discovering topics again.
func (h *Handler) Close() {
	h.catalog.close()
	h.cancel()
	h.wg.Wait()
}

func (h *Handler) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets/static")
	m.Handle("GET /static/", http.StripPrefix("/static/", staticFiles(static)))
	m.HandleFunc("GET /{$}", h.page(h.overview))
	m.HandleFunc("GET /api/overview", h.overviewJSON)
	m.HandleFunc("GET /topic", h.page(h.topic))
	m.HandleFunc("GET /group", h.page(h.group))
	m.HandleFunc("GET /message", h.page(h.message))
	m.HandleFunc("GET /dead", h.page(h.dead))
	m.HandleFunc("GET /login", h.loginForm)
	m.HandleFunc("POST /login", h.login)
	for name, a := range actions {
		m.HandleFunc("POST /"+name, h.act(a))
	}
	h.mux = m
}

// ServeHTTP serves the dashboard; paths are relative to where it is mounted.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "same-origin")
	hdr.Set("X-Frame-Options", "DENY")
	if !h.hostAllowed(r.Host) {
		http.Error(w, "relq web: this dashboard does not answer to host "+r.Host, http.StatusMisdirectedRequest)
		return
	}
	if r.URL.Path == "" { // mounted with http.StripPrefix("/relq") and asked for "/relq"
		w.Header().Set("Location", path.Base(mountPath(r))+"/")
		w.WriteHeader(http.StatusMovedPermanently)
		return
	}
	if !h.authorized(w, r) {
		return
	}
	h.mux.ServeHTTP(w, r)
}

// hostAllowed reports whether host (a Host header) names the dashboard: any host when
// Options.AllowedHosts is empty.
func (h *Handler) hostAllowed(host string) bool {
	if len(h.opts.AllowedHosts) == 0 {
		return true
	}
	return slices.Contains(h.opts.AllowedHosts, hostName(host))
}

// hostName is the host name of a Host header or an AllowedHosts entry, compared as they
// are: without port or brackets, lower case, an IP address in its canonical form.
func hostName(host string) string {
	if name, _, err := net.SplitHostPort(host); err == nil {
		host = name
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.String()
	}
	return host
}

// mountPath is the path the request was made to, without its query.
func mountPath(r *http.Request) string {
	p, _, _ := strings.Cut(r.RequestURI, "?")
	if p == "" {
		p = r.URL.Path
	}
	return p
}

// admin is the backend named in the query (b=), or an httpError.
func (h *Handler) admin(r *http.Request) (string, backend.Admin, error) {
	name := r.FormValue("b")
	a, ok := h.backends[name]
	if !ok {
		names := make([]string, 0, len(h.backends))
		for n := range h.backends {
			names = append(names, n)
		}
		slices.Sort(names)
		return "", nil, &httpError{code: http.StatusNotFound, msg: fmt.Sprintf("no backend %q here: this dashboard shows %s", name, strings.Join(names, ", "))}
	}
	return name, a, nil
}

// httpError is an error with the status it is answered with.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

// statusOf maps an error of the Admin API, or an httpError, to an HTTP status.
func statusOf(err error) int {
	var he *httpError
	var ne *backend.NameError
	switch {
	case errors.As(err, &he):
		return he.code
	case errors.As(err, &ne), errors.Is(err, backend.ErrBadCursor), errors.Is(err, backend.ErrNotDelayed),
		errors.Is(err, backend.ErrInvalidConfig): // params a form made (ErrNothingSelected among them)
		return http.StatusBadRequest
	case errors.Is(err, backend.ErrTopicNotFound), errors.Is(err, backend.ErrGroupNotFound),
		errors.Is(err, backend.ErrMessageNotFound), errors.Is(err, backend.ErrGroupDeleted):
		return http.StatusNotFound
	case errors.Is(err, backend.ErrTooDeep):
		return http.StatusUnprocessableEntity
	case errors.Is(err, context.Canceled):
		return 499 // the browser went away; nobody reads the answer
	}
	return http.StatusBadGateway // Redis refused or failed
}
