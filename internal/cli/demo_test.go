package cli

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// runCLI runs the relq command in-process and returns its exit code and output.
func runCLI(t *testing.T, env Env, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	env.Out, env.Err = &out, &errOut
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	code := Main(context.Background(), args, env)
	if code != 0 {
		t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
	return code, out.String()
}

// requireDemoStory checks the lines that tell what happened in a demo run.
func requireDemoStory(t *testing.T, out string) {
	t.Helper()
	for _, pattern := range []string{
		`published order-1, order-2, order-3, order-4, order-5, order-6 in one Publish call`,
		// once publish.lua is loaded and the group list cached, a publish is one round trip
		`published order-7, 1 round trip: evalsha\n`,
		// order-3 fails once and comes back with attempt 2 after its backoff.
		`sub-1 got order-3\s+delivery \d+, attempt 1 -> nack`,
		`sub-1 got order-3\s+delivery \d+, attempt 2 \(\d+\.\d+s after its nack\) -> ack`,
		// the crash and the reclaim
		`worker-crashy claims order-7 \(delivery \d+, attempt 1\) with a 1s lease`,
		`sub-2 got order-7\s+delivery \d+, attempt 2 -> ack: worker-crashy claimed it`,
		// the poison message is delivered MaxDeliveries times, then dead-lettered
		`sub-1 got order-6\s+delivery \d+, attempt 3 \(\d+\.\d+s after its nack\) -> nack`,
		`Dead letters of orders/billing: 1\n\s+order-6: delivery \d+, 3 attempts`,
		`now:\s+ready 0, delayed 0, pending 0, dead 1`,
		`reclaimed 1, dead-lettered 1`,
	} {
		require.Regexp(t, regexp.MustCompile(pattern), out)
	}
	require.NotRegexp(t, `order-6\s+delivery \d+, attempt 4`, out, "a dead letter was delivered again")
}

func TestDemoWithRedisURLLeavesDeadLetterAndCleansOnRerun(t *testing.T) {
	t.Parallel()
	srv := redistest.Shared(t)
	prefix := redistest.Prefix(t)

	getenv := func(k string) string {
		if k == "REDIS_URL" {
			return srv.URL()
		}
		return ""
	}
	code, out := runCLI(t, Env{Getenv: getenv}, "demo", "--prefix", prefix)
	require.Equal(t, 0, code)
	require.Regexp(t, `Redis: \S+ \(Redis \S+, from REDIS_URL\)`, out)
	require.Contains(t, out, "Deleted 0 keys")
	require.Contains(t, out, "The dead letter stays in Redis")
	requireDemoStory(t, out)

	// The dead letter stays for inspection.
	be, err := list.New(srv.Client(t), list.Options{Prefix: prefix})
	require.NoError(t, err)
	dls, err := be.DeadLetters(context.Background(), &backend.DeadLettersParams{Topic: demoTopic, Group: demoGroup})
	require.NoError(t, err)
	require.Len(t, dls, 1)
	require.Equal(t, "order-6", dls[0].Envelope.Metadata["order"])
	require.Equal(t, demoMaxDeliveries, dls[0].Attempts)

	// A re-run deletes its prefix first, so it tells the same story.
	code, out = runCLI(t, Env{}, "demo", "--redis-url", srv.URL(), "--prefix", prefix)
	require.Equal(t, 0, code)
	require.Regexp(t, `Redis: \S+ \(Redis \S+, from --redis-url\)`, out)
	require.Regexp(t, `Deleted [1-9]\d* keys left under prefix`, out)
	requireDemoStory(t, out)
}

func TestDemoStartsRedisServerFromPath(t *testing.T) {
	t.Parallel()
	code, out := runCLI(t, Env{LookPath: exec.LookPath}, "demo", "--prefix", redistest.Prefix(t))
	require.Equal(t, 0, code)
	require.Regexp(t, `Redis: redis-server \S+ from \S+ on 127\.0\.0\.1:\d+`, out)
	requireDemoStory(t, out)
}

func TestDemoFallsBackToEmbeddedRedis(t *testing.T) {
	t.Parallel()
	noRedis := func(string) (string, error) { return "", exec.ErrNotFound }
	code, out := runCLI(t, Env{LookPath: noRedis}, "demo")
	require.Equal(t, 0, code)
	require.Contains(t, out, "Redis: embedded in-process miniredis")
	requireDemoStory(t, out)
}

func TestDemoRejectsInvalidPrefix(t *testing.T) {
	t.Parallel()
	code, _ := runCLI(t, Env{}, "demo", "--prefix", "relq-*")
	require.Equal(t, 1, code)
	err := (&demoOptions{prefix: "relq-*"}).validate()
	require.True(t, errors.Is(err, backend.ErrInvalidName), err)
}

func TestCleanPrefixDeletesOnlyItsPrefix(t *testing.T) {
	t.Parallel()
	srv := redistest.Shared(t)
	c := srv.Client(t)
	ctx := context.Background()
	prefix := redistest.Prefix(t)
	mine := []string{"{" + prefix + ":orders}:ready", "{" + prefix + ":other}:dead", prefix + ":topics"}
	theirs := []string{"{" + prefix + "x:orders}:ready", prefix + "x:topics", "{" + prefix + "}:y"}
	for _, k := range append(append([]string{}, mine...), theirs...) {
		require.NoError(t, c.Set(ctx, k, "v", 0).Err())
	}
	n, err := cleanPrefix(ctx, c, prefix)
	require.NoError(t, err)
	require.Equal(t, len(mine), n)
	for _, k := range mine {
		require.Zero(t, c.Exists(ctx, k).Val(), k)
	}
	for _, k := range theirs {
		require.Equal(t, int64(1), c.Exists(ctx, k).Val(), k)
	}
}
