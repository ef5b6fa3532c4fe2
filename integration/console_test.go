package integration

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mediajobs/mediajobs/validator/validatortest"
	"github.com/mediajobs/mediajobs/web/browsertest"
)

// consoleBundle is one server, one account and one headless Chromium on the console.
type consoleBundle struct {
	s     *server
	c     *client // the account's API, for setting up and checking what the page shows
	key   string
	tab   context.Context
	recv  *webhookReceiver
	mu    sync.Mutex
	error []string // console errors and uncaught exceptions of the page
	// csp gives the Content-Security-Policy violations of every page the tab loaded.
	csp func() []string
}

func setupConsole(t *testing.T) *consoleBundle {
	t.Helper()
	wasm, err := validatortest.BuildWASM()
	if err != nil {
		t.Fatal(err)
	}
	wasmFile := filepath.Join(t.TempDir(), "validator.wasm")
	if err := os.WriteFile(wasmFile, wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	recv := newWebhookReceiver(t)
	s := startServer(t, serverOpts{Backend: sqliteBackend, Unthrottled: true, Env: map[string]string{
		"MEDIAJOBS_VALIDATOR_WASM":         wasmFile,
		"MEDIAJOBS_ALLOW_PRIVATE_NETWORKS": "127.0.0.0/8", "SSL_CERT_FILE": recv.certFile, "MEDIAJOBS_SPLIT_MIN_SECONDS": "4"}})
	acct := createAccount(t, s, "pro")
	b := &consoleBundle{s: s, c: newClient(t, s, acct.APIKey), key: acct.APIKey, recv: recv}

	tab := browsertest.Open(t, "the console", chromedp.WindowSize(1280, 900),
		chromedp.Flag("autoplay-policy", "no-user-gesture-required"))
	b.csp = browsertest.WatchCSP(t, tab)
	messages := chromedp.Console(tab)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			// The browser logs the API's refusals (401 while signed out, a revoked key) as
			// failed loads; those are the tests' own doing, not the page's errors.
			if m.Type != chromedp.ConsoleException && (m.Type != chromedp.ConsoleError || m.Source == "network") {
				continue
			}
			b.mu.Lock()
			b.error = append(b.error, m.String())
			b.mu.Unlock()
		}
	}()
	if err := chromedp.Do(tab, chromedp.Navigate(s.Base+"/")); err != nil {
		t.Fatalf("open the console: %v", err)
	}
	b.tab = tab
	return b
}

// run runs actions with a time limit, failing the test with what step names.
func (b *consoleBundle) run(t *testing.T, step string, limit time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.tab, limit)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail(t, step, err)
	}
}

func (b *consoleBundle) fail(t *testing.T, step string, err error) {
	t.Helper()
	b.screenshot(t, "failed")
	text, _ := chromedp.Run(b.tab, chromedp.TextContent(chromedp.CSS("main")))
	t.Fatalf("%s: %v\npage: %s", step, err, tail(text, 2000))
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, b *consoleBundle, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.tab, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.fail(t, "evaluate "+expr, err)
	}
	return v
}

// text is the text content of the first element of a CSS selector.
func text(t *testing.T, b *consoleBundle, sel string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.tab, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
	if err != nil {
		b.fail(t, "text of "+sel, err)
	}
	return v
}

// wait polls a JavaScript expression in the page until it is truthy.
func wait(expr string, limit time.Duration) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[bool](expr, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(limit))(ctx, t)
		return err
	})
}

// js runs a JavaScript statement in the page, as a step.
func js(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[any](expr)(ctx, t)
		return err
	})
}

