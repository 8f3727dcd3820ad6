package cli

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/internal/redistest"
)

func TestConnectExplainsAWrongURL(t *testing.T) {
	t.Parallel()
	for _, url := range []string{"http://localhost:6379", "redis://localhost:6379/notadb", "redis://localhost:6379?bogus=1"} {
		code, _, errOut := runTool(t, context.Background(), Env{}, "topics", "--redis-url", url)
		require.Equal(t, 1, code, url)
		require.Contains(t, errOut, `relq: invalid Redis URL "`+url+`" (from --redis-url): redis: `, url)
		require.Contains(t, errOut, "want redis://[user:password@]host:port[/db], rediss://... for TLS", url)
	}
	// From REDIS_URL, with its password hidden.
	code, _, errOut := runTool(t, context.Background(), Env{Getenv: urlEnv("redis://u:hunter2@localhost:6379/x")}, "stats")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `invalid Redis URL "redis://u:xxxxx@localhost:6379/x" (from REDIS_URL)`)
	require.NotContains(t, errOut, "hunter2")
}

func TestConnectExplainsConnectionRefused(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there now
	url := "redis://u:hunter2@" + addr

	code, _, errOut := runTool(t, context.Background(), Env{Getenv: urlEnv(url)}, "topics")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "relq: cannot connect to Redis at redis://u:xxxxx@"+addr+" (from REDIS_URL): nothing listens there (connection refused)")
	require.NotContains(t, errOut, "hunter2")
}

// Without --redis-url or REDIS_URL the tools use redis://localhost:6379, and say so when it
// fails (here because the context is already cancelled: whatever listens on that port is
// never asked).
func TestConnectNamesTheDefaultURL(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	opts := connOptions{prefix: "relq", backend: "auto"}
	_, err := opts.connect(ctx, Env{Getenv: func(string) string { return "" }})
	require.ErrorContains(t, err, "Redis at redis://localhost:6379 (the default: neither --redis-url nor REDIS_URL is set)")
}

func TestConnectExplainsAWrongPassword(t *testing.T) {
	t.Parallel()
	srv := redistest.Shared(t)
	code, _, errOut := runTool(t, context.Background(), Env{}, "topics", "--redis-url", "redis://nobody:wrong@"+srv.Addr())
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "relq: Redis at redis://nobody:xxxxx@"+srv.Addr()+" (from --redis-url) refused the login: WRONGPASS")
}

// An ACL user without a command the tool needs gets an error that names the user and the
// rules the tools need, whether Redis refuses the command itself or a script's call.
func TestConnectExplainsAMissingPermission(t *testing.T) {
	t.Parallel()
	srv := redistest.Shared(t)
	f := newFixture(t)
	fillDead(f)
	f.publish(f.zset, "later", 1, time.Hour)
	f.publish(f.stream, "events", 1, 0)
	name := f.prefix // unique to the test, and a valid user name
	admin := srv.Client(t)
	userURL := func(u redistest.User) string {
		srv.AddUser(t, u)
		t.Cleanup(func() { _ = admin.Do(context.Background(), "ACL", "DELUSER", u.Name).Err() })
		return "redis://" + u.Name + ":pw@" + srv.Addr()
	}
	base := []string{"--prefix", f.prefix, "--redis-url"}

	// No SCAN: topics cannot look for topics.
	url := userURL(redistest.User{Name: name + "-noscan", Password: "pw",
		Rules: []string{"~{" + f.prefix + ":*", "-@all", "+ping", "+info"}})
	code, _, errOut := runTool(t, context.Background(), Env{}, append([]string{"topics"}, append(base, url)...)...)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `refused a command to user "`+name+`-noscan": list backend: find topics: NOPERM`)
	require.Contains(t, errOut, "ACL SETUSER "+name+"-noscan ~{"+f.prefix+":* -@all +@read +ping +evalsha +eval +time +info")

	// The read-only rules the docs give: every read works, a requeue's script is refused.
	url = userURL(redistest.User{Name: name + "-ro", Password: "pw",
		Rules: []string{"~{" + f.prefix + ":*", "-@all", "+@read", "+ping", "+evalsha", "+eval", "+time", "+info"}})
	for _, args := range [][]string{{"topics"}, {"stats"}, {"dead", "ls", "--topic", "orders", "--group", "billing"}} {
		code, _, _ := runTool(t, context.Background(), Env{}, append(args, append(base, url)...)...)
		require.Equal(t, 0, code, args)
	}
	code, _, errOut = runTool(t, context.Background(), Env{},
		append([]string{"dead", "requeue", "--all", "--topic", "orders", "--group", "billing"}, append(base, url)...)...)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `refused a command to user "`+name+`-ro": requeue: `)
	require.Contains(t, errOut, "the verbs that change data (dead requeue|purge, topic delete, group pause|resume|delete, msg rm|run) need +@write too")
	require.Equal(t, int64(5), f.stats(f.list, "orders", "billing").Dead)

	// With +@write as well, the dead-letter commands work.
	url = userURL(redistest.User{Name: name + "-rw", Password: "pw",
		Rules: []string{"~{" + f.prefix + ":*", "-@all", "+@read", "+@write", "+ping", "+evalsha", "+eval", "+time", "+info"}})
	code, _, _ = runTool(t, context.Background(), Env{},
		append([]string{"dead", "requeue", "--all", "--topic", "orders", "--group", "billing"}, append(base, url)...)...)
	require.Equal(t, 0, code)
	require.Zero(t, f.stats(f.list, "orders", "billing").Dead)
}

func TestConnectOverTLS(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{TLS: &redistest.TLSOptions{}})
	f := newFixtureOn(t, srv.URL(), srv.Client(t))
	f.publish(f.stream, "events", 1, 0)
	tlsFlags := []string{"--tls-ca", srv.CAFile(),
		// The server asks for a client certificate (tls-auth-clients yes); redistest writes one.
		"--tls-cert", filepath.Join(srv.Dir, "client.crt"), "--tls-key", filepath.Join(srv.Dir, "client.key")}

	code, out, _ := f.run(append([]string{"topics"}, tlsFlags...)...)
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^streams\s+events\s+default$`, out)

	code, _, errOut := f.run("topics")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "relq: cannot connect to Redis at "+srv.URL()+" (from REDIS_URL): ")
	require.Contains(t, errOut, "(--tls-ca names the CA to trust)")

	plain := "redis://" + srv.Addr()
	code, _, errOut = f.run(append([]string{"topics", "--redis-url", plain}, tlsFlags...)...)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "relq: --tls-ca, --tls-cert and --tls-key need a rediss:// URL")
	code, _, errOut = f.run("topics", "--redis-url", plain)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "relq: cannot connect to Redis at "+plain+" (from --redis-url)")
}
