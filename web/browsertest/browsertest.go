// Package browsertest opens Debian's headless Chromium for the tests that drive the web pages
// (the playground, /docs, the console) through chromedp, from this module and from integration.
package browsertest

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
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

// cspListener reports each securitypolicyviolation event of a document to the exposed func.
const cspListener = `document.addEventListener('securitypolicyviolation', (e) => {
	window.__reportCSPViolation?.(e.documentURI + ': ' + e.effectiveDirective + ' refused ' + (e.blockedURI || '(inline)') +
		(e.sourceFile ? ' from ' + e.sourceFile + ':' + e.lineNumber : ''));
}, true);`

// WatchCSP records every Content-Security-Policy violation of the pages tab loads from now on,
// in every document: the securitypolicyviolation events the documents fire, and the refusals
// Chromium writes to its log (which also come from workers). The func it returns gives the
// violations recorded so far.
func WatchCSP(t testing.TB, tab context.Context) func() []string {
	t.Helper()
	var (
		mu         sync.Mutex
		violations []string
	)
	add := func(v string) {
		mu.Lock()
		violations = append(violations, v)
		mu.Unlock()
	}
	messages := chromedp.Console(tab)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Source == "security" || strings.Contains(m.Text, "Content Security Policy") {
				add(string(m.Type) + ": " + m.Text)
			}
		}
	}()
	err := chromedp.Do(tab,
		chromedp.ExposeFunc("__reportCSPViolation", func(_ context.Context, v string) (chromedp.Void, error) {
			add(v)
			return chromedp.Void{}, nil
		}),
		chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
			_, err := cdp.Call(ctx, target, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspListener})
			return err
		}))
	if err != nil {
		t.Fatalf("watch for CSP violations: %v", err)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(violations)
	}
}
