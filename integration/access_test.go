package integration

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestDownloadTokens: file URLs expire (MEDIAJOBS_URL_TTL=2s here), a re-read mints fresh ones,
// and forged or misapplied tokens are refused.
func TestDownloadTokens(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		srv := startServer(t, serverOpts{Unthrottled: true, Backend: b, Env: map[string]string{"MEDIAJOBS_URL_TTL": "2s"}})
		c := newClient(t, srv, createAccount(t, srv, "pro").APIKey)

		single := c.complete(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=5 -frames:v 1 one.png", nil, nil))
		set := c.complete(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=2 f_%02d.png", nil, nil))
		single, set = c.job(single.ID), c.job(set.ID)
		fileURL, memberURL := single.Output.File.URL, set.Output.Files[0].URL
		c.mustGet(fileURL)
		c.mustGet(memberURL)

		u, err := url.Parse(fileURL)
		if err != nil {
			t.Fatal(err)
		}
		token := u.Query().Get("token")
		otherJob := srv.Base + "/dl/" + set.ID + "?token=" + url.QueryEscape(token)
		memberParts := strings.Split(memberURL, "/")
		forgedMember := append([]string(nil), memberParts...)
		forgedMember[len(forgedMember)-2] = flipLast(forgedMember[len(forgedMember)-2])
		refused := map[string]string{
			"forged token":           srv.Base + "/dl/" + single.ID + "?token=" + url.QueryEscape(flipLast(token)),
			"no token":               srv.Base + "/dl/" + single.ID,
			"token of another job":   otherJob,
			"forged member token":    strings.Join(forgedMember, "/"),
			"member token elsewhere": srv.Base + "/v/" + single.ID + "/" + memberParts[len(memberParts)-2] + "/one.png",
		}
		for name, target := range refused {
			if e := c.get(target, nil).errorOf(t, http.StatusForbidden); e.Code != "FORBIDDEN" {
				t.Errorf("%s: %+v, want FORBIDDEN", name, e)
			}
		}

		// The links' life (MEDIAJOBS_URL_TTL) passing is the subject: no state to wait on.
		time.Sleep(2500 * time.Millisecond)
		for _, target := range []string{fileURL, memberURL} {
			e := c.get(target, nil).errorOf(t, http.StatusForbidden)
			if e.Code != "FORBIDDEN" || !strings.Contains(e.Message, "expired") {
				t.Errorf("expired %s: %+v, want FORBIDDEN saying it expired", target, e)
			}
		}
		fresh := c.job(single.ID)
		if fresh.Output.File.URL == fileURL {
			t.Errorf("GET /jobs/%s after expiry returned the expired URL", single.ID)
		}
		c.mustGet(fresh.Output.File.URL)
		c.mustGet(c.job(set.ID).Output.Files[0].URL)
	})
}

// flipLast changes the last character of a token.
func flipLast(s string) string {
	if s == "" {
		return "x"
	}
	last := s[len(s)-1]
	repl := byte('A')
	if last == 'A' {
		repl = 'B'
	}
	return s[:len(s)-1] + string(repl)
}

