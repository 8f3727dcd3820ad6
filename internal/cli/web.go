package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/relq/relq/web"
)

// The environment variables that turn on the dashboard's authentication.
const (
	envWebToken = "RELQ_WEB_TOKEN"
	envWebBasic = "RELQ_WEB_BASIC_AUTH"
)

type webOptions struct {
	conn     connOptions
	addr     string
	readOnly bool
	noAuth   bool
	stuck    time.Duration
	hosts    []string
	secure   bool
}

func newWebCommand(env Env) *cobra.Command {
	var opts webOptions
	cmd := &cobra.Command{
		Use:   "web",
		Short: "Serve the web dashboard: topics, groups, messages and dead letters, live",
		Long: `web serves relq's dashboard over HTTP until interrupted (Ctrl-C): an overview of every
topic and group with counts, ages and live rates; each group's consumers and messages by
state; one message whole; dead letters by reason. It can pause and resume a group, requeue,
run or delete a message, requeue or purge dead letters, and delete a group or a topic; each
destructive action asks to confirm first. --read-only refuses them all.

It listens on loopback (127.0.0.1:8080) unless --addr says otherwise, and there answers only
to localhost, 127.0.0.1, ::1 and the address listened on (--allow-host adds a name, such as a
local proxy's; off loopback, --allow-host names the only ones).
Authentication, from the environment:
  ` + envWebToken + `=<token>          asked once in a login page (or as Authorization: Bearer)
  ` + envWebBasic + `=<user>:<password>  HTTP basic auth
An address other than loopback needs one of them, or --no-auth.

Redis: --redis-url, else $REDIS_URL, else ` + DefaultRedisURL + `. See relq stats --help.`,
		Example: `  relq web
  relq web --prefix shop --read-only
  RELQ_WEB_TOKEN=$(openssl rand -hex 16) relq web --addr 0.0.0.0:8080`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWeb(cmd, env, &opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.addr, "addr", "127.0.0.1:8080", "host:port to listen on (port 0: any free port)")
	f.BoolVar(&opts.readOnly, "read-only", false, "show everything, change nothing: every action is refused")
	f.DurationVar(&opts.stuck, "stuck-after", web.StuckAfterDefault, "flag a group whose oldest pending message has been held longer")
	f.StringSliceVar(&opts.hosts, "allow-host", nil, "a host name to answer to (a proxy's, passed in the Host header); repeatable.\nOn loopback, besides localhost, 127.0.0.1 and ::1; elsewhere, the only ones")
	f.BoolVar(&opts.secure, "secure-cookies", false, "mark the cookies Secure: behind a proxy that terminates HTTPS")
	f.BoolVar(&opts.noAuth, "no-auth", false, "serve an address other than loopback without "+envWebToken+" or "+envWebBasic)
	opts.conn.addFlags(cmd)
	return cmd
}

func runWeb(cmd *cobra.Command, env Env, opts *webOptions) error {
	wo := web.Options{ReadOnly: opts.readOnly, Token: env.Getenv(envWebToken), StuckAfter: opts.stuck, SecureCookies: opts.secure,
		Logger: slog.New(slog.NewTextHandler(env.Err, nil))}
	if basic := env.Getenv(envWebBasic); basic != "" {
		user, pass, ok := strings.Cut(basic, ":")
		if !ok || user == "" || pass == "" {
			return fmt.Errorf("%s: want user:password", envWebBasic)
		}
		wo.BasicUser, wo.BasicPassword = user, pass
	}
	if !loopback(opts.addr) && wo.Token == "" && wo.BasicUser == "" && !opts.noAuth {
		return fmt.Errorf("--addr %s can be reached from other machines: set %s or %s, or pass --no-auth", opts.addr, envWebToken, envWebBasic)
	}
	wo.AllowedHosts = allowedHosts(opts.addr, opts.hosts)
	ctx := cmd.Context()
	s, err := opts.conn.connect(ctx, env)
	if err != nil {
		return err
	}
	defer s.Close()
	wo.Prefix = s.prefix
	for _, b := range s.backends {
		a, err := b.admin()
		if err != nil {
			return err
		}
		wo.Backends = append(wo.Backends, web.Backend{Name: b.name, Admin: a})
	}
	h, err := web.New(wo)
	if err != nil {
		return err
	}
	defer h.Close()
	ln, err := net.Listen("tcp", opts.addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", opts.addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	auth := "no authentication"
	switch {
	case wo.BasicUser != "":
		auth = "basic auth from " + envWebBasic
	case wo.Token != "":
		auth = "token from " + envWebToken
	}
	mode := ""
	if opts.readOnly {
		mode = ", read-only"
	}
	fmt.Fprintf(cmd.OutOrStdout(), "relq web: serving %s (prefix %q) on http://%s/ (%s%s); Ctrl-C stops\n",
		s.where, s.prefix, ln.Addr(), auth, mode)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		_ = srv.Close()
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// allowedHosts are the host names relq web answers to on addr. On loopback: this machine's
// names, the one listened on and those of --allow-host, so that a page of another site that
// rebinds its own name to 127.0.0.1 cannot drive the dashboard as if it were its own origin.
// Elsewhere: only --allow-host's and the address listened on when --allow-host is given, any
// name otherwise (authentication, or --no-auth, was asked for).
func allowedHosts(addr string, extra []string) []string {
	host, _, _ := net.SplitHostPort(addr)
	var hosts []string
	if loopback(addr) {
		hosts = []string{"localhost", "127.0.0.1", "::1"}
	} else if len(extra) == 0 {
		return nil
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		hosts = append(hosts, host)
	}
	return append(hosts, extra...)
}

// loopback reports whether addr listens on a loopback address only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
