// Package browsertest starts a headless Chromium for tests that drive web pages through
// chromedp.
//
// The dashboard's behaviour is partly JavaScript in the page, which only a browser runs: an
// HTTP test sees the HTML, not whether a click updates the page, whether a script throws, or
// how a narrow screen lays it out. New gives each test a private browser (Debian's chromium,
// which `make test` installs) with a fresh profile in the test's temporary directory, and
// stops it when the test ends. A missing chromium fails the test instead of skipping it, as a
// missing redis-server does in internal/redistest: a skipped test would count as a pass.
//
// An uncaught exception or a console.error call in the tab of New's context fails the test
// when it ends, so a broken script on a page is an error even when the test's own checks
// pass. A test that expects such errors takes them with TakePageErrors. (Another tab, made
// with chromedp.NewContext from New's context, is not watched.)
package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// EnvChromium names the environment variable that overrides the browser binary.
const EnvChromium = "RELQ_TEST_CHROMIUM"

// The window of a new browser: a laptop screen. Phone switches a page to a phone's width.
const (
	Width  = 1280
	Height = 900
)

const (
	// startTimeout bounds the start of the browser and its first tab: 0.35 to 0.7 s on 2
	// idle cores, but the whole suite runs beside it under -race.
	startTimeout = time.Minute
	// closeTimeout bounds a graceful close, after which the browser is killed.
	closeTimeout = 15 * time.Second
	// actionTimeout bounds each helper of this package, so that a selector that never
	// matches fails the test rather than hanging it until go test's own timeout.
	actionTimeout = 30 * time.Second
)

// chromiumPath returns the browser binary: $RELQ_TEST_CHROMIUM, or chromium on PATH, or
// /usr/bin/chromium (where Debian's package puts it, should PATH lack /usr/bin).
func chromiumPath() (string, error) {
	if p := os.Getenv(EnvChromium); p != "" {
		path, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvChromium, p, err)
		}
		return path, nil
	}
	for _, p := range []string{"chromium", "/usr/bin/chromium"} {
		if path, err := exec.LookPath(p); err == nil {
			return path, nil
		}
	}
	return "", errors.New("chromium not found on PATH nor at /usr/bin/chromium; run `make test`, which installs it")
}

// New starts a headless Chromium with one blank tab and returns the chromedp context of
// that tab: pass it to chromedp.Do and chromedp.Run. The browser runs until the test ends;
// then it is closed, no process of it is left, and the test fails if a page reported an
// error that TakePageErrors did not take.
func New(t testing.TB) context.Context {
	t.Helper()
	path, err := chromiumPath()
	if err != nil {
		t.Fatalf("browsertest: %v", err)
	}
	// Everything the browser writes stays in dir: the profile, and through HOME the crash
	// reporter's database (Debian's chromium starts crashpad, whatever its flags say).
	// t.TempDir is called before the cleanup below is registered, so dir is removed after
	// the browser has exited.
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatalf("browsertest: %v", err)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], // headless, no-first-run, ...
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // the tests run as root, where Chromium's sandbox refuses to start
		chromedp.DisableGPU,
		chromedp.WindowSize(Width, Height),
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.Env("HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache")),
		// Chromium's own traffic (component updates, sync, field trials, QUIC) would go to a
		// network that refuses it, making each start slow and noisy. The defaults above set
		// some of these already; they are repeated here because the tests rely on them.
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	var output lockedBuffer
	opts = append(opts, chromedp.CombinedOutput(&output))

	// life is the browser's lifetime: the watchdog below ends it when the start hangs.
	life, stop := context.WithCancel(context.Background())
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(life, opts...)
	errs := &pageErrors{}
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithListener(errs.listen))
	ctx = context.WithValue(ctx, pageErrorsKey{}, errs)
	t.Cleanup(func() {
		// Close gracefully, so that Chromium ends its own processes; cancel then kills it
		// if it did not exit in time, and waits until it is reaped and chromedp's
		// goroutines have ended. Without a browser (its start failed) there is nothing to
		// close, and chromedp.Cancel must not be called: cancel would then wait forever.
		if chromedp.FromContext(ctx).Browser != nil {
			cctx, ccancel := context.WithTimeout(ctx, closeTimeout)
			if err := chromedp.Cancel(cctx); err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("browsertest: closing chromium: %v", err)
			}
			ccancel()
		}
		cancel()
		cancelAlloc()
		stop()
		if pids := killLeftovers(dir, leftoverGrace); len(pids) > 0 {
			t.Errorf("browsertest: processes of chromium outlived it and were killed: %v", pids)
		}
		if msgs := errs.take(); len(msgs) > 0 {
			t.Errorf("browsertest: the pages reported %d error(s):\n%s", len(msgs), strings.Join(msgs, "\n"))
		}
	})

	began := time.Now()
	watchdog := time.AfterFunc(startTimeout, stop)
	err = chromedp.Do(ctx) // starts the browser and opens its first tab
	if !watchdog.Stop() {
		err = fmt.Errorf("no answer within %v: %w", startTimeout, err)
	}
	if err != nil {
		if out := output.String(); !strings.Contains(err.Error(), out) {
			err = fmt.Errorf("%w\nits output:\n%s", err, out)
		}
		t.Fatalf("browsertest: starting %s: %v", path, err)
	}
	t.Logf("browsertest: chromium started in %v", time.Since(began).Round(time.Millisecond))
	return ctx
}

