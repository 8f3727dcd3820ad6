package web_test

// The overview's script redraws the problems column at every poll: in a real browser, it
// keeps what the page showed of what Redis lost, and turns it red when it happens while the
// page is open.

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/browsertest"
	"github.com/relq/relq/internal/redistest"
)

func TestDashboardShowsWhatRedisLostInABrowser(t *testing.T) {
	srv := redistest.Shared(t)
	c, prefix := srv.Client(t), redistest.Prefix(t)
	b := backendOf(t, c, "list", prefix)
	require.EqualValues(t, 2, dropFrom(t, smallBacklog(t, c, prefix, "list"), "signups", 5))
	require.NoError(t, b.EnsureGroup(ctxT(t), &backend.EnsureGroupParams{Topic: "invoices", Group: "ledger"}))
	forget(t, c, prefix, "invoices")
	first := registerAgain(t, b, "invoices", "ledger", 0)

	base := serveWeb(t, srv.URL(), "--prefix", prefix, "--backend", "list")
	ctx := browsertest.New(t)
	ledger, signups := `tr[data-key="list invoices ledger"]`, `tr[data-key="list signups "]`
	require.NoError(t, step(ctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(ledger)),
		chromedp.WaitVisible(chromedp.CSS(`#live.on`))))
	// A poll has redrawn the cells by now: what happened before the page was opened is amber.
	require.Regexp(t, `^re-registered 1× · \d[\d hms]*? ago$`, browsertest.Text(t, ctx, ledger+` td.problems .tag.warn`))
	require.Equal(t, "backlog dropped 2", browsertest.Text(t, ctx, signups+` td.problems .tag.warn`))
	title, err := run(ctx, chromedp.Evaluate[string](`document.querySelector('`+ledger+` td.problems .tag').title`))
	require.NoError(t, err)
	require.Contains(t, title, "registered it again: 1 time, the latest at "+utc(first.At)+". Messages it held then may be lost.")

	// The group's keys vanish again while the page is open: its subscription registers it
	// again, and the tag turns red.
	forget(t, c, prefix, "invoices")
	registerAgain(t, b, "invoices", "ledger", first.Times)
	require.NoError(t, step(ctx, chromedp.Poll[chromedp.Void](
		`/^re-registered 2× · /.test(document.querySelector('`+ledger+` td.problems .tag.bad')?.textContent || "")`,
		chromedp.WithPollingTimeout(30*time.Second))))
	require.NoError(t, step(ctx, chromedp.Poll[chromedp.Void](`document.querySelector('`+ledger+`').classList.contains("problem")`,
		chromedp.WithPollingTimeout(10*time.Second))))

	require.NoError(t, step(ctx, chromedp.Navigate(base+"group?b=list&t=invoices&g=ledger"), chromedp.WaitVisible(chromedp.CSS(`#reregistered`))))
	require.Equal(t, "2", browsertest.Text(t, ctx, `#n-reregistered`))
	require.Contains(t, browsertest.Text(t, ctx, `#reregistered`), "registered it again: 2 times, the latest at ")
	require.NoError(t, step(ctx, chromedp.Navigate(base+"topic?b=list&t=signups"), chromedp.WaitVisible(chromedp.CSS(`#dropped`))))
	require.Contains(t, browsertest.Text(t, ctx, `#dropped`), "The backlog dropped 2 messages")
}
