package cli

// The connection of the tool commands (topics, stats, dead): which Redis, which prefix,
// which backends. Unlike demo and bench they never start a Redis of their own: they inspect
// and change the data of a Redis that applications use.

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/adapters/streams"
	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/partition"
)

// DefaultRedisURL is the Redis the tool commands use without --redis-url or REDIS_URL, as
// redis-cli does.
const DefaultRedisURL = "redis://localhost:6379"

// connectTimeout bounds the first contact with Redis, so an address that drops packets fails
// in seconds rather than hanging.
const connectTimeout = 10 * time.Second

// backendNames are the backends in the order the tools look at and print them.
var backendNames = []string{"list", "zset", "streams"}

// connOptions are the flags of the tool commands that say which Redis and which relq data.
type connOptions struct {
	url     string
	cluster bool
	tlsCA   string
	tlsCert string
	tlsKey  string
	prefix  string
	backend string
}

// addFlags registers the connection flags on cmd and, as persistent flags, its subcommands.
func (o *connOptions) addFlags(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.StringVar(&o.url, "redis-url", "", "Redis URL: redis://[user:password@]host:port[/db], rediss:// for TLS\n(default $REDIS_URL, else "+DefaultRedisURL+")")
	f.BoolVar(&o.cluster, "cluster", false, "Redis Cluster: the URL names one node, more with ?addr=host:port&addr=...\n(detected by itself when the node reports cluster_enabled:1)")
	f.StringVar(&o.tlsCA, "tls-ca", "", "PEM file of the CA that signed the server's certificate (rediss://; default: the system's CAs)")
	f.StringVar(&o.tlsCert, "tls-cert", "", "PEM file of a client certificate, for servers that ask for one (rediss://, with --tls-key)")
	f.StringVar(&o.tlsKey, "tls-key", "", "PEM file of the client certificate's private key")
	f.StringVar(&o.prefix, "prefix", list.PrefixDefault, "key prefix the applications use (the backends' Options.Prefix)")
	f.StringVar(&o.backend, "backend", "auto", "list, zset, streams, or auto: look in all three")
}

// session is a connection to Redis and the backends on it, for one command.
type session struct {
	client redis.UniversalClient
	// where says which Redis this is, password hidden, for messages.
	where  string
	user   string
	prefix string
	// backends are the backends to look in, in backendNames order.
	backends []*source
}

// source is one relq backend of the session.
type source struct {
	name string
	finder
}

// finder is what the tools need of a backend: the contract and the topic lookups, which
// every relq adapter implements.
type finder interface {
	backend.Backend
	backend.TopicLister
}

func (s *session) Close() {
	if s.client != nil { // nil in tests on an in-memory Admin
		_ = s.client.Close()
	}
}

// connect validates the options and connects, checking that Redis answers.
func (o *connOptions) connect(ctx context.Context, env Env) (*session, error) {
	if err := backend.ValidateName("prefix", o.prefix); err != nil {
		return nil, err // "relq: invalid prefix name ..."
	}
	names := backendNames
	switch o.backend {
	case "auto", "":
	case "list", "zset", "streams":
		names = []string{o.backend}
	default:
		return nil, fmt.Errorf("--backend %q: want list, zset, streams or auto", o.backend)
	}
	if env.dial != nil {
		return env.dial(ctx, o)
	}

	raw, from := o.url, "from --redis-url"
	if raw == "" {
		raw, from = env.Getenv("REDIS_URL"), "from REDIS_URL"
	}
	if raw == "" {
		raw, from = DefaultRedisURL, "the default: neither --redis-url nor REDIS_URL is set"
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, urlError(raw, from, err)
	}
	where := fmt.Sprintf("%s (%s)", u.Redacted(), from)
	tlsConf, err := o.tlsConfig()
	if err != nil {
		return nil, err
	}

	client, err := o.dial(ctx, raw, from, where, u.Query().Has("addr"), tlsConf)
	if err != nil {
		return nil, err
	}
	s := &session{client: client, where: where, prefix: o.prefix, user: "default"}
	if name := u.User.Username(); name != "" {
		s.user = name
	}
	for _, name := range names {
		b, err := newBackend(client, name, o.prefix)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.backends = append(s.backends, b)
	}
	return s, nil
}

// dial returns a client that answered PING: a Cluster client with --cluster, with seed
// addresses in the URL, or when the node named reports that it is a Cluster node.
func (o *connOptions) dial(ctx context.Context, raw, from, where string, seeds bool, tlsConf *tls.Config) (redis.UniversalClient, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if !o.cluster && !seeds {
		opt, err := redis.ParseURL(raw)
		if err != nil {
			return nil, urlError(raw, from, err)
		}
		if err := applyTLS(&opt.TLSConfig, tlsConf); err != nil {
			return nil, err
		}
		c := redis.NewClient(opt)
		if err := c.Ping(ctx).Err(); err != nil {
			_ = c.Close()
			return nil, dialError(where, err)
		}
		if !clusterNode(ctx, c) {
			return c, nil
		}
		_ = c.Close()
		if opt.DB != 0 {
			return nil, fmt.Errorf("Redis at %s is a Cluster node: it has no database %d, leave it out of the URL", where, opt.DB)
		}
	}
	opt, err := redis.ParseClusterURL(raw)
	if err != nil {
		return nil, urlError(raw, from, err)
	}
	if err := applyTLS(&opt.TLSConfig, tlsConf); err != nil {
		return nil, err
	}
	c := redis.NewClusterClient(opt)
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		return nil, dialError(where+", as a Cluster", err)
	}
	return c, nil
}

