package web_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/mediajobs/mediajobs/contracts"
	"github.com/mediajobs/mediajobs/web"
	"github.com/mediajobs/mediajobs/web/browsertest"
)

func TestDocsHandler(t *testing.T) {
	t.Parallel()
	doc := []byte(`{"openapi":"3.1.0","info":{"title":"t","version":"1"}}`)
	h := web.Docs(doc)
	tests := []struct {
		method, path string
		want         int
		wantType     string
		wantBody     string
	}{
		{method: "GET", path: "/", want: http.StatusOK, wantType: "text/html", wantBody: `<script src="docs.js">`},
		{method: "GET", path: "/docs.js", want: http.StatusOK, wantType: "text/javascript", wantBody: "Redoc.init('openapi.json'"},
		{method: "GET", path: "/docs.css", want: http.StatusOK, wantType: "text/css"},
		{method: "GET", path: "/redoc.standalone.js", want: http.StatusOK, wantType: "text/javascript", wantBody: "redoc.standalone.js.LICENSE.txt"},
		{method: "GET", path: "/redoc.standalone.js.LICENSE.txt", want: http.StatusOK, wantType: "text/plain", wantBody: "ReDoc"},
		{method: "GET", path: "/redoc.LICENSE", want: http.StatusOK, wantType: "text/plain", wantBody: "MIT"},
		{method: "GET", path: "/openapi.json", want: http.StatusOK, wantType: "application/json", wantBody: string(doc)},
		{method: "HEAD", path: "/", want: http.StatusOK, wantType: "text/html"},
		{method: "GET", path: "/index.html", want: http.StatusNotFound},
		{method: "GET", path: "/redoc.version", want: http.StatusNotFound},
		{method: "GET", path: "/nope.js", want: http.StatusNotFound},
		{method: "POST", path: "/", want: http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			if rec.Code != tt.want {
				t.Fatalf("status %d, want %d", rec.Code, tt.want)
			}
			if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, tt.wantType) {
				t.Errorf("Content-Type %q, want %q", ct, tt.wantType)
			}
			if !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Errorf("body lacks %q", tt.wantBody)
			}
			csp := rec.Header().Get("Content-Security-Policy")
			if !strings.Contains(csp, "script-src 'self';") || strings.Contains(csp, "unsafe-eval") {
				t.Errorf("Content-Security-Policy %q: want scripts from the page's origin only", csp)
			}
		})
	}

	// Redoc's sidebar logo, which it would load from Redocly's CDN, is taken out of the bundle.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/redoc.standalone.js", nil))
	if strings.Contains(rec.Body.String(), "cdn.redoc.ly") {
		t.Error("the served Redoc bundle still loads its logo from cdn.redoc.ly")
	}

	// A reload of the megabyte of Redoc is a 304.
	req := httptest.NewRequest("GET", "/redoc.standalone.js", nil)
	req.Header.Set("If-None-Match", rec.Header().Get("ETag"))
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified {
		t.Errorf("revalidation: status %d, want 304", rec.Code)
	}
}

// TestRedocBundle checks the vendored bundle against the version and hash recorded in
// docs/redoc.version by `make redoc` when it took the file from the npm package: an edited,
// truncated or silently replaced bundle fails here.
func TestRedocBundle(t *testing.T) {
	t.Parallel()
	pinned := checkVendored(t, "docs/redoc.version", "docs/redoc.standalone.js", "redoc")
	notices, err := os.ReadFile("docs/redoc.standalone.js.LICENSE.txt")
	if err != nil {
		t.Fatal(err)
	}
	if want := `Version: "` + pinned["version"] + `"`; !strings.Contains(string(notices), want) {
		t.Errorf("the bundle's licence notices do not say %s: the files come from different versions", want)
	}
}

