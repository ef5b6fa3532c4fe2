package web_test

import (
	"io"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/web"
)

func TestConsoleServesItsFiles(t *testing.T) {
	t.Parallel()
	h := web.Console([]byte("\x00asm fake"))
	tests := []struct {
		method, path string
		status       int
		contentType  string
		contains     string
	}{
		{"GET", "/", 200, "text/html", `<script type="module" src="/console/app.js">`},
		{"HEAD", "/", 200, "text/html", ""},
		{"GET", "/console/app.js", 200, "text/javascript", "hashchange"},
		{"GET", "/console/api.js", 200, "text/javascript", "X-CSRF-Token"},
		{"GET", "/console/validate.js", 200, "text/javascript", "validator.wasm"},
		{"GET", "/console/validator/wasi.js", 200, "text/javascript", "class WASI"},
		{"GET", "/console/validator/index.js", 200, "text/javascript", "export async function createValidator"},
		{"GET", "/console/validator.js", 404, "", ""},
		{"GET", "/console/style.css", 200, "text/css", ":focus-visible"},
		{"GET", "/console/lib/hls.light.min.js", 200, "text/javascript", ""},
		{"GET", "/console/lib/hls.LICENSE", 200, "text/plain", "Apache"},
		{"GET", "/console/validator.wasm", 200, "application/wasm", "asm"},
		{"GET", "/console/index.html", 404, "", ""},
		{"GET", "/console/nothing.js", 404, "", ""},
		{"POST", "/", 405, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			res := rec.Result()
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tt.status)
			}
			if ct := res.Header.Get("Content-Type"); tt.contentType != "" && !strings.HasPrefix(ct, tt.contentType) {
				t.Errorf("Content-Type %q, want %s", ct, tt.contentType)
			}
			if !strings.Contains(string(body), tt.contains) {
				t.Errorf("body lacks %q", tt.contains)
			}
			csp := res.Header.Get("Content-Security-Policy")
			scripts := regexp.MustCompile(`script-src ([^;]*)`).FindStringSubmatch(csp)
			if scripts == nil || strings.Contains(scripts[1], "unsafe-inline") || strings.Contains(scripts[1], "'unsafe-eval'") {
				t.Errorf("CSP %q allows inline scripts or eval", csp)
			}
		})
	}
}

// The page has no inline script or style and names no other origin: everything comes from the
// binary, as the CSP demands.
func TestConsoleLoadsNothingFromElsewhere(t *testing.T) {
	t.Parallel()
	inline := regexp.MustCompile(`<script(?:\s+type="module")?>|<style|\sstyle=|\son[a-z]+=`)
	remote := regexp.MustCompile(`(?:src|href)=["']?(?:https?:)?//`)
	for _, name := range []string{"console/index.html", "console/app.js", "console/api.js", "console/validate.js"} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if m := inline.Find(b); m != nil {
			t.Errorf("%s has inline script or style: %q", name, m)
		}
		if m := remote.Find(b); m != nil {
			t.Errorf("%s loads from another origin: %q", name, m)
		}
	}
}

// TestHLSBundle checks the vendored hls.js against the version and hash that `make hlsjs`
// recorded in console/lib/hls.version.
func TestHLSBundle(t *testing.T) {
	t.Parallel()
	checkVendored(t, "console/lib/hls.version", "console/lib/hls.light.min.js", "hlsjs")
	lic, err := os.ReadFile("console/lib/hls.LICENSE")
	if err != nil || !strings.Contains(string(lic), "Apache License") {
		t.Fatalf("hls.LICENSE: %v", err)
	}
}
