package browsertest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// Screenshot writes a PNG of the whole page of ctx (beyond the window, to the page's
// bottom) to path, creating its directory.
func Screenshot(t testing.TB, ctx context.Context, path string) {
	t.Helper()
	actx, cancel := context.WithTimeout(ctx, actionTimeout)
	defer cancel()
	png, err := chromedp.Run(actx, chromedp.FullScreenshot(100)) // quality 100 is PNG
	if err != nil {
		t.Fatalf("browsertest: screenshot: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatalf("browsertest: screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatalf("browsertest: screenshot: %v", err)
	}
}

// The viewport of Phone: an iPhone 12 to 15's CSS pixels.
const (
	PhoneWidth  = 390
	PhoneHeight = 844
)

// Phone makes the page of ctx lay out as on a phone held upright: a 390x844 viewport, with
// mobile emulation so the page's <meta name="viewport"> applies. chromedp.ResetViewport
// returns to the window's size.
func Phone(t testing.TB, ctx context.Context) {
	t.Helper()
	actx, cancel := context.WithTimeout(ctx, actionTimeout)
	defer cancel()
	if err := chromedp.Do(actx, chromedp.EmulateViewport(PhoneWidth, PhoneHeight, chromedp.EmulateMobile, chromedp.EmulatePortrait)); err != nil {
		t.Fatalf("browsertest: phone viewport: %v", err)
	}
}

// Text returns the visible text of the first element that matches the CSS selector sel,
// once one exists.
func Text(t testing.TB, ctx context.Context, sel string) string {
	t.Helper()
	actx, cancel := context.WithTimeout(ctx, actionTimeout)
	defer cancel()
	text, err := chromedp.Run(actx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("browsertest: text of %q: %v", sel, err)
	}
	return text
}
