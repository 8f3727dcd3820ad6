package web_test

// The dashboard in a real browser: Debian's chromium, headless, driven by chromedp, against
// the real `relq web` command and a private redis-server. Each step is what an operator does.
// With RELQ_WEB_SCREENSHOTS=<dir> (make web-screenshots) the screenshots go there: the
// pictures of docs/web.md come from this test.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/browsertest"
	"github.com/relq/relq/internal/cli"
	"github.com/relq/relq/internal/keys"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// serveWeb runs `relq web` in this process with args until the test ends and returns its URL.
func serveWeb(t *testing.T, url string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	done := make(chan int, 1)
	go func() {
		code := cli.Main(ctx, append([]string{"web", "--redis-url", url, "--addr", "127.0.0.1:0"}, args...),
			cli.Env{Out: w, Err: w, Getenv: func(string) string { return "" }})
		_ = w.Close()
		done <- code
	}()
	t.Cleanup(func() {
		cancel()
		go func() { _, _ = io.Copy(io.Discard, r) }() // should the scan above have stopped early
		require.Equal(t, 0, <-done, "relq web exit code")
	})
	lines := bufio.NewScanner(r)
	addr := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+/)`)
	for lines.Scan() {
		if m := addr.FindStringSubmatch(lines.Text()); m != nil {
			go func() { _, _ = io.Copy(io.Discard, r) }() // its log, for the rest of the run
			return m[1]
		}
		t.Log("relq web: " + lines.Text())
	}
	t.Fatal("relq web ended before it served")
	return ""
}

// shots is where screenshots go: RELQ_WEB_SCREENSHOTS, else the test's temporary directory.
func shots(t *testing.T) string {
	if dir := os.Getenv("RELQ_WEB_SCREENSHOTS"); dir != "" {
		return dir
	}
	return t.TempDir()
}

// received collects what a Watermill subscriber handled.
type received struct {
	mu    sync.Mutex
	uuids []string
}

func (r *received) has(uuid string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, u := range r.uuids {
		if u == uuid {
			return true
		}
	}
	return false
}

func (r *received) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.uuids)
}

// subscribe runs a Watermill subscriber of group on topic that acks everything, until stop.
func subscribe(t *testing.T, b backend.Backend, topic, group string) (got *received, stop func()) {
	sub, err := pubsub.NewSubscriber(b, pubsub.SubscriberConfig{Group: group, Block: 200 * time.Millisecond}, watermill.NopLogger{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	msgs, err := sub.Subscribe(ctx, topic)
	require.NoError(t, err)
	got = &received{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range msgs {
			got.mu.Lock()
			got.uuids = append(got.uuids, m.UUID)
			got.mu.Unlock()
			m.Ack()
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			require.NoError(t, sub.Close())
			<-done
		})
	}
	t.Cleanup(stop)
	return got, stop
}

// stepTimeout bounds each step of the browser test, so that a selector that never matches
// fails the test in a minute rather than hanging the package until go test's timeout.
const stepTimeout = time.Minute

// step runs browser actions, within stepTimeout.
func step(ctx context.Context, actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

// run runs a browser action that returns a value, within stepTimeout.
func run[T any](ctx context.Context, a chromedp.Action[T]) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	return chromedp.Run(ctx, a)
}

// chartSamples waits until the overview's chart draws n samples, about n seconds.
func chartSamples(n int) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](fmt.Sprintf(
		`(document.querySelector("#chart polyline")?.getAttribute("points") || "").split(" ").length >= %d`, n),
		chromedp.WithPollingTimeout(30*time.Second))
}

func TestDashboardInABrowser(t *testing.T) {
	// A private redis-server, so that the pictures show the prefix an application would use.
	srv := redistest.Start(t, redistest.Options{})
	c, prefix, redisURL := srv.Client(t), "shop", srv.URL()
	b := backendOf(t, c, "list", prefix)
	env := adaptertest.NewEnv(t, c, prefix, b)
	dir := shots(t)
	shot := func(ctx context.Context, name string) { browsertest.Screenshot(t, ctx, filepath.Join(dir, name)) }

	// Five orders for billing; the fifth is nacked until it is dead.
	env.EnsureGroup("orders", "billing")
	env.EnsureGroup("orders", "shipping")
	env.EnsureGroup("emails", "sender")
	var uuids []string
	for i := 1; i <= 5; i++ {
		msg := backend.OutMessage{Envelope: backend.Envelope{UUID: watermill.NewUUID(), Payload: []byte(fmt.Sprintf(`{"order":%d,"sku":"A-%d","qty":%d}`, i, 100+i, i)),
			Metadata: map[string]string{"source": "shop", "trace_id": fmt.Sprintf("t-%d", i)}}}
		_, err := b.Publish(ctxT(t), &backend.PublishParams{Topic: "orders", Messages: []backend.OutMessage{msg}})
		require.NoError(t, err)
		uuids = append(uuids, msg.Envelope.UUID)
	}
	env.PublishDelayed("emails", time.Hour, "Hello Ana,\nyour order has shipped.")
	var deadID string
	for _, d := range env.Claim("orders", "billing", "worker-1", 5) {
		if d.Envelope.UUID == uuids[4] {
			deadID = d.ID
			env.Nack("orders", "billing", "worker-1", 1, backend.NackItem{ID: d.ID, Attempt: d.Attempt, Reason: "payment provider said: card declined"})
		} else {
			env.Nack("orders", "billing", "worker-1", 0, backend.NackItem{ID: d.ID, Attempt: d.Attempt, Release: true})
		}
	}
	require.NotEmpty(t, deadID)

	env.Publish("emails", "slow")
	env.ClaimLease("emails", "sender", "worker-slow", 1, time.Hour)
	base := serveWeb(t, redisURL, "--prefix", prefix, "--backend", "list", "--stuck-after", "2s")
	ctx := browsertest.New(t)
	row := `tr[data-key="list orders billing"]`

	// The overview counts what is in Redis, and its script keeps them live.
	require.NoError(t, step(ctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(row))))
	require.Equal(t, "4", browsertest.Text(t, ctx, row+` td[data-f="ready"]`))
	require.Equal(t, "1", browsertest.Text(t, ctx, row+` td[data-f="dead"]`))
	require.NoError(t, step(ctx, chromedp.WaitVisible(chromedp.CSS(`#live.on`))))
	env.Publish("orders", "one more")
	require.NoError(t, step(ctx, chromedp.Poll[chromedp.Void](`document.querySelector('`+row+` td[data-f="ready"]').textContent === "5"`, chromedp.WithPollingTimeout(10*time.Second))),
		"the overview updates without a reload")

	// The dead letter: its page, then requeued from the message page.
	require.NoError(t, step(ctx, chromedp.Click(chromedp.CSS(row+` td[data-f="dead"] a`)), chromedp.WaitVisible(chromedp.CSS(`#letters`))))
	require.Contains(t, browsertest.Text(t, ctx, `#reasons`), "card declined")
	shot(ctx, "dead-letters.png")
	require.NoError(t, step(ctx, chromedp.Click(chromedp.CSS(`#letters a`)), chromedp.WaitVisible(chromedp.CSS(`#payload`))))
	require.Equal(t, "dead", browsertest.Text(t, ctx, `#state`))
	require.Contains(t, browsertest.Text(t, ctx, `#payload`), `"order": 5`)
	require.Contains(t, browsertest.Text(t, ctx, `#payload-kind`), "JSON")
	shot(ctx, "message.png")
	require.NoError(t, step(ctx, chromedp.Click(chromedp.CSS(`#requeue`)), chromedp.WaitVisible(chromedp.CSS(`#flash`))))
	require.Contains(t, browsertest.Text(t, ctx, `#flash`), "Requeued 1 dead letter")
	require.Equal(t, "ready", browsertest.Text(t, ctx, `#state`))

	got, stop := subscribe(t, b, "orders", "billing")
	require.Eventually(t, func() bool { return got.has(uuids[4]) && got.count() >= 6 }, 10*time.Second, 20*time.Millisecond,
		"a subscriber receives the requeued dead letter")

	// Live rates while messages flow.
	flow, endFlow := context.WithCancel(context.Background())
	flowed := make(chan struct{})
	t.Cleanup(func() { endFlow(); <-flowed }) // when a step fails before the flow ends
	go func() {
		defer close(flowed)
		for i := 0; flow.Err() == nil; i++ {
			_, _ = b.Publish(flow, &backend.PublishParams{Topic: "orders", Messages: []backend.OutMessage{{Envelope: adaptertest.Envelope(fmt.Sprintf(`{"order":%d}`, 1000+i))}}})
			time.Sleep(40 * time.Millisecond)
		}
	}()
	require.NoError(t, step(ctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(row)),
		chromedp.Poll[chromedp.Void](`parseFloat(document.querySelector('`+row+` td[data-f="rAck"]').textContent) > 0`, chromedp.WithPollingTimeout(15*time.Second))),
		"the overview shows a rate of acks")

	// Problems stand out: shipping's ready count grows (nobody consumes it) and a letter dies
	// while the page is open; a sender holds a message past --stuck-after.
	ds := env.Claim("orders", "shipping", "worker-2", 1)
	env.Nack("orders", "shipping", "worker-2", 1, backend.NackItem{ID: ds[0].ID, Attempt: ds[0].Attempt, Reason: "no address"})
	problems := func(key string) string {
		return `document.querySelector('tr[data-key="list ` + key + `"] td.problems').textContent`
	}
	for key, want := range map[string]string{"orders shipping": "backlog growing", "emails sender": "stuck pending"} {
		require.NoError(t, step(ctx, chromedp.Poll[chromedp.Void](problems(key)+`.includes("`+want+`")`, chromedp.WithPollingTimeout(30*time.Second))), key)
	}
	shipping := browsertest.Text(t, ctx, `tr[data-key="list orders shipping"] td.problems`)
	require.Contains(t, shipping, "new dead letters")
	require.NotContains(t, browsertest.Text(t, ctx, row+` td.problems`), "backlog", "billing keeps up")
	require.NoError(t, step(ctx, chartSamples(8)), "the chart draws the rates")
	shot(ctx, "overview.png")
	browsertest.Phone(t, ctx)
	require.NoError(t, step(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(row)), chartSamples(5)))
	shot(ctx, "overview-phone.png")
	require.NoError(t, step(ctx, chromedp.EmulateViewport(1280, 900)))
	endFlow()
	<-flowed

	// Pause: claims stop while publishes are still stored; resume: they flow again. First
	// the subscriber drains what flowed, so that nothing it prefetched arrives late.
	require.Eventually(t, func() bool {
		st := env.Stats("orders", "billing")
		return st.Ready == 0 && st.Pending == 0 // all acked, so handled: the handler acks last
	}, 10*time.Second, 20*time.Millisecond, "the subscriber drains the flow")
	require.NoError(t, step(ctx, chromedp.Navigate(base+"group?b=list&t=orders&g=billing"), chromedp.WaitVisible(chromedp.CSS(`#pause`))))
	require.NoError(t, step(ctx, chromedp.Click(chromedp.CSS(`#pause`)), chromedp.WaitVisible(chromedp.CSS(`#paused`))))
	require.Contains(t, browsertest.Text(t, ctx, `#flash`), "Paused orders / billing")
	claimed := env.Stats("orders", "billing").Counters.Claimed
	before := got.count()
	held := backend.OutMessage{Envelope: adaptertest.Envelope("while paused")}
	_, err := b.Publish(ctxT(t), &backend.PublishParams{Topic: "orders", Messages: []backend.OutMessage{held}})
	require.NoError(t, err)
	time.Sleep(time.Second) // five of the subscriber's claims (Block 200ms): none may deliver
	require.Equal(t, before, got.count(), "a paused group delivers nothing")
	st := env.Stats("orders", "billing")
	require.Equal(t, claimed, st.Counters.Claimed, "a paused group's claims take nothing")
	require.EqualValues(t, 1, st.Ready, "the publish is stored")
	require.NoError(t, step(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#resume`))))
	shot(ctx, "group.png")
	require.NoError(t, step(ctx, chromedp.Click(chromedp.CSS(`#resume`)), chromedp.WaitVisible(chromedp.CSS(`#pause`))))
	require.Eventually(t, func() bool { return got.has(held.Envelope.UUID) }, 10*time.Second, 20*time.Millisecond, "resumed: the message is delivered")
	stop()

	// Delete the topic: a confirmation first, then every key of it is gone.
	require.NoError(t, step(ctx, chromedp.Navigate(base+"topic?b=list&t=orders"), chromedp.Click(chromedp.CSS(`#delete-topic`)), chromedp.WaitVisible(chromedp.CSS(`#confirm`))))
	require.Contains(t, browsertest.Text(t, ctx, `#question`), "Delete topic orders")
	active, err := run(ctx, chromedp.Evaluate[string](`document.activeElement.id`))
	require.NoError(t, err)
	require.Equal(t, "cancel", active, "the confirmation focuses Cancel: Enter does not delete")
	require.NotEmpty(t, env.Keys("orders"), "nothing is deleted before the confirmation")
	shot(ctx, "confirm.png")
	require.NoError(t, step(ctx, chromedp.Click(chromedp.CSS(`#confirm`)), chromedp.WaitVisible(chromedp.CSS(`#flash`))))
	require.Contains(t, browsertest.Text(t, ctx, `#flash`), "Deleted topic orders")
	keysLeft, err := c.Keys(ctxT(t), keys.Tag(prefix, "orders")+"*").Result()
	require.NoError(t, err)
	require.Empty(t, adaptertest.LiveKeys(t, ctxT(t), c, keysLeft), "the topic's keys are gone, but its tombstones")
	rows, err := run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('tr[data-key^="list orders "]').length`))
	require.NoError(t, err)
	require.Zero(t, rows, "the overview no longer lists the topic")

	// Keyboard: the first Tab reaches the skip link, and a focused link opens with Enter.
	require.NoError(t, step(ctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(`tr[data-key="list emails sender"]`)),
		chromedp.KeyEvent("\t")))
	focused, err := run(ctx, chromedp.Evaluate[string](`document.activeElement.textContent`))
	require.NoError(t, err)
	require.Equal(t, "Skip to content", focused)
	require.NoError(t, step(ctx, chromedp.Focus(chromedp.CSS(`tr[data-key="list emails sender"] td:nth-child(2) a`)), chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS(`.tabs`))))
	loc, err := run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.Contains(t, loc, "/group?")

	// Read-only: no action is offered, and one forced through is refused.
	ro := serveWeb(t, redisURL, "--prefix", prefix, "--backend", "list", "--read-only")
	require.NoError(t, step(ctx, chromedp.Navigate(ro+"group?b=list&t=emails&g=sender"), chromedp.WaitVisible(chromedp.CSS(`#read-only`))))
	forms, err := run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('form[method="post"]').length`))
	require.NoError(t, err)
	require.Zero(t, forms)
	require.NoError(t, step(ctx, chromedp.Evaluate[chromedp.Void](`(() => {
		const f = document.createElement("form"); f.method = "post"; f.action = "pause";
		for (const [k, v] of [["b", "list"], ["t", "emails"], ["g", "sender"]]) {
			const i = document.createElement("input"); i.type = "hidden"; i.name = k; i.value = v; f.appendChild(i);
		}
		document.body.appendChild(f); f.submit(); return true })()`), chromedp.WaitVisible(chromedp.CSS(`#error`))))
	require.Contains(t, browsertest.Text(t, ctx, `#error`), "read-only")
	require.False(t, env.Stats("emails", "sender").Paused, "the refused action changed nothing")
	shot(ctx, "read-only.png")
}
