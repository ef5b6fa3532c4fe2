package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mediajobs/mediajobs/contracts"
	"github.com/mediajobs/mediajobs/validator"
	"github.com/mediajobs/mediajobs/validator/validatortest"
	"github.com/mediajobs/mediajobs/web"
	"github.com/mediajobs/mediajobs/web/browsertest"
)

type corpusCase = validatortest.Case

func loadCorpus(t *testing.T) []corpusCase {
	t.Helper()
	cases, err := validatortest.Corpus()
	if err != nil {
		t.Fatalf("load corpus: %v", err)
	}
	return cases
}

func nativeJSON(t *testing.T, command string, opts validator.Options) string {
	t.Helper()
	b, err := json.Marshal(validator.Validate(command, opts))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type browserBundle struct {
	ctx context.Context // a chromedp context on the playground, loaded and ready
}

// setupBrowser serves the playground, opens it in a fresh headless Chromium and waits until the
// module is running.
func setupBrowser(t *testing.T) *browserBundle {
	t.Helper()
	wasm, err := validatortest.BuildWASM()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(web.Handler(wasm))
	t.Cleanup(srv.Close)

	ctx := browsertest.Open(t, "the playground")
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatalf("open the playground: %v", err)
	}
	waitCtx, cancelWait := context.WithTimeout(ctx, time.Minute)
	defer cancelWait()
	if _, err := chromedp.Run(waitCtx, chromedp.Evaluate[bool](`window.mediajobsReady`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatalf("the playground did not start validator.wasm: %v", err)
	}
	return &browserBundle{ctx: ctx}
}

// TestBrowserCorpusMatchesNative runs every corpus command through the page's
// window.mediajobsValidate and compares its answer with the native validator's, byte for byte.
func TestBrowserCorpusMatchesNative(t *testing.T) {
	t.Parallel()
	b := setupBrowser(t)
	cases := loadCorpus(t)

	requests := make([]string, len(cases))
	for i, c := range cases {
		req, err := json.Marshal(struct {
			Command string            `json:"command"`
			Options validator.Options `json:"options"`
		}{c.Command, c.Options})
		if err != nil {
			t.Fatal(err)
		}
		requests[i] = string(req)
	}
	arg, err := json.Marshal(requests)
	if err != nil {
		t.Fatal(err)
	}
	// One evaluation for the whole corpus: a round trip per command would dominate the test.
	script := `(async (requests) => {
		const answers = [];
		for (const r of requests) {
			try {
				answers.push({ ok: await window.mediajobsValidate(r) });
			} catch (e) {
				answers.push({ err: String(e) });
			}
		}
		return answers;
	})(` + string(arg) + `)`
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Minute)
	defer cancel()
	answers, err := chromedp.Run(ctx, chromedp.Evaluate[[]struct {
		OK  *string `json:"ok"`
		Err string  `json:"err"`
	}](script, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("validate the corpus in the page: %v", err)
	}
	if len(answers) != len(cases) {
		t.Fatalf("the page answered %d requests, want %d", len(answers), len(cases))
	}
	for i, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			a := answers[i]
			if a.OK == nil {
				t.Fatalf("mediajobsValidate(%q) threw: %s", c.Command, a.Err)
			}
			if want := nativeJSON(t, c.Command, c.Options); *a.OK != want {
				t.Errorf("mediajobsValidate(%q)\n browser %s\n native  %s", c.Command, *a.OK, want)
			}
		})
	}
}