// TestAccess covers authentication, account isolation, plan limits and the submit gate's
// validation: rejected requests store nothing.
func TestAccess(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		srv := startServer(t, serverOpts{Unthrottled: true, Backend: b})
		owner := newClient(t, srv, createAccount(t, srv, "pro").APIKey)
		stranger := owner.as(createAccount(t, srv, "free").APIKey)

		t.Run("unauthorized", func(t *testing.T) {
			for name, auth := range map[string]string{
				"no header":     "",
				"unknown key":   "Bearer mj_" + randomHex(24),
				"not a key":     "Bearer nonsense",
				"wrong scheme":  "Basic " + owner.Key,
				"empty bearer":  "Bearer ",
				"key as scheme": owner.Key,
			} {
				h := http.Header{}
				if auth != "" {
					h.Set("Authorization", auth)
				}
				for _, target := range []string{"/jobs", "/account"} {
					r := owner.as("").do(http.MethodGet, target, nil, h)
					if e := r.errorOf(t, http.StatusUnauthorized); e.Code != "UNAUTHORIZED" {
						t.Errorf("%s, GET %s: %+v, want UNAUTHORIZED", name, target, e)
					}
				}
			}
			r := owner.as("").do(http.MethodPost, "/jobs", ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1 -frames:v 1 x.png", nil, nil), nil)
			if e := r.errorOf(t, http.StatusUnauthorized); e.Code != "UNAUTHORIZED" {
				t.Errorf("POST /jobs without a key: %+v", e)
			}
		})

		t.Run("validate needs no key", func(t *testing.T) {
			var ok struct {
				Valid bool     `json:"valid"`
				Args  []string `json:"args"`
				Error string   `json:"error"`
			}
			anon := owner.as("")
			anon.do(http.MethodPost, "/ffmpeg/validate", map[string]any{"command": "ffmpeg -f lavfi -i testsrc=duration=1 -frames:v 1 x.png"}, nil).
				decode(t, http.StatusOK, &ok)
			if !ok.Valid || len(ok.Args) == 0 {
				t.Errorf("valid command: %+v", ok)
			}
			ok.Valid, ok.Args = true, nil
			anon.do(http.MethodPost, "/ffmpeg/validate", map[string]any{"command": "ffmpeg -f lavfi -i testsrc=duration=1 -filter_script f.txt out.mp4"}, nil).
				decode(t, http.StatusOK, &ok)
			if ok.Valid || !strings.Contains(ok.Error, "-filter_script") {
				t.Errorf("-filter_script: %+v, want invalid naming the flag", ok)
			}
		})

		t.Run("rejected submissions store nothing", func(t *testing.T) {
			big := strings.Repeat("x", 64<<10+1)
			tests := []struct {
				name   string
				body   any
				status int
				code   string
				names  string
			}{
				{"disallowed flag", ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1 -filter_script f.txt out.mp4", nil, nil), 400, "VALIDATION_ERROR", "-filter_script"},
				{"file protocol input", ffmpegJob("ffmpeg -i file:///etc/passwd out.mp4", nil, nil), 400, "VALIDATION_ERROR", "file:///etc/passwd"},
				{"plain http input", ffmpegJob("ffmpeg -i http://127.0.0.1/x.mp4 out.mp4", nil, nil), 400, "VALIDATION_ERROR", "http://127.0.0.1/x.mp4"},
				{"unknown field", map[string]any{"type": "ffmpeg", "params": map[string]any{"command": "ffmpeg -f lavfi -i testsrc -frames:v 1 x.png"}, "priority": 1}, 400, "VALIDATION_ERROR", "priority"},
				{"command not a string", map[string]any{"type": "ffmpeg", "params": map[string]any{"command": 42}}, 400, "VALIDATION_ERROR", "command"},
				{"unknown type", map[string]any{"type": "nope", "params": map[string]any{}}, 400, "VALIDATION_ERROR", "nope"},
				{"timeout 0", ffmpegJob("ffmpeg -f lavfi -i testsrc -frames:v 1 x.png", nil, map[string]any{"timeout": 0}), 400, "VALIDATION_ERROR", "timeout"},
				{"timeout 901", ffmpegJob("ffmpeg -f lavfi -i testsrc -frames:v 1 x.png", nil, map[string]any{"timeout": 901}), 400, "VALIDATION_ERROR", "timeout"},
				{"content over 64 KB", ffmpegJob("ffmpeg -f lavfi -i testsrc -vf subtitles=s.srt -frames:v 1 x.png", map[string]any{"s.srt": map[string]any{"content": big}}, nil), 400, "VALIDATION_ERROR", "s.srt"},
				{"cpu with nvenc", ffmpegJob("ffmpeg -f lavfi -i testsrc=d=1 -c:v h264_nvenc x.mp4", nil, map[string]any{"compute": "cpu"}), 400, "VALIDATION_ERROR", "nvenc"},
				{"malformed json", []byte(`{"type":"ffmpeg",`), 400, "VALIDATION_ERROR", ""},
			}
			for _, tt := range tests {
				h := http.Header{"Content-Type": {"application/json"}}
				e := owner.do(http.MethodPost, "/jobs", tt.body, h).errorOf(t, tt.status)
				if e.Code != tt.code || !strings.Contains(e.Message, tt.names) {
					t.Errorf("%s: %+v, want %s naming %q", tt.name, e, tt.code, tt.names)
				}
			}
			e := stranger.do(http.MethodPost, "/jobs", ffmpegJob("ffmpeg -f lavfi -i testsrc=d=1 -c:v h264_nvenc x.mp4", nil, nil), nil).
				errorOf(t, http.StatusForbidden)
			if e.Code != "PLAN_LIMIT" {
				t.Errorf("GPU job on the free plan: %+v, want PLAN_LIMIT", e)
			}
			for _, c := range []*client{owner, stranger} {
				var page []jobView
				c.do(http.MethodGet, "/jobs", nil, nil).decode(t, http.StatusOK, &page)
				if len(page) != 0 {
					t.Errorf("rejected submissions stored jobs: %+v", page)
				}
			}
		})

		t.Run("another account's job", func(t *testing.T) {
			j := owner.complete(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=5 -frames:v 1 mine.png", nil, nil))
			for _, req := range []struct{ method, path string }{
				{http.MethodGet, "/jobs/" + j.ID},
				{http.MethodPost, "/jobs/" + j.ID + "/cancel"},
				{http.MethodPost, "/jobs/" + j.ID + "/retry"},
				{http.MethodGet, "/jobs/job_doesnotexist"},
			} {
				if e := stranger.do(req.method, req.path, nil, nil).errorOf(t, http.StatusNotFound); e.Code != "NOT_FOUND" {
					t.Errorf("%s %s as another account: %+v, want NOT_FOUND", req.method, req.path, e)
				}
			}
			var page []jobView
			stranger.do(http.MethodGet, "/jobs", nil, nil).decode(t, http.StatusOK, &page)
			if len(page) != 0 {
				t.Errorf("another account lists %d jobs", len(page))
			}
			owner.do(http.MethodGet, "/jobs", nil, nil).decode(t, http.StatusOK, &page)
			if len(page) != 1 || page[0].ID != j.ID {
				t.Errorf("the owner lists %+v, want its one job", page)
			}
		})
	})
}

// A path the service would clean ("//", "/./", "/../") is answered 404 NOT_FOUND in the API's
// error shape, never a redirect (which turns a POST into a GET), and HEAD answers as GET.
func TestUncleanPathsAndHead(t *testing.T) {
	t.Parallel()
	srv := startServer(t, serverOpts{Unthrottled: true})
	key := createAccount(t, srv, "pro").APIKey
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	send := func(method, path string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, srv.Base+path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, body
	}
	for _, p := range []string{"//jobs", "/jobs//x", "/jobs/./x", "/jobs/../account", "/./healthz"} {
		resp, body := send(http.MethodPost, p)
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `"NOT_FOUND"`) ||
			resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("X-Request-Id") == "" {
			t.Errorf("POST %s: %d %s %q; want 404 NOT_FOUND in the error shape", p, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}
	for _, p := range []string{"/healthz", "/account", "/jobs"} {
		resp, body := send(http.MethodHead, p)
		if resp.StatusCode != http.StatusOK || len(body) != 0 {
			t.Errorf("HEAD %s: %d, %d bytes; want 200 without a body", p, resp.StatusCode, len(body))
		}
	}
}
