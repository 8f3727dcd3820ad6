package web_test

// A partitioned topic in a real browser: created with `relq topic create`, published to by a
// keyed Publisher, watched in `relq web`, it shows as one topic with its partitions, its counts
// added up over them, and each message under an ID that names its partition.

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/browsertest"
	"github.com/relq/relq/internal/cli"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/partition"
	"github.com/relq/relq/pubsub"
)

func TestPartitionedTopicInABrowser(t *testing.T) {
	srv := redistest.Shared(t)
	c, prefix := srv.Client(t), redistest.Prefix(t)
	var out strings.Builder
	code := cli.Main(ctxT(t), []string{"topic", "create", "accounts", "--partitions", "4", "--prefix", prefix, "--redis-url", srv.URL()},
		cli.Env{Out: &out, Err: &out, Getenv: func(string) string { return "" }})
	require.Equal(t, 0, code, out.String())
	require.Contains(t, out.String(), "Created topic accounts with 4 partitions")

	b := backendOf(t, c, "list", prefix)
	sub, err := pubsub.NewSubscriber(b, pubsub.SubscriberConfig{Group: "ledger"}, nil)
	require.NoError(t, err)
	require.NoError(t, sub.SubscribeInitialize("accounts"))
	require.NoError(t, sub.Close())
	pub, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{
		Key: func(_ string, m *message.Message) string { return m.Metadata.Get("account") },
	}, nil)
	require.NoError(t, err)
	defer pub.Close()
	for i := range 40 {
		m := message.NewMessage(fmt.Sprintf("event-%d", i), []byte(fmt.Sprintf(`{"event":%d}`, i)))
		m.Metadata.Set("account", fmt.Sprintf("acct-%d", i%8))
		require.NoError(t, pub.Publish("accounts", m))
	}
	// One message dies, on whichever partition it is.
	seen := partition.Open(b)
	ds, err := seen.Claim(ctxT(t), &backend.ClaimParams{Topic: "accounts", Group: "ledger", Consumer: "w", Count: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, ds, 1)
	_, err = seen.Nack(ctxT(t), &backend.NackParams{Topic: "accounts", Group: "ledger", Consumer: "w", MaxDeliveries: 1,
		Items: []backend.NackItem{{ID: ds[0].ID, Attempt: ds[0].Attempt, Reason: "declined"}}})
	require.NoError(t, err)

	base := serveWeb(t, srv.URL(), "--prefix", prefix, "--backend", "list")
	ctx := browsertest.New(t)
	row := `tr[data-key="list accounts ledger"]`
	require.NoError(t, step(ctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(row))))
	require.Equal(t, "39", browsertest.Text(t, ctx, row+` td[data-f="ready"]`), "ready, over the 4 partitions")
	require.Equal(t, "1", browsertest.Text(t, ctx, row+` td[data-f="dead"]`))
	require.NotContains(t, browsertest.Text(t, ctx, `body`), "accounts|", "a partition is no topic of its own")

	require.NoError(t, step(ctx, chromedp.Navigate(base+"topic?b=list&t=accounts"), chromedp.WaitVisible(chromedp.CSS(`#partitions`))))
	require.Equal(t, "4", browsertest.Text(t, ctx, `#partitions`))

	require.NoError(t, step(ctx, chromedp.Navigate(base+"group?b=list&t=accounts&g=ledger"), chromedp.WaitVisible(chromedp.CSS(`#messages`))))
	require.Equal(t, "39", browsertest.Text(t, ctx, `#n-ready`))
	ids := browsertest.Text(t, ctx, `#messages tbody`)
	for p := range 4 {
		require.Regexp(t, regexp.MustCompile(`(^|\s)`+fmt.Sprint(p)+`:\d`), ids, "messages of partition %d, named by it", p)
	}
	require.NoError(t, step(ctx, chromedp.Click(chromedp.CSS(`#messages tbody a`)), chromedp.WaitVisible(chromedp.CSS(`#payload`))))
	require.Equal(t, "ready", browsertest.Text(t, ctx, `#state`))
	require.Contains(t, browsertest.Text(t, ctx, `#payload`), `"event"`)
}
