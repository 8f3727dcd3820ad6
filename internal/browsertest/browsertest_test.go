package browsertest

import (
	"context"
	"encoding/json"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/internal/redistest"
)

// Main checks that the browsers' goroutines end with their tests (it starts no Redis here).
func TestMain(m *testing.M) { redistest.Main(m) }

// serve serves one HTML page at / for the test.
func serve(t *testing.T, page string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

const clickPage = `<!doctype html>
<html><head><meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,"></head>
<body>
<button id="go">Go</button>
<p id="out">waiting</p>
<div style="height: 2000px; background: linear-gradient(#fff, #36c)"></div>
<script>
document.getElementById("go").addEventListener("click", () => {
	const out = document.getElementById("out");
	out.textContent = "clicked";
	out.className = "done";
});
</script>
</body></html>`

// A click runs the page's script; a screenshot holds the whole page; Phone narrows the
// viewport to a phone's.
func TestClickAndScreenshot(t *testing.T) {
	t.Parallel()
	url := serve(t, clickPage)
	ctx := New(t)

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url)))
	require.Equal(t, "waiting", Text(t, ctx, "#out"))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("#go")),
		chromedp.WaitReady(chromedp.CSS("#out.done")),
	))
	require.Equal(t, "clicked", Text(t, ctx, "#out"))

	path := filepath.Join(t.TempDir(), "shots", "desktop.png") // shots/ does not exist yet
	Screenshot(t, ctx, path)
	w, h := pngSize(t, path)
	require.Equal(t, Width, w)
	require.Greater(t, h, 2000, "the screenshot stops at the window, not at the page's bottom")

	Phone(t, ctx)
	width, err := chromedp.Run(ctx, chromedp.Evaluate[int]("window.innerWidth"))
	require.NoError(t, err)
	require.Equal(t, PhoneWidth, width)
	path = filepath.Join(t.TempDir(), "phone.png")
	Screenshot(t, ctx, path)
	w, _ = pngSize(t, path)
	require.Equal(t, PhoneWidth, w)
}

// pngSize decodes the PNG at path and returns its size.
func pngSize(t *testing.T, path string) (int, int) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	b := img.Bounds()
	require.Positive(t, b.Dx())
	require.Positive(t, b.Dy())
	return b.Dx(), b.Dy()
}

const brokenPage = `<!doctype html>
<html><head><link rel="icon" href="data:,"></head><body>
<p>broken</p>
<script>
console.log("a log line is no error");
console.error("bad state:", 42);
null.boom();
</script>
</body></html>`

// A page's uncaught exception and its console.error reach the collector, which would fail
// the test at its end; TakePageErrors takes them so that this test passes.
func TestPageErrorsCollected(t *testing.T) {
	t.Parallel()
	url := serve(t, brokenPage)
	ctx := New(t)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url)))

	var got []string
	require.Eventually(t, func() bool {
		got = append(got, TakePageErrors(ctx)...)
		return len(got) >= 2
	}, 10*time.Second, 20*time.Millisecond, "page errors: %q", got)
	require.Len(t, got, 2)
	require.Contains(t, got[0], "console.error: bad state: 42 ("+url+"/:6:")
	require.Contains(t, got[1], "Uncaught TypeError: Cannot read properties of null")
	require.Contains(t, got[1], url+"/:7:")
}

