package cli

import (
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
)

// The demo leaves a dead letter under its own prefix; the commands its last lines suggest
// work on it, as a user would type them with REDIS_URL set. A private server: the demo's
// prefix is fixed, so it must not share one with anything.
func TestToolsWorkOnWhatTheDemoLeaves(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	env := Env{Getenv: urlEnv(srv.URL())}
	ctx := context.Background()

	code, out, _ := runTool(t, ctx, env, "demo")
	require.Equal(t, 0, code)
	require.Contains(t, out, "The dead letter stays in Redis under prefix \"relq-demo\" for you to inspect. Try next:\n"+
		"  relq topics --prefix relq-demo\n"+
		"  relq stats --prefix relq-demo --watch\n"+
		"  relq dead ls --prefix relq-demo --topic orders --group billing\n"+
		"  relq dead requeue --prefix relq-demo --topic orders --group billing --all\n")

	be, err := list.New(srv.Client(t), list.Options{Prefix: DemoPrefixDefault})
	require.NoError(t, err)
	dls, err := be.DeadLetters(ctx, &backend.DeadLettersParams{Topic: demoTopic, Group: demoGroup})
	require.NoError(t, err)
	require.Len(t, dls, 1)

	code, out, _ = runTool(t, ctx, env, "topics", "--prefix", "relq-demo")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^list\s+orders\s+billing$`, out)

	code, out, _ = runTool(t, ctx, env, "stats", "--prefix", "relq-demo")
	require.Equal(t, 0, code)
	//                                               ready delayed pending dead
	require.Regexp(t, `(?m)^list\s+orders\s+billing\s+0\s+0\s+0\s+1\s+-\s+-$`, out)
	//                                    published claimed acked nacked reclaimed dead-lettered stale  reregistered
	require.Regexp(t, `(?m)^list\s+orders\s+billing\s+7\s+\d+\s+6\s+\d+\s+1\s+1\s+\d+\s+\d+\s+0$`, out)

	code, out, _ = runTool(t, ctx, env, "dead", "ls", "--prefix", "relq-demo", "--topic", "orders", "--group", "billing")
	require.Equal(t, 0, code)
	require.Contains(t, out, `Dead letters of orders/billing (list backend, prefix "relq-demo"): 1-1 of 1`)
	require.Regexp(t, `(?m)^`+dls[0].ID+`\s+3\s+.*\s+`+dls[0].Envelope.UUID+`\s+`+regexp.QuoteMeta(dls[0].Reason)+`$`, out)

	code, out, _ = runTool(t, ctx, env, "dead", "show", "--prefix", "relq-demo", "--topic", "orders", "--group", "billing", dls[0].ID)
	require.Equal(t, 0, code)
	require.Contains(t, out, "    order   order-6\n    poison  true\n")

	code, out, _ = runTool(t, ctx, env, "dead", "requeue", "--prefix", "relq-demo", "--topic", "orders", "--group", "billing", "--all")
	require.Equal(t, 0, code)
	require.Contains(t, out, "Requeued 1 dead letter of orders/billing (list backend")

	// Ready again, the topic shows it is the list backend's.
	code, out, _ = runTool(t, ctx, env, "stats", "--prefix", "relq-demo")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^list\s+orders\s+billing\s+1\s+0\s+0\s+0\s`, out)
}