// screenshot saves the page as <name>.png in the test's artifact directory (kept with
// `go test -artifacts -outputdir DIR`, under DIR/_artifacts; otherwise removed after the test).
func (b *consoleBundle) screenshot(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.tab, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100 is PNG; less is JPEG
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	path := filepath.Join(t.ArtifactDir(), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// noErrors fails the test on any console error or uncaught exception the page had so far, and on
// any Content-Security-Policy violation of any page the tab has loaded.
func (b *consoleBundle) noErrors(t *testing.T) {
	t.Helper()
	if v := b.csp(); len(v) > 0 {
		t.Errorf("the pages broke their Content-Security-Policy:\n%s", strings.Join(v, "\n"))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.error) > 0 {
		t.Errorf("the page logged errors:\n%s", strings.Join(b.error, "\n"))
		b.error = nil
	}
}

func (b *consoleBundle) goTo(t *testing.T, hash, ready string) {
	t.Helper()
	// A change of the fragment is no page load: set it, or say it changed when it is the same.
	b.run(t, "open "+hash, 30*time.Second, js(fmt.Sprintf(`location.hash === %[1]q ? window.dispatchEvent(new HashChangeEvent('hashchange')) : (location.hash = %[1]q)`, hash)),
		chromedp.WaitVisible(chromedp.CSS(ready)))
}

func (b *consoleBundle) signIn(t *testing.T, key string) {
	t.Helper()
	b.run(t, "sign in", 30*time.Second,
		chromedp.WaitVisible(chromedp.CSS(`#signin input[name=apiKey]`)),
		// Signed out, the navigation is hidden.
		chromedp.WaitNotVisible(chromedp.CSS(`#nav`)),
		chromedp.SetValue(chromedp.CSS(`#signin input[name=apiKey]`), key),
		chromedp.Click(chromedp.CSS(`#signin button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#nav`)),
		wait(`location.hash === '#/jobs' && document.querySelector('#jobs') !== null`, 20*time.Second))
}

func (b *consoleBundle) signOut(t *testing.T) {
	t.Helper()
	b.run(t, "sign out", 20*time.Second, chromedp.Click(chromedp.CSS(`#signout`)),
		chromedp.WaitVisible(chromedp.CSS(`#signin input[name=apiKey]`)))
}

// TestConsole drives the console of the real binary in headless Chromium, one user's session
// from sign-in to the ledger. The subtests run in order on one page: each builds on the last.
// Each saves screenshots as test artifacts: `go test -run TestConsole -artifacts -outputdir DIR`
// keeps them under DIR/_artifacts.
func TestConsole(t *testing.T) {
	b := setupConsole(t)
	var ffmpegJobID string
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }

	t.Run("SignIn", func(t *testing.T) {
		b.signIn(t, b.key)
		// The session is an HttpOnly cookie: no script sees it, and the key is in no storage.
		if seen := eval[string](t, b, `document.cookie + '|' + JSON.stringify(localStorage) + JSON.stringify(sessionStorage)`); strings.Contains(seen, "mj_") {
			t.Errorf("a script sees the session or the key: %q", seen)
		}
		b.screenshot(t, "jobs")
		b.noErrors(t)
	})

	t.Run("KeysCreateSignInRevoke", func(t *testing.T) {
		b.goTo(t, "#/keys", `#create-key`)
		b.run(t, "create a key", 20*time.Second, chromedp.Click(css(`#create-key`)), chromedp.WaitVisible(css(`output[data-secret]`)))
		secret := text(t, b, `output[data-secret]`)
		if !strings.HasPrefix(secret, "mj_") {
			t.Fatalf("the new key shown is %q", secret)
		}
		b.screenshot(t, "key-created")
		b.signOut(t)
		b.signIn(t, secret)
		prefix := secret[:9]
		row := fmt.Sprintf(`tr[data-prefix=%q]`, prefix)
		b.goTo(t, "#/keys", row)
		b.run(t, "the session's key is marked", 10*time.Second,
			wait(fmt.Sprintf(`document.querySelector(%q).textContent.includes('this session')`, row), 5*time.Second))
		// Revoking the key of this very session ends the session: the page asks to sign in.
		b.run(t, "revoke the key", 20*time.Second, chromedp.Click(css(row+` button`)),
			chromedp.WaitVisible(css(`#signin input[name=apiKey]`)))
		// And the key no longer signs in.
		b.run(t, "sign in with the revoked key", 20*time.Second,
			chromedp.SetValue(css(`#signin input[name=apiKey]`), secret),
			chromedp.Click(css(`#signin button[type=submit]`)),
			wait(`document.querySelector('#signin [role=alert]').textContent.includes('UNAUTHORIZED')`, 10*time.Second))
		b.screenshot(t, "revoked-key-refused")
		if r := b.c.as(secret).do(http.MethodGet, "/account", nil, nil); r.Status != http.StatusUnauthorized {
			t.Fatalf("the revoked key still works on the API: %d", r.Status)
		}
		b.signIn(t, b.key)
		b.noErrors(t)
	})

	t.Run("FFmpegJobWithUpload", func(t *testing.T) {
		clip := filepath.Join(t.TempDir(), "clip.mp4")
		gen := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=duration=2:size=320x240:rate=25",
			"-c:v", "libx264", "-pix_fmt", "yuv420p", clip)
		if out, err := gen.CombinedOutput(); err != nil {
			t.Fatalf("make the clip: %v\n%s", err, out)
		}
		b.goTo(t, "#/new", `#new-ffmpeg[data-validator=ready]`)
		b.run(t, "upload the clip", 60*time.Second,
			chromedp.SetUploadFiles(css(`#new-ffmpeg input[type=file]`), []string{clip}),
			wait(`[...document.querySelectorAll('#new-ffmpeg td')].some((td) => td.textContent === 'clip.mp4')`, 50*time.Second))
		b.run(t, "type the command", 20*time.Second,
			chromedp.SendKeys(css(`#new-ffmpeg textarea[name=command]`),
				"ffmpeg -i clip.mp4 -vf scale=160:-2 -c:v libx264 -pix_fmt yuv420p -movflags +faststart small.mp4"),
			wait(`document.querySelector('#check').dataset.state === 'valid'`, 10*time.Second))
		b.screenshot(t, "new-job")
		b.run(t, "submit", 20*time.Second,
			chromedp.Click(css(`#new-ffmpeg button[type=submit]`)),
			wait(`location.hash.startsWith('#/jobs/job_')`, 10*time.Second),
			// A marker that a reload would lose: the status must change without one.
			js(`window.__noReload = true`))
		ffmpegJobID = strings.TrimPrefix(eval[string](t, b, `location.hash`), "#/jobs/")
		b.run(t, "watch it complete", 120*time.Second,
			wait(`document.querySelector('#job-status')?.dataset.status === 'complete'`, 110*time.Second))
		if !eval[bool](t, b, `window.__noReload === true`) {
			t.Fatal("the page was reloaded to show the new status")
		}
		b.run(t, "play the video", 60*time.Second,
			js(`document.querySelector('.player video').play().catch(() => {})`),
			wait(`document.querySelector('.player video').readyState >= 2`, 50*time.Second))
		if j := b.c.job(ffmpegJobID); j.Status != "complete" {
			t.Fatalf("the API says job %s is %s", ffmpegJobID, j.Status)
		}
		b.screenshot(t, "job-complete")
		b.noErrors(t)
	})

	t.Run("FailedJobShowsStderr", func(t *testing.T) {
		id := b.c.submit(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=33x33:rate=5 -c:v libx264 -pix_fmt yuv420p odd.mp4", nil, nil))
		b.goTo(t, "#/jobs/"+id, `#job-status`)
		b.run(t, "see the stderr", 120*time.Second,
			wait(`document.querySelector('#job-status')?.dataset.status === 'failed' && document.querySelector('#stderr') !== null`, 110*time.Second))
		if stderr := text(t, b, `#stderr`); !strings.Contains(stderr, "divisible by 2") {
			t.Fatalf("the stderr shown is %q; want FFmpeg's complaint about the odd size", stderr)
		}
		b.screenshot(t, "job-failed")
		// Retry: a new job of the same request, and the page moves to it.
		b.run(t, "retry", 20*time.Second,
			js(`[...document.querySelectorAll('button')].find((x) => x.textContent === 'Retry').click()`),
			wait(fmt.Sprintf(`location.hash.startsWith('#/jobs/job_') && location.hash !== %q`, "#/jobs/"+id), 10*time.Second))
		retried := strings.TrimPrefix(eval[string](t, b, `location.hash`), "#/jobs/")
		if j := b.c.job(retried); j.RetryOf != id {
			t.Fatalf("job %s retries %q, want %s", retried, j.RetryOf, id)
		}
		b.run(t, "the retry links back", 10*time.Second, wait(fmt.Sprintf(`document.querySelector('a[href="#/jobs/%s"]') !== null`, id), 5*time.Second))

		// The list filtered to failed jobs shows the failed one and not the completed one.
		b.goTo(t, "#/jobs", `#jobs`)
		b.run(t, "filter by status", 20*time.Second,
			js(`{ const s = document.querySelector('select[name=status]'); s.value = 'failed'; s.dispatchEvent(new Event('change')) }`),
			wait(fmt.Sprintf(`document.querySelector('tr[data-job=%q]') !== null && document.querySelector('tr[data-job=%q]') === null && [...document.querySelectorAll('#jobs tbody tr')].every((r) => r.dataset.status === 'failed')`, id, ffmpegJobID), 10*time.Second))
		if eval[bool](t, b, `[...document.querySelectorAll('button')].find((x) => x.textContent === 'Load more').offsetParent !== null`) {
			t.Error("Load more shows on the last page")
		}
		// Each row tells its job by more than an ID: the command, without its leading ffmpeg.
		if got := eval[string](t, b, fmt.Sprintf(`document.querySelector('tr[data-job=%q] td.summary').textContent`, id)); got != "-f lavfi -i testsrc=duration=1:size=33x33:rate=5 -c:v libx264 -pix_fmt yuv420p odd.mp4" {
			t.Errorf("the failed job's row shows %q, want its command", got)
		}
		b.screenshot(t, "jobs-failed")
		b.noErrors(t)
	})

	t.Run("PriorityAndQueue", func(t *testing.T) {
		// A GPU job waits: this server has no GPU worker.
		id := b.c.submit(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1 -c:v libx264 -pix_fmt yuv420p gpu.mp4", nil, map[string]any{"compute": "gpu"}))
		b.goTo(t, "#/jobs/"+id, `#job-reprioritise select`)
		if got := text(t, b, `#job-priority`); got != "normal" {
			t.Fatalf("the job page shows priority %q, want normal", got)
		}
		choose := func(p string) chromedp.Action[chromedp.Void] {
			return js(fmt.Sprintf(`{ const s = document.querySelector('#job-reprioritise select'); s.value = %q; s.dispatchEvent(new Event('change')) }`, p))
		}
		b.run(t, "raise the priority", 20*time.Second, choose("high"),
			wait(`document.querySelector('#job-priority')?.textContent === 'high'`, 10*time.Second))
		var got struct {
			Priority string `json:"priority"`
		}
		b.c.do(http.MethodGet, "/jobs/"+id, nil, nil).decode(t, http.StatusOK, &got)
		if got.Priority != "high" {
			t.Fatalf("the API says the job's priority is %q, want high", got.Priority)
		}
		b.screenshot(t, "job-priority")

		// The queue and the list show it.
		b.goTo(t, "#/queue", `#queue`)
		b.run(t, "see the queue", 20*time.Second,
			wait(fmt.Sprintf(`(() => { const r = document.querySelector('#queue tr[data-job=%q]'); return r !== null && r.querySelector('td.priority').textContent === 'high' && r.cells[1].textContent === 'gpu' && Number(r.dataset.position) >= 1 })()`, id), 10*time.Second))
		b.screenshot(t, "queue")
		b.goTo(t, "#/jobs", `#jobs`)
		b.run(t, "see the priority in the list", 20*time.Second,
			wait(fmt.Sprintf(`document.querySelector('#jobs tr[data-job=%q] td.priority')?.textContent === 'high'`, id), 10*time.Second))

		// A job that left the queue meanwhile: the API's CONFLICT shows, and the select goes.
		b.goTo(t, "#/jobs/"+id, `#job-reprioritise select`)
		b.c.do(http.MethodPost, "/jobs/"+id+"/cancel", nil, nil).decode(t, http.StatusOK, nil)
		b.run(t, "change a cancelled job's priority", 20*time.Second, choose("low"),
			wait(`document.querySelector('#flash').textContent.startsWith('CONFLICT: ')`, 10*time.Second),
			wait(`document.querySelector('#job-reprioritise').hidden && document.querySelector('#job-priority').textContent === 'high'`, 10*time.Second))

		// On Free, high is the API's PLAN_LIMIT, shown in the new-job form, and nothing is stored.
		free := createAccount(t, b.s, "free")
		b.signOut(t)
		b.signIn(t, free.APIKey)
		b.goTo(t, "#/new", `#new-ffmpeg[data-validator=ready]`)
		b.run(t, "submit a high job on Free", 20*time.Second,
			chromedp.SendKeys(css(`#new-ffmpeg textarea[name=command]`), "ffmpeg -f lavfi -i testsrc=duration=1 -c:v libx264 -pix_fmt yuv420p free.mp4"),
			wait(`document.querySelector('#check').dataset.state === 'valid'`, 10*time.Second),
			js(`document.querySelector('#new-ffmpeg select[name=priority]').value = 'high'`),
			chromedp.Click(css(`#new-ffmpeg button[type=submit]`)),
			wait(`document.querySelector('#check').textContent.includes('PLAN_LIMIT: priority high needs the Pro plan')`, 10*time.Second))
		b.screenshot(t, "priority-plan-limit")
		b.goTo(t, "#/new", `#new-ffmpeg`)
		b.run(t, "submit a high preset job on Free", 30*time.Second,
			js(`{ const s = document.querySelector('select[name=type]'); s.value = 'preset'; s.dispatchEvent(new Event('change')) }`),
			chromedp.WaitVisible(css(`#new-preset[data-presets=ready]`)),
			chromedp.WaitVisible(css(`#new-preset [data-preset-input="in.mp4"]`)),
			chromedp.SetValue(css(`#new-preset input[data-input="in.mp4"]`), "https://example.com/a.mp4"),
			js(`document.querySelector('#new-preset input[data-input="in.mp4"]').dispatchEvent(new Event('input'))`),
			js(`document.querySelector('#new-preset select[name=priority]').value = 'high'`),
			chromedp.Click(css(`#new-preset button[type=submit]`)),
			wait(`document.querySelector('#preset-error').textContent.includes('PLAN_LIMIT: priority high needs the Pro plan')`, 10*time.Second))
		var jobs []map[string]any
		b.c.as(free.APIKey).do(http.MethodGet, "/jobs", nil, nil).decode(t, http.StatusOK, &jobs)
		if len(jobs) != 0 {
			t.Fatalf("the refused submit stored %d jobs", len(jobs))
		}
		b.signOut(t)
		b.signIn(t, b.key)
		b.noErrors(t)
	})

	t.Run("HLSPlays", func(t *testing.T) {
		id := b.c.submit(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=3:size=320x240:rate=25 -c:v libx264 -pix_fmt yuv420p -g 25 "+
			"-f hls -hls_time 1 -hls_playlist_type vod -hls_segment_filename seg_%03d.ts index.m3u8", nil, nil))
		b.goTo(t, "#/jobs/"+id, `#job-status`)
		b.run(t, "play the stream", 150*time.Second,
			wait(`document.querySelector('#job-status')?.dataset.status === 'complete'`, 110*time.Second),
			wait(`document.querySelector('video[data-hls]')?.readyState >= 2`, 30*time.Second))
		t.Logf("HLS played through %s", eval[string](t, b, `document.querySelector('video[data-hls]').dataset.player || 'native'`))
		b.screenshot(t, "hls")
		b.noErrors(t)
	})

	t.Run("CaptionBurnForm", func(t *testing.T) {
		dir := t.TempDir()
		clip, subs := filepath.Join(dir, "talk.mp4"), filepath.Join(dir, "talk.srt")
		gen := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=duration=2:size=320x240:rate=25",
			"-c:v", "libx264", "-pix_fmt", "yuv420p", clip)
		if out, err := gen.CombinedOutput(); err != nil {
			t.Fatalf("make the clip: %v\n%s", err, out)
		}
		if err := os.WriteFile(subs, []byte("1\n00:00:00,000 --> 00:00:01,500\nHello from the console\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		b.goTo(t, "#/new", `#new-ffmpeg`)
		b.run(t, "choose caption.burn", 10*time.Second,
			js(`{ const s = document.querySelector('select[name=type]'); s.value = 'caption.burn'; s.dispatchEvent(new Event('change')) }`),
			chromedp.WaitVisible(css(`#new-caption`)))
		b.run(t, "upload the video and the subtitles", 60*time.Second,
			chromedp.SetUploadFiles(css(`#new-caption fieldset:nth-of-type(1) input[type=file]`), []string{clip}),
			wait(`document.querySelector('#new-caption input[name=sourceUrl]').value.includes('/assets/')`, 50*time.Second),
			chromedp.SetUploadFiles(css(`#new-caption fieldset:nth-of-type(2) input[type=file]`), []string{subs}),
			wait(`document.querySelector('#new-caption fieldset:nth-of-type(2)').textContent.includes('talk.srt: uploaded')`, 50*time.Second),
			chromedp.SetValue(css(`#new-caption input[name=fontSize]`), "32"))
		b.screenshot(t, "caption-form")
		b.run(t, "submit and watch", 150*time.Second,
			chromedp.Click(css(`#new-caption button[type=submit]`)),
			wait(`location.hash.startsWith('#/jobs/job_')`, 10*time.Second),
			wait(`document.querySelector('#job-status')?.dataset.status === 'complete'`, 130*time.Second),
			js(`document.querySelector('.player video').play().catch(() => {})`),
			wait(`document.querySelector('.player video').readyState >= 2`, 30*time.Second))
		j := b.c.job(strings.TrimPrefix(eval[string](t, b, `location.hash`), "#/jobs/"))
		if j.Type != "caption.burn" || j.Status != "complete" {
			t.Fatalf("job %s: %s %s", j.ID, j.Type, j.Status)
		}
		b.screenshot(t, "caption-complete")
		b.noErrors(t)
	})

	t.Run("PresetForm", func(t *testing.T) {
		clip := filepath.Join(t.TempDir(), "clip.mp4")
		gen := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=duration=1:size=320x240:rate=10",
			"-c:v", "libx264", "-pix_fmt", "yuv420p", clip)
		if out, err := gen.CombinedOutput(); err != nil {
			t.Fatalf("make the clip: %v\n%s", err, out)
		}
		b.c.do(http.MethodPost, "/presets", map[string]any{"name": "tuned", "command": "ffmpeg -i in.mp4 -c:v libx264 -tune {{tune}} out.mp4",
			"variables": map[string]any{"tune": map[string]any{"type": "string", "maxLength": 20}}}, nil).decode(t, http.StatusCreated, nil)
		choose := func(name string) chromedp.Action[chromedp.Void] {
			return js(fmt.Sprintf(`{ const s = document.querySelector('#new-preset select[name=preset]'); s.value = %q; s.dispatchEvent(new Event('change')) }`, name))
		}
		b.goTo(t, "#/new", `#new-ffmpeg`)
		b.run(t, "choose a preset", 20*time.Second,
			js(`{ const s = document.querySelector('select[name=type]'); s.value = 'preset'; s.dispatchEvent(new Event('change')) }`),
			chromedp.WaitVisible(css(`#new-preset[data-presets=ready]`)), choose("web-mp4"),
			chromedp.WaitVisible(css(`#new-preset [data-preset-input="in.mp4"]`)))
		// Each variable is a field of its type, holding its default.
		if got := eval[string](t, b, `[...document.querySelectorAll('#new-preset [data-variable]')].map((e) => e.dataset.variable + ':' + e.tagName + ':' + (e.type || '') + ':' + (e.min || '') + '-' + (e.max || '') + ':' + e.value).join(' ')`); got != "audioKbps:INPUT:number:32-320:128 crf:INPUT:number:16-35:23 height:INPUT:number:144-2160:720 speed:SELECT:select-one:-:veryfast" {
			t.Errorf("web-mp4's fields: %s", got)
		}
		b.run(t, "upload the clip as in.mp4 and set the values", 60*time.Second,
			chromedp.SetUploadFiles(css(`#new-preset [data-preset-input="in.mp4"] input[type=file]`), []string{clip}),
			wait(`document.querySelector('#new-preset input[data-input="in.mp4"]').value.includes('/assets/')`, 50*time.Second),
			chromedp.SetValue(css(`#new-preset [data-variable=height]`), "144"),
			chromedp.SetValue(css(`#new-preset [data-variable=speed]`), "ultrafast"))
		b.screenshot(t, "preset-form")
		b.run(t, "submit and watch", 120*time.Second,
			chromedp.Click(css(`#new-preset button[type=submit]`)),
			wait(`location.hash.startsWith('#/jobs/job_')`, 10*time.Second),
			wait(`document.querySelector('#job-status')?.dataset.status === 'complete'`, 100*time.Second))
		id := strings.TrimPrefix(eval[string](t, b, `location.hash`), "#/jobs/")
		var pj presetJob
		b.c.do(http.MethodGet, "/jobs/"+id, nil, nil).decode(t, http.StatusOK, &pj)
		if pj.Status != "complete" || pj.Params.Preset.Name != "web-mp4" || string(pj.Params.Preset.Variables["height"]) != "144" ||
			string(pj.Params.Preset.Variables["speed"]) != `"ultrafast"` || pj.Output.File == nil || pj.Output.File.Meta == nil || pj.Output.File.Meta.Height != 144 {
			t.Errorf("the console's preset job: %+v %+v", pj.jobView, pj.Params)
		}

		// A value the server refuses is named, and its field marked; no job is made.
		b.goTo(t, "#/new", `#new-ffmpeg`)
		b.run(t, "a flag for a string variable", 30*time.Second,
			js(`{ const s = document.querySelector('select[name=type]'); s.value = 'preset'; s.dispatchEvent(new Event('change')) }`),
			chromedp.WaitVisible(css(`#new-preset[data-presets=ready]`)), choose("tuned"),
			chromedp.WaitVisible(css(`#new-preset [data-variable=tune]`)),
			chromedp.SetValue(css(`#new-preset input[data-input="in.mp4"]`), "https://example.com/a.mp4"),
			js(`document.querySelector('#new-preset input[data-input="in.mp4"]').dispatchEvent(new Event('input'))`),
			chromedp.SetValue(css(`#new-preset [data-variable=tune]`), "-i"),
			chromedp.Click(css(`#new-preset button[type=submit]`)),
			wait(`document.querySelector('#preset-error').textContent.includes('params.variables.tune')`, 10*time.Second))
		if !eval[bool](t, b, `document.querySelector('#new-preset [data-variable=tune]').getAttribute('aria-invalid') === 'true' && location.hash === '#/new'`) {
			t.Error("the refused variable's field is not marked, or the page left the form")
		}
		b.screenshot(t, "preset-refused")
		b.noErrors(t)
	})

	t.Run("ImageSetAudioAndMetadata", func(t *testing.T) {
		set := b.c.submit(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=64x48:rate=4 frame_%02d.png", nil, nil))
		b.goTo(t, "#/jobs/"+set, `#job-status`)
		b.run(t, "see the image grid", 120*time.Second,
			wait(`document.querySelector('#job-status')?.dataset.status === 'complete'`, 110*time.Second),
			wait(`document.querySelectorAll('.grid img').length === 4 && [...document.querySelectorAll('.grid img')].every((i) => i.complete && i.naturalWidth === 64)`, 10*time.Second))
		b.screenshot(t, "image-set")

		tone := b.c.submit(ffmpegJob("ffmpeg -f lavfi -i sine=frequency=440:duration=1 -c:a libmp3lame tone.mp3", nil, nil))
		b.goTo(t, "#/jobs/"+tone, `#job-status`)
		b.run(t, "play the audio", 120*time.Second,
			wait(`document.querySelector('#job-status')?.dataset.status === 'complete'`, 110*time.Second),
			wait(`document.querySelector('.player audio')?.readyState >= 1`, 20*time.Second))

		clip := filepath.Join(t.TempDir(), "probe.mp4")
		gen := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=duration=1:size=320x240:rate=25",
			"-c:v", "libx264", "-pix_fmt", "yuv420p", clip)
		if out, err := gen.CombinedOutput(); err != nil {
			t.Fatalf("make the clip: %v\n%s", err, out)
		}
		data, err := os.ReadFile(clip)
		if err != nil {
			t.Fatal(err)
		}
		up := b.c.uploadMultipart("probe.mp4", data)
		meta := b.c.submit(map[string]any{"type": "extract.metadata", "inputs": map[string]any{"source": up.URL}})
		b.goTo(t, "#/jobs/"+meta, `#job-status`)
		b.run(t, "see the metadata table", 120*time.Second,
			wait(`document.querySelector('#job-status')?.dataset.status === 'complete'`, 110*time.Second),
			wait(`[...document.querySelectorAll('td')].some((td) => td.textContent === '320') && [...document.querySelectorAll('td')].some((td) => td.textContent === '240')`, 10*time.Second))
		b.screenshot(t, "metadata")
		b.noErrors(t)
	})

	t.Run("WebhookDeliveryAndRedeliver", func(t *testing.T) {
		b.goTo(t, "#/webhooks", `#new-endpoint`)
		b.run(t, "create an endpoint", 30*time.Second,
			chromedp.SetValue(css(`#new-endpoint input[name=name]`), "local receiver"),
			chromedp.SetValue(css(`#new-endpoint input[name=url]`), b.recv.srv.URL+"/hooks"),
			chromedp.Click(css(`#new-endpoint button[type=submit]`)),
			chromedp.WaitVisible(css(`output[data-secret]`)))
		secret := text(t, b, `output[data-secret]`)
		if !strings.HasPrefix(secret, "whsec_") {
			t.Fatalf("the secret shown is %q", secret)
		}
		b.screenshot(t, "endpoint-created")
		b.run(t, "open it and send a test event", 30*time.Second,
			chromedp.Click(css(`.secret + p a`)),
			chromedp.WaitVisible(css(`#edit-endpoint`)),
			js(`[...document.querySelectorAll('button')].find((x) => x.textContent === 'Send test event').click()`),
			wait(`document.querySelector('tr[data-delivery][data-state=succeeded] .delivery-status')?.textContent === '204'`, 25*time.Second))
		first := b.recv.next(t, secret, "test delivery")
		b.run(t, "redeliver", 30*time.Second,
			chromedp.Click(css(`tr[data-delivery][data-state=succeeded] button`)),
			wait(`document.querySelectorAll('tr[data-delivery][data-state=succeeded]').length === 2`, 25*time.Second))
		again := b.recv.next(t, secret, "redelivery")
		if string(again.body) != string(first.body) || again.header.Get("X-Service-Delivery") == first.header.Get("X-Service-Delivery") {
			t.Fatalf("redelivery %s (%s); want the body of %s under a new delivery ID", again.body,
				again.header.Get("X-Service-Delivery"), first.header.Get("X-Service-Delivery"))
		}
		// The page shows what was sent.
		if body := eval[string](t, b, `document.querySelector('details').open = true; document.querySelector('.delivery-body').textContent`); !strings.Contains(body, "webhook.test") {
			t.Fatalf("the delivery body shown is %q", body)
		}
		b.screenshot(t, "deliveries")

		// Edit the events, then rotate the secret: the new one is shown once.
		b.run(t, "edit events", 20*time.Second,
			js(`document.querySelector('#edit-endpoint input[value="job.failed"]').click(); document.querySelector('#edit-endpoint input[value="job.running"]').click()`),
			chromedp.Click(css(`#edit-endpoint button[type=submit]`)),
			wait(`document.querySelector('#flash').textContent === 'Saved.'`, 10*time.Second))
		var eps []struct {
			SubscribedEvents []string `json:"subscribedEvents"`
		}
		b.c.do(http.MethodGet, "/webhook-endpoints", nil, nil).decode(t, http.StatusOK, &eps)
		if len(eps) != 1 || strings.Join(eps[0].SubscribedEvents, ",") != "job.completed,job.running" {
			t.Fatalf("endpoints after the edit: %+v; want job.completed and job.running", eps)
		}
		b.run(t, "rotate the secret", 20*time.Second,
			js(`[...document.querySelectorAll('button')].find((x) => x.textContent === 'Rotate secret').click()`),
			wait(fmt.Sprintf(`(document.querySelector('output[data-secret]')?.textContent || '').startsWith('whsec_') && document.querySelector('output[data-secret]').textContent !== %q`, secret), 10*time.Second))
		b.noErrors(t)
	})

	t.Run("LedgerShowsTheCharge", func(t *testing.T) {
		if ffmpegJobID == "" {
			t.Skip("the FFmpeg job did not run")
		}
		b.goTo(t, "#/credits", `#balance`)
		b.run(t, "find the charge", 30*time.Second,
			wait(fmt.Sprintf(`[...document.querySelectorAll('#ledger tr[data-kind=charge] a')].some((a) => a.textContent === %q)`, ffmpegJobID), 25*time.Second))
		b.screenshot(t, "credits")
		b.noErrors(t)
	})

	t.Run("ValidatorErrorBeforeSubmitWithoutARequest", func(t *testing.T) {
		b.goTo(t, "#/new", `#new-ffmpeg[data-validator=ready]`)
		before := eval[int](t, b, `performance.getEntriesByType('resource').length`)
		b.run(t, "type a refused command", 20*time.Second,
			chromedp.SendKeys(css(`#new-ffmpeg textarea[name=command]`), "ffmpeg -f lavfi -i testsrc=duration=1 -filter_script f.txt out.mp4"),
			wait(`document.querySelector('#check').dataset.state === 'invalid'`, 10*time.Second))
		after := eval[int](t, b, `performance.getEntriesByType('resource').length`)
		if msg := text(t, b, `#check`); !strings.Contains(msg, "-filter_script") {
			t.Errorf("the error shown is %q; want it to name -filter_script", msg)
		}
		if marked := text(t, b, `#command-preview mark`); marked != "-filter_script" {
			t.Errorf("marked %q, want -filter_script", marked)
		}
		if after != before {
			names := eval[string](t, b, fmt.Sprintf(`performance.getEntriesByType('resource').slice(%d).map((e) => e.name).join(' ')`, before))
			t.Errorf("typing made %d requests: %s", after-before, names)
		}
		if !eval[bool](t, b, `document.querySelector('#new-ffmpeg button[type=submit]').disabled`) {
			t.Error("the submit button is enabled for an invalid command")
		}
		b.screenshot(t, "validator-error")
		b.noErrors(t)
	})

	t.Run("RequiredInputsOfferedBeforeSubmit", func(t *testing.T) {
		clip := filepath.Join(t.TempDir(), "any-name.mp4")
		gen := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=duration=2:size=320x240:rate=25",
			"-c:v", "libx264", "-pix_fmt", "yuv420p", clip)
		if out, err := gen.CombinedOutput(); err != nil {
			t.Fatalf("make the clip: %v\n%s", err, out)
		}
		b.goTo(t, "#/new", `#new-ffmpeg[data-validator=ready]`)
		required := `[...document.querySelectorAll('#required-inputs li[data-required]')].map((li) => li.dataset.required).join(' ')`
		submitDisabled := `document.querySelector('#new-ffmpeg button[type=submit]').disabled`
		// A command that is valid but reads names no input gives is not ready to submit.
		b.run(t, "type a command that reads two names", 20*time.Second,
			chromedp.SendKeys(css(`#new-ffmpeg textarea[name=command]`), "ffmpeg -i in.mp4 -vf subtitles=subs.srt -c:v libx264 -pix_fmt yuv420p out.mp4"),
			wait(`document.querySelector('#check').dataset.state === 'missing-inputs'`, 10*time.Second),
			wait(required+` === 'in.mp4 subs.srt'`, 5*time.Second))
		if msg := text(t, b, `#check`); strings.Contains(msg, "✓") || !strings.Contains(msg, "in.mp4, subs.srt") {
			t.Errorf("the check reads %q; want no ✓ and the names still to provide", msg)
		}
		if !eval[bool](t, b, submitDisabled) {
			t.Error("Submit is enabled while the command reads inputs nobody gave")
		}
		b.screenshot(t, "required-inputs")
		// in.mp4 by upload: a file of any name is staged under the name the command reads.
		b.run(t, "upload in.mp4", 60*time.Second,
			chromedp.SetUploadFiles(css(`#required-inputs li[data-required="in.mp4"] input[type=file]`), []string{clip}),
			wait(required+` === 'subs.srt'`, 50*time.Second))
		if !eval[bool](t, b, submitDisabled) {
			t.Error("Submit is enabled while subs.srt is still missing")
		}
		// subs.srt as inline text.
		b.run(t, "type subs.srt", 20*time.Second,
			js(`[...document.querySelectorAll('#required-inputs li[data-required="subs.srt"] button')].find((x) => x.textContent === 'or type it as text').click()`),
			chromedp.SetValue(css(`#required-inputs li[data-required="subs.srt"] textarea`), "1\n00:00:00,000 --> 00:00:01,500\nHello from the console\n"),
			js(`[...document.querySelectorAll('#required-inputs li[data-required="subs.srt"] button')].find((x) => x.textContent === 'Add subs.srt as inline text').click()`),
			wait(`document.querySelector('#check').dataset.state === 'valid' && document.querySelector('#required-inputs').hidden`, 10*time.Second))
		if eval[bool](t, b, submitDisabled) {
			t.Fatal("Submit stays disabled with every input given")
		}
		b.run(t, "submit and watch", 150*time.Second,
			chromedp.Click(css(`#new-ffmpeg button[type=submit]`)),
			wait(`location.hash.startsWith('#/jobs/job_')`, 10*time.Second),
			wait(`document.querySelector('#job-status')?.dataset.status === 'complete'`, 130*time.Second))
		j := b.c.job(strings.TrimPrefix(eval[string](t, b, `location.hash`), "#/jobs/"))
		if j.Status != "complete" {
			t.Fatalf("job %s is %s", j.ID, j.Status)
		}
		b.noErrors(t)
	})

	t.Run("GeneratedInputShowsProgress", func(t *testing.T) {
		// Eight seconds of testsrc read at its own rate (-re), so that heartbeats carry progress
		// while the job runs however fast the machine encodes (ten seconds of x264 at its
		// slowest preset once ended in two, before the page saw any). Its only input is
		// generated: the length comes from the command.
		id := b.c.submit(ffmpegJob("ffmpeg -re -f lavfi -i testsrc=d=8:s=640x360 -t 8 -c:v libx264 -preset veryfast -pix_fmt yuv420p out.mp4", nil, nil))
		b.goTo(t, "#/jobs/"+id, `#job-status`)
		// Wait for progress or for the end, whichever comes first.
		b.run(t, "wait for progress above 0", 150*time.Second,
			wait(`(() => {
				const s = document.querySelector('#job-status');
				window.__progressSeen ||= s?.dataset.status === 'running' && s.querySelector('progress')?.value > 0;
				return window.__progressSeen || ['complete', 'failed', 'cancelled'].includes(s?.dataset.status);
			})()`, 140*time.Second))
		if !eval[bool](t, b, `window.__progressSeen === true`) {
			b.fail(t, "progress", fmt.Errorf("the job ended (%s) before the page showed any progress", eval[string](t, b, `document.querySelector('#job-status').dataset.status`)))
		}
		b.screenshot(t, "progress")
		b.run(t, "watch it complete", 150*time.Second,
			wait(`document.querySelector('#job-status')?.dataset.status === 'complete'`, 140*time.Second))
		b.noErrors(t)
	})

	t.Run("SplitJobShowsItsParts", func(t *testing.T) {
		up := b.c.uploadRaw("src.mp4", makeSplitSource(t, 8, "160x90"))
		id := b.c.submit(ffmpegJob(splitCommand, map[string]any{"in.mp4": map[string]any{"url": up.URL}}, map[string]any{"split": "auto"}))
		b.goTo(t, "#/jobs/"+id, `#job-status`)
		b.run(t, "see it complete in parts", 90*time.Second,
			wait(`document.querySelector('#job-status')?.dataset.status === 'complete' && document.querySelector('#job-split')?.textContent === '2 parts, encoded at once'`, 80*time.Second))
		b.noErrors(t)
	})

	t.Run("UnknownLengthShowsTimeProcessed", func(t *testing.T) {
		// An endless source bounded only by the output's size: no length is known, so the page
		// shows the media time written instead of a percentage. The job is cancelled once seen.
		id := b.c.submit(ffmpegJob("ffmpeg -f lavfi -i testsrc=s=640x360 -fs 50M -c:v libx264 -preset veryslow -pix_fmt yuv420p endless.mp4", nil, nil))
		b.goTo(t, "#/jobs/"+id, `#job-status`)
		b.run(t, "wait for time processed", 90*time.Second,
			wait(`/^\d.* processed$/.test(document.querySelector('#job-status .processed')?.textContent ?? '')`, 80*time.Second))
		b.screenshot(t, "processed")
		b.c.do(http.MethodPost, "/jobs/"+id+"/cancel", nil, nil).decode(t, http.StatusOK, nil)
		b.run(t, "see it cancelled", 30*time.Second, wait(`document.querySelector('#job-status')?.dataset.status === 'cancelled'`, 25*time.Second))
		b.noErrors(t)
	})

	t.Run("PhoneWidthKeyboardLabels", func(t *testing.T) {
		b.run(t, "phone viewport", 10*time.Second, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
		pages := map[string]string{"#/jobs": `#jobs`, "#/new": `#new-ffmpeg`, "#/webhooks": `#new-endpoint`, "#/keys": `#create-key`,
			"#/credits": `#balance`}
		if ffmpegJobID != "" {
			pages["#/jobs/"+ffmpegJobID] = `#job-status`
		}
		for hash, ready := range pages {
			b.goTo(t, hash, ready)
			if eval[bool](t, b, `document.documentElement.scrollWidth > window.innerWidth + 1`) {
				t.Errorf("%s scrolls sideways at 390 px", hash)
			}
			// Every control has a name a screen reader can say: a label, aria-label, or text.
			unlabelled := eval[string](t, b, `[...document.querySelectorAll('input, select, textarea, button')]
				.filter((el) => el.offsetParent !== null || el.type === 'file')
				.filter((el) => !(el.labels && el.labels.length) && !el.getAttribute('aria-label') && !(el.tagName === 'BUTTON' && el.textContent.trim()))
				.map((el) => el.outerHTML.slice(0, 80)).join('\n')`)
			if unlabelled != "" {
				t.Errorf("%s has controls without a label:\n%s", hash, unlabelled)
			}
		}
		b.goTo(t, "#/jobs", `#jobs`)
		// On a fresh load the first Tab reaches the skip link, then the navigation.
		b.run(t, "tab", 20*time.Second, chromedp.Reload(), chromedp.WaitVisible(css(`#jobs`)), chromedp.KeyEvent("\t"))
		if first := eval[string](t, b, `document.activeElement.textContent`); first != "Skip to content" {
			t.Errorf("the first Tab reaches %q, want the skip link", first)
		}
		b.run(t, "tab on", 10*time.Second, chromedp.KeyEvent("\t"), chromedp.KeyEvent("\t"))
		if next := eval[string](t, b, `document.activeElement.textContent`); next != "Jobs" {
			t.Errorf("the third Tab reaches %q, want the Jobs link", next)
		}
		b.screenshot(t, "phone-jobs")
		b.noErrors(t)
	})

	t.Run("DocsAndPlaygroundKeepTheirCSP", func(t *testing.T) {
		b.run(t, "desktop viewport", 10*time.Second, chromedp.EmulateViewport(1280, 900))
		for _, p := range []struct{ path, ready string }{
			{"/docs/", `[...document.querySelectorAll('h2')].some((h) => h.textContent.trim() === 'Submit a job')`},
			{"/playground/", `!document.getElementById('status').classList.contains('loading')`},
		} {
			b.run(t, "open "+p.path, 60*time.Second, chromedp.Navigate(b.s.Base+p.path), wait(p.ready, 50*time.Second))
			if p.path == "/docs/" {
				// The reference renders the flag allowlist, each flag in a row with its reason.
				rows := eval[int](t, b, `[...document.querySelectorAll('tr')].filter((tr) => tr.cells.length === 2 &&
					tr.cells[0].textContent.startsWith('filter graphs: every filter and option is checked') &&
					tr.cells[1].textContent.split(/\s+/).includes('-filter_complex')).length`)
				if rows != 1 {
					t.Errorf("/docs shows %d rows of -filter_complex with its reason, want the allowlist's one", rows)
				}
			}
		}
		b.noErrors(t)
	})
}