// pageError keeps exceptions and console.error calls, and nothing else.
func TestPageError(t *testing.T) {
	t.Parallel()
	str := func(s string) *runtime.RemoteObject {
		v, err := json.Marshal(s)
		require.NoError(t, err)
		return &runtime.RemoteObject{Type: runtime.RemoteObjectTypeString, Value: v}
	}
	num := &runtime.RemoteObject{Type: runtime.RemoteObjectTypeNumber, Value: []byte("42"), Description: "42"}
	frame := &runtime.StackTrace{CallFrames: []*runtime.CallFrame{{URL: "http://x/app.js", LineNumber: 9, ColumnNumber: 2}}}

	for _, tc := range []struct {
		name string
		ev   any
		want string // "" when the event is no error
	}{
		{"exception", &runtime.EventExceptionThrown{ExceptionDetails: &runtime.ExceptionDetails{
			Text: "Uncaught", URL: "http://x/app.js", LineNumber: 3, ColumnNumber: 7,
			Exception: &runtime.RemoteObject{Type: runtime.RemoteObjectTypeObject, Subtype: runtime.RemoteObjectSubtypeError,
				Description: "Error: boom\n    at http://x/app.js:4:8"},
		}}, "Uncaught Error: boom (http://x/app.js:4:8)"},
		{"rejection of a string", &runtime.EventExceptionThrown{ExceptionDetails: &runtime.ExceptionDetails{
			Text: "Uncaught (in promise)", URL: "http://x/", Exception: str("nope"),
		}}, "Uncaught (in promise) nope (http://x/:1:1)"},
		{"console.error", &runtime.EventConsoleAPICalled{Type: runtime.ConsoleAPICalledTypeError,
			Args: []*runtime.RemoteObject{str("bad state:"), num}, StackTrace: frame,
		}, "console.error: bad state: 42 (http://x/app.js:10:3)"},
		{"console.warn", &runtime.EventConsoleAPICalled{Type: runtime.ConsoleAPICalledTypeWarning, Args: []*runtime.RemoteObject{str("meh")}}, ""},
		{"console.log", &runtime.EventConsoleAPICalled{Type: runtime.ConsoleAPICalledTypeLog, Args: []*runtime.RemoteObject{str("hi")}}, ""},
		{"other event", &runtime.EventExecutionContextsCleared{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := pageError(tc.ev)
			require.Equal(t, tc.want != "", ok)
			require.Equal(t, tc.want, got)
		})
	}

	var errs pageErrors
	errs.listen(&runtime.EventConsoleAPICalled{Type: runtime.ConsoleAPICalledTypeLog})
	errs.listen(&runtime.EventConsoleAPICalled{Type: runtime.ConsoleAPICalledTypeError, Args: []*runtime.RemoteObject{str("x")}})
	require.Equal(t, []string{"console.error: x"}, errs.take())
	require.Empty(t, errs.take(), "take forgets what it returned")
}

// RELQ_TEST_CHROMIUM overrides the browser; one that is not there is an error that names
// the variable (New turns it into a failed test, never a skip).
func TestChromiumPath(t *testing.T) {
	t.Setenv(EnvChromium, filepath.Join(t.TempDir(), "no-chromium"))
	_, err := chromiumPath()
	require.ErrorContains(t, err, EnvChromium)

	ctx := context.Background()
	require.Panics(t, func() { TakePageErrors(ctx) })
}

// names matches a directory as a whole path element, in NUL-separated arguments or in one
// rewritten command line.
func TestNames(t *testing.T) {
	t.Parallel()
	dir := "/tmp/T123/001"
	for _, tc := range []struct {
		cmdline string
		want    bool
	}{
		{"chromium\x00--user-data-dir=/tmp/T123/001/profile\x00about:blank\x00", true},
		{"chromium --type=renderer --user-data-dir=/tmp/T123/001/profile --lang=en", true},
		{"crashpad --database=/tmp/T123/001/home/.config/chromium/Crash Reports", true},
		{"x\x00/tmp/T123/001", true},
		{"chromium --user-data-dir=/tmp/T123/0012/profile", false},
		{"chromium --user-data-dir=/tmp/T123/0012/profile /tmp/T123/001/x", true},
		{"chromium --user-data-dir=/tmp/T123/002/profile", false},
	} {
		require.Equal(t, tc.want, names([]byte(tc.cmdline), dir), "%q", tc.cmdline)
	}
}

// killLeftovers gives the processes that name the directory time to exit, then kills those
// left and reports them.
func TestKillLeftovers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.Empty(t, killLeftovers(dir, 2*time.Second))

	// A shell waiting in its read builtin names dir and forks no child (a child would name
	// it too until it execs), until its input ends.
	start := func() (pid int, input io.Closer, waited <-chan error) {
		cmd := exec.Command("sh", "-c", "read x; exit 0", "sh", "--user-data-dir="+filepath.Join(dir, "profile"))
		w, err := cmd.StdinPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() { _ = w.Close() })
		return cmd.Process.Pid, w, done
	}
	quick, quickInput, quickWaited := start()
	stuck, _, stuckWaited := start()

	require.ElementsMatch(t, []int{quick, stuck}, processesNaming(dir))
	time.AfterFunc(300*time.Millisecond, func() { _ = quickInput.Close() })
	began := time.Now()
	require.Equal(t, []int{stuck}, killLeftovers(dir, 2*time.Second))
	require.GreaterOrEqual(t, time.Since(began), 2*time.Second)
	require.NoError(t, <-quickWaited)
	require.ErrorContains(t, <-stuckWaited, "killed")
	require.Empty(t, processesNaming(dir))
}