// TestBrowserDocs renders the reference of the real OpenAPI document in headless Chromium,
// under the handler's Content-Security-Policy, and finds an operation's heading on the page.
func TestBrowserDocs(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.Handle("/docs/", http.StripPrefix("/docs", web.Docs(contracts.OpenAPIJSON())))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	// 1280 px: the width at which Redoc's middle panel used to break error codes mid-word.
	ctx := browsertest.Open(t, "the reference", chromedp.WindowSize(1280, 900))
	violations := browsertest.WatchCSP(t, ctx)
	// Script errors (a CSP refusal among them) are reported with the failure.
	var (
		mu         sync.Mutex
		exceptions []string
	)
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			mu.Lock()
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			exceptions = append(exceptions, msg)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/docs")); err != nil {
		t.Fatalf("open /docs: %v", err)
	}
	waitCtx, cancelWait := context.WithTimeout(ctx, time.Minute)
	defer cancelWait()
	// Redoc renders each operation's summary as an h2 in the middle panel.
	heading := `[...document.querySelectorAll('h2')].some((h) => h.textContent.trim() === 'Submit a job')`
	if _, err := chromedp.Run(waitCtx, chromedp.Poll[bool](heading, chromedp.WithPollingTimeout(50*time.Second))); err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText.slice(0, 2000)`))
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("no 'Submit a job' heading on /docs: %v\nexceptions %q\npage %s", err, exceptions, body)
	}
	title, err := chromedp.Run(waitCtx, chromedp.Evaluate[string](`document.title`))
	if err != nil || title != "mediajobs API reference" {
		t.Errorf("title %q, %v", title, err)
	}
	location, err := chromedp.Run(waitCtx, chromedp.Evaluate[string](`location.pathname`))
	if err != nil || location != "/docs/" {
		t.Errorf("/docs ended at %q, %v; want the redirect to /docs/", location, err)
	}
	// The document's own words reach the page: the submit gate's description.
	text, err := chromedp.Run(waitCtx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil || !strings.Contains(text, "Runs the submit gate") {
		t.Errorf("the page does not show the operation's description (%v)", err)
	}
	// Each code in the error-code table renders on one line: an inline element broken across
	// lines has a box per line.
	broken, err := chromedp.Run(waitCtx, chromedp.Evaluate[[]string](errorCodesOnOneLine))
	switch {
	case err != nil:
		t.Errorf("measure the error codes: %v", err)
	case len(broken) > 0:
		t.Errorf("at 1280 px these error codes break across lines: %q", broken)
	}
	if v := violations(); len(v) > 0 {
		t.Errorf("the reference broke its Content-Security-Policy: %q", v)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(exceptions) > 0 {
		t.Errorf("the page threw: %q", exceptions)
	}
}

// errorCodesOnOneLine finds the error-code table of the rendered reference (its first column is
// headed "code") and answers the codes of its first column that take more than one line (each with its line
// count), or a note when the table is not there or holds too few codes to be that table.
const errorCodesOnOneLine = `(() => {
	const table = [...document.querySelectorAll('table')].find((t) => t.querySelector('th')?.textContent.trim() === 'code');
	if (!table) return ['no error-code table (a table whose first heading is "code")'];
	const codes = [...table.querySelectorAll('tbody td:first-child code')];
	if (codes.length < 10) return ['only ' + codes.length + ' codes in the error-code table'];
	return codes.filter((c) => c.getClientRects().length !== 1)
		.map((c) => c.textContent + ' (' + c.getClientRects().length + ' lines)');
})()`

// checkVendored reads a pin file written by a Makefile vendoring target (`version`,
// `integrity` and `sha256` lines) and checks the vendored file against its sha256: an edited,
// truncated or silently replaced bundle fails. It returns the pins.
func checkVendored(t *testing.T, pinFile, bundle, target string) map[string]string {
	t.Helper()
	f, err := os.Open(pinFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pinned := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, _ := strings.Cut(line, " ")
		pinned[k] = strings.TrimSpace(v)
	}
	if pinned["version"] == "" || !strings.HasPrefix(pinned["integrity"], "sha512-") || len(pinned["sha256"]) != 64 {
		t.Fatalf("%s pins %v: want version, integrity and sha256", pinFile, pinned)
	}
	b, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != pinned["sha256"] {
		t.Fatalf("%s has sha256 %s, not the %s of version %s: run `make %s`", bundle, got, pinned["sha256"], pinned["version"], target)
	}
	return pinned
}
