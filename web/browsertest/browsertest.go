// Package browsertest opens Debian's headless Chromium for the tests that drive the web pages
// (the playground, /docs, the console) through chromedp, from this module and from integration.
package browsertest

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

// Chromium is Debian's chromium, which `make deps` installs.
const Chromium = "/usr/bin/chromium"

// Open starts a fresh headless Chromium with extra options and returns a chromedp context on
// its first tab, already started; both end when t does. Where Chromium is not installed, t
// is skipped, saying that what is not tested in a browser.
func Open(t testing.TB, what string, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	if _, err := os.Stat(Chromium); errors.Is(err, os.ErrNotExist) {
		testenv.Missing(t, Chromium+" (scripts/deps.sh installs Debian's chromium); "+what+" is not tested in a browser", err)
	}
	opts := append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Chromium),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		// The machine has no network: keep Chromium from trying to reach Google's services.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	}, extra...)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	tab, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	// The first action starts the browser, under the tab's own context: a timeout's would end
	// the browser with it.
	if err := chromedp.Do(tab, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return tab
}