// TestBrowserTyping types a command key by key and checks that the page shows the native answer
// for what is typed so far, before and after the command becomes complete.
func TestBrowserTyping(t *testing.T) {
	t.Parallel()
	b := setupBrowser(t)
	steps := []struct {
		keys    string
		command string // the input's whole value after keys
	}{
		{keys: "ffmpe", command: "ffmpe"},
		{keys: "g -i https://example.com/in.mp4 -c:v libx264 out.mp4", command: "ffmpeg -i https://example.com/in.mp4 -c:v libx264 out.mp4"},
	}
	for _, s := range steps {
		ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
		if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("command"), s.keys)); err != nil {
			cancel()
			t.Fatalf("type %q: %v", s.keys, err)
		}
		want := nativeJSON(t, s.command, validator.Options{})
		shown := `document.getElementById('raw').textContent === ` + strconv.Quote(want)
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](shown, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			got, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.getElementById('raw').textContent + ' / ' + document.getElementById('status').textContent`))
			cancel()
			t.Fatalf("after typing %q the page shows %q, want %s: %v", s.command, got, want, err)
		}

		var res validator.Result
		if err := json.Unmarshal([]byte(want), &res); err != nil {
			t.Fatal(err)
		}
		status, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('status').textContent`))
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		wantStatus := "invalid"
		if res.Valid {
			wantStatus = "valid"
		}
		if status != wantStatus {
			t.Errorf("after typing %q the status reads %q, want %q", s.command, status, wantStatus)
		}
		if res.Valid {
			args, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#args li')].map((li) => li.textContent)`))
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			if fmt.Sprint(args) != fmt.Sprint(res.Args) {
				t.Errorf("after typing %q the page lists args %q, want %q", s.command, args, res.Args)
			}
		}
		cancel()
	}

	// Bare names are listed as inputs to supply until the inputs field gives them.
	set := func(id, value string) string {
		return `(() => { const e = document.getElementById(` + strconv.Quote(id) + `); e.value = ` + strconv.Quote(value) +
			`; e.dispatchEvent(new Event('input')); return true; })()`
	}
	required := `[...document.querySelectorAll('#required li')].map((li) => li.textContent).join(' ')`
	for _, step := range []struct{ field, value, want string }{
		{"command", "ffmpeg -i in.mp4 -vf subtitles=s.srt out.mp4", "in.mp4 s.srt"},
		{"inputs", `{"in.mp4": "https://example.com/in.mp4"}`, "s.srt"},
	} {
		ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](set(step.field, step.value))); err != nil {
			cancel()
			t.Fatal(err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](required+` === `+strconv.Quote(step.want), chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			got, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](required))
			t.Errorf("after setting %s to %s the page lists required inputs %q, want %q", step.field, step.value, got, step.want)
		}
		cancel()
	}
}

// TestBrowserPagesKeepTheirCSP opens every page this package serves, mounted as the binary
// mounts them (the console at the root, the playground, the reference), each until it is ready,
// and fails on any Content-Security-Policy violation: a refused load is a broken feature the page
// hides. The console's pages behind its sign-in are checked by the integration tests, against
// the real API.
func TestBrowserPagesKeepTheirCSP(t *testing.T) {
	t.Parallel()
	wasm, err := validatortest.BuildWASM()
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/playground/", http.StripPrefix("/playground", web.Handler(wasm)))
	mux.Handle("/docs/", http.StripPrefix("/docs", web.Docs(contracts.OpenAPIJSON())))
	console := web.Console(wasm)
	mux.Handle("GET /{$}", console)
	mux.Handle(web.ConsolePrefix, console)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	ctx := browsertest.Open(t, "the pages' CSP", chromedp.WindowSize(1280, 900))
	violations := browsertest.WatchCSP(t, ctx)
	pages := []struct{ path, ready string }{
		// Without an API behind it the console stays on its sign-in page.
		{"/", `document.querySelector('#signin input[name=apiKey]') !== null`},
		// The playground is ready when the module answered for the empty command.
		{"/playground/", `!document.getElementById('status').classList.contains('loading')`},
		{"/docs/", `[...document.querySelectorAll('h2')].some((h) => h.textContent.trim() === 'Submit a job')`},
	}
	for _, p := range pages {
		pctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := chromedp.Do(pctx, chromedp.Navigate(srv.URL+p.path))
		if err == nil {
			_, err = chromedp.Run(pctx, chromedp.Poll[bool](p.ready, chromedp.WithPollingTimeout(50*time.Second)))
		}
		cancel()
		if err != nil {
			t.Fatalf("open %s: %v", p.path, err)
		}
	}
	if v := violations(); len(v) > 0 {
		t.Errorf("the pages broke their Content-Security-Policy:\n%s", strings.Join(v, "\n"))
	}
}