// TakePageErrors returns the errors that the pages of ctx's browser reported so far and
// forgets them, so that they no longer fail the test: a test that expects an error checks
// it this way.
func TakePageErrors(ctx context.Context) []string {
	errs, _ := ctx.Value(pageErrorsKey{}).(*pageErrors)
	if errs == nil {
		panic("browsertest: TakePageErrors needs a context from New")
	}
	return errs.take()
}

type pageErrorsKey struct{}

// pageErrors collects the uncaught exceptions and console.error calls of a tab.
type pageErrors struct {
	mu   sync.Mutex
	msgs []string
}

// listen is called by chromedp for each event of the tab, on the goroutine that reads the
// browser's messages, so it only appends under a lock.
func (e *pageErrors) listen(ev any) {
	msg, ok := pageError(ev)
	if !ok {
		return
	}
	e.mu.Lock()
	e.msgs = append(e.msgs, msg)
	e.mu.Unlock()
}

func (e *pageErrors) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	msgs := e.msgs
	e.msgs = nil
	return msgs
}

// pageError returns the message of an event that reports an error in a page: an exception
// that no script caught (or a rejected promise nobody handled), or a console.error call.
func pageError(ev any) (string, bool) {
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		if d == nil {
			return "uncaught exception", true
		}
		text := d.Text // "Uncaught" or "Uncaught (in promise)"
		if d.Exception != nil {
			// An Error's description is its stack: the first line is its name and message.
			first, _, _ := strings.Cut(describe(d.Exception), "\n")
			text += " " + first
		}
		return fmt.Sprintf("%s (%s:%d:%d)", text, d.URL, d.LineNumber+1, d.ColumnNumber+1), true
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError {
			return "", false
		}
		args := make([]string, len(ev.Args))
		for i, a := range ev.Args {
			args[i] = describe(a)
		}
		msg := "console.error: " + strings.Join(args, " ")
		if st := ev.StackTrace; st != nil && len(st.CallFrames) > 0 {
			f := st.CallFrames[0]
			msg += fmt.Sprintf(" (%s:%d:%d)", f.URL, f.LineNumber+1, f.ColumnNumber+1)
		}
		return msg, true
	}
	return "", false
}

// describe renders a JavaScript value as the console shows it, roughly: a string as it is,
// a primitive as its JSON, an object as its description.
func describe(o *runtime.RemoteObject) string {
	switch {
	case o == nil:
		return "null"
	case o.Type == runtime.RemoteObjectTypeString:
		var s string
		if err := json.Unmarshal(o.Value, &s); err == nil {
			return s
		}
		return string(o.Value)
	case o.UnserializableValue != "":
		return string(o.UnserializableValue)
	case o.Description != "":
		return o.Description
	case len(o.Value) > 0:
		return string(o.Value)
	}
	return string(o.Type)
}

// lockedBuffer keeps the browser's output, written by chromedp's goroutine, to show it
// when the start fails.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
