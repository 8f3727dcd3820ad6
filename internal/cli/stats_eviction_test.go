package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/internal/redistest"
)

// stats prints an error line above the tables when Redis's maxmemory-policy can evict queue
// keys, none for a safe policy, and none when it may not read the policy (INFO refused).
func TestStatsWarnsOfEviction(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	f := newFixtureOn(t, srv.URL(), srv.Client(t))
	fillOrders(f)

	code, out, _ := f.run("stats")
	require.Equal(t, 0, code)
	require.NotContains(t, out, "maxmemory-policy")

	require.NoError(t, f.c.ConfigSet(f.ctx, "maxmemory-policy", "allkeys-lru").Err())
	code, out, _ = f.run("stats")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^ERROR: Redis maxmemory-policy is allkeys-lru: .* set maxmemory-policy noeviction \(evicted_keys 0\)$`, out)
	require.Regexp(t, `(?m)^list\s+orders\s+billing\s+2\s+1\s+1\s+1\s`, out, "the tables follow")

	user := redistest.User{Name: "noinfo", Password: "secret", Rules: []string{"~*", "+@all", "-info"}}
	srv.AddUser(t, user)
	code, out, errOut := runTool(t, f.ctx, Env{Getenv: urlEnv("redis://noinfo:secret@" + srv.Addr())}, "stats", "--prefix", f.prefix)
	require.Equal(t, 0, code, errOut)
	require.NotContains(t, out, "maxmemory-policy")
	require.Regexp(t, `(?m)^list\s+orders\s+billing\s`, out)
}
