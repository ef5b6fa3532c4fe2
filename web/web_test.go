package web_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/web"
)

func TestHandler(t *testing.T) {
	t.Parallel()
	wasm := []byte("\x00asm\x01\x00\x00\x00")
	tests := []struct {
		name     string
		wasm     []byte
		path     string
		header   map[string]string
		want     int
		wantType string
		wantBody string
	}{
		{name: "page", wasm: wasm, path: "/", want: http.StatusOK, wantType: "text/html", wantBody: `id="command"`},
		{name: "script", wasm: wasm, path: "/playground.js", want: http.StatusOK, wantType: "text/javascript", wantBody: "mediajobsValidate"},
		{name: "shim", wasm: wasm, path: "/validator/wasi.js", want: http.StatusOK, wantType: "text/javascript", wantBody: "fd_write"},
		{name: "loader", wasm: wasm, path: "/validator/index.js", want: http.StatusOK, wantType: "text/javascript", wantBody: "export async function createValidator"},
		{name: "module", wasm: wasm, path: web.WASMPath, want: http.StatusOK, wantType: "application/wasm", wantBody: string(wasm)},
		{name: "module not built", path: web.WASMPath, want: http.StatusServiceUnavailable, wantBody: "make wasm"},
		{name: "unknown file", wasm: wasm, path: "/nope.js", want: http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			web.Handler(tt.wasm).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.path, nil))
			if rec.Code != tt.want {
				t.Fatalf("GET %s: status %d, want %d", tt.path, rec.Code, tt.want)
			}
			if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, tt.wantType) {
				t.Errorf("GET %s: Content-Type %q, want %q", tt.path, ct, tt.wantType)
			}
			if !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Errorf("GET %s: body lacks %q", tt.path, tt.wantBody)
			}
			if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "'wasm-unsafe-eval'") {
				t.Errorf("GET %s: Content-Security-Policy %q does not allow compiling WASM", tt.path, csp)
			}
		})
	}
}

// TestWASMRevalidation checks that a reload with the module's ETag costs a 304, not 3 MB.
func TestWASMRevalidation(t *testing.T) {
	t.Parallel()
	h := web.Handler([]byte("\x00asm\x01\x00\x00\x00"))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, web.WASMPath, nil))
	etag := rec.Header().Get("ETag")
	if etag == "" {
		t.Fatal("no ETag on the module")
	}
	req := httptest.NewRequest(http.MethodGet, web.WASMPath, nil)
	req.Header.Set("If-None-Match", etag)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified {
		t.Errorf("GET with If-None-Match: status %d, want 304", rec.Code)
	}
}
