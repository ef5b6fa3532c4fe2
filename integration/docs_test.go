package integration

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestDocsPage: the binary serves the API reference at /docs, with the document it serves at
// /openapi.json beside the page. Its rendering is tested in a browser in web/.
func TestDocsPage(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{Backend: sqliteBackend})
	get := func(path string) (*http.Response, []byte) {
		t.Helper()
		hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := hc.Get(s.Base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}
	if resp, _ := get("/docs"); resp.StatusCode/100 != 3 || resp.Header.Get("Location") != "/docs/" {
		t.Errorf("GET /docs: %d to %q, want a redirect to /docs/", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, page := get("/docs/")
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), `<script src="redoc.standalone.js">`) ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self';") {
		t.Fatalf("GET /docs/: %d, CSP %q\n%s", resp.StatusCode, resp.Header.Get("Content-Security-Policy"), page)
	}
	_, served := get("/openapi.json")
	resp, beside := get("/docs/openapi.json")
	if resp.StatusCode != http.StatusOK || !bytes.Equal(served, beside) {
		t.Errorf("GET /docs/openapi.json: %d, %d bytes; want the %d bytes of /openapi.json", resp.StatusCode, len(beside), len(served))
	}
}