// clusterNode reports whether c's server runs in Cluster mode. A server that refuses INFO
// (ACLs) is taken for a single node; --cluster says otherwise.
func clusterNode(ctx context.Context, c *redis.Client) bool {
	info, err := c.Info(ctx, "cluster").Result()
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "cluster_enabled:1" {
			return true
		}
	}
	return false
}

func newBackend(client redis.UniversalClient, name, prefix string) (*source, error) {
	var f finder
	var err error
	switch name {
	case "list":
		f, err = list.New(client, list.Options{Prefix: prefix})
	case "zset":
		f, err = zset.New(client, zset.Options{Prefix: prefix})
	default:
		f, err = streams.New(client, streams.Options{Prefix: prefix})
	}
	if err != nil {
		return nil, err
	}
	// Seen through partitioned topics: a topic created with partitions is one topic, not many.
	return &source{name: name, finder: partition.Open(f).(finder)}, nil
}

// tlsConfig loads the --tls-* files, or returns nil when none is given.
func (o *connOptions) tlsConfig() (*tls.Config, error) {
	if o.tlsCA == "" && o.tlsCert == "" && o.tlsKey == "" {
		return nil, nil
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.tlsCA != "" {
		pem, err := os.ReadFile(o.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		conf.RootCAs = x509.NewCertPool()
		if !conf.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", o.tlsCA)
		}
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	if o.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	return conf, nil
}

// applyTLS merges the --tls-* settings into the TLS configuration ParseURL made for a
// rediss:// URL (which names the server), and refuses them for a plain redis:// URL.
func applyTLS(dst **tls.Config, files *tls.Config) error {
	if files == nil {
		return nil
	}
	if *dst == nil {
		return errors.New("--tls-ca, --tls-cert and --tls-key need a rediss:// URL")
	}
	(*dst).RootCAs = files.RootCAs
	(*dst).Certificates = files.Certificates
	return nil
}

func urlError(raw, from string, err error) error {
	shown := raw
	if u, perr := url.Parse(raw); perr == nil {
		shown = u.Redacted()
	} else if i := strings.LastIndex(raw, "@"); i >= 0 {
		shown = "(hidden: it may hold a password)" + raw[i:]
	}
	return fmt.Errorf("invalid Redis URL %q (%s): %v\nwant redis://[user:password@]host:port[/db], rediss://... for TLS, "+
		"unix:///path/to/redis.sock, or for a Cluster one node's URL (more with ?addr=host:port&addr=...)", shown, from, err)
}

// dialError explains a failed first contact.
func dialError(where string, err error) error {
	switch {
	case redis.IsAuthError(err):
		return fmt.Errorf("Redis at %s refused the login: %w\n(user and password go in the URL: redis://user:password@host:port)", where, err)
	case redis.IsPermissionError(err):
		return fmt.Errorf("Redis at %s: the user may not run PING: %w", where, err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("cannot connect to Redis at %s: nothing listens there (connection refused)", where)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return fmt.Errorf("cannot connect to Redis at %s: no answer within %v: %w", where, connectTimeout, err)
	case errors.Is(err, io.EOF):
		return fmt.Errorf("cannot connect to Redis at %s: the server closed the connection (a TLS server reached with redis:// instead of rediss://?)", where)
	}
	var cert *tls.CertificateVerificationError
	if errors.As(err, &cert) {
		return fmt.Errorf("cannot connect to Redis at %s: %w\n(--tls-ca names the CA to trust)", where, err)
	}
	return fmt.Errorf("cannot connect to Redis at %s: %w", where, err)
}

func isTimeout(err error) bool {
	var nerr net.Error
	return errors.As(err, &nerr) && nerr.Timeout()
}

// explain adds to an error of a Redis command what the user can do about it.
func (s *session) explain(err error) error {
	switch {
	case err == nil || errors.Is(err, context.Canceled):
		return err
	case isPermission(err):
		return fmt.Errorf("Redis at %s refused a command to user %q: %w\n"+
			"(the relq tools need, for example: ACL SETUSER %s ~{%s:* -@all +@read +ping +evalsha +eval +time +info; "+
			"the verbs that change data (dead requeue|purge, topic delete, group pause|resume|delete, msg rm|run) need +@write too: "+
			"see docs/cli.md, Permissions)",
			s.where, s.user, err, s.user, s.prefix)
	case redis.IsAuthError(err):
		return fmt.Errorf("Redis at %s refused the login: %w", s.where, err)
	case errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, io.EOF) || isTimeout(err):
		return fmt.Errorf("lost Redis at %s: %w", s.where, err)
	}
	return err
}

// isPermission reports an ACL refusal: NOPERM for a command sent, or the error a script gets
// when it calls a command or touches a key the user may not.
func isPermission(err error) bool {
	return redis.IsPermissionError(err) || strings.Contains(err.Error(), "NOPERM") ||
		strings.Contains(err.Error(), "The user executing the script")
}
