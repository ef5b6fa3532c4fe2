package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"time"
)

//go:embed static
var static embed.FS

// ValidatorPackageFiles are the files of the @mediajobs/validator package (js/validator/src) that
// the playground and the console load validator.wasm with, kept in static/validator: go:embed
// cannot reach outside this module, so the package's files are copied here, and
// TestValidatorPackageCopy fails when a copy differs from its source. After changing the package,
// run `go generate ./web` at the repository root.
//
//go:generate sh -c "cp ../js/validator/src/index.js ../js/validator/src/wasi.js static/validator/"
var ValidatorPackageFiles = []string{"index.js", "wasi.js"}

// WASMPath is where the page fetches validator.wasm, relative to the Handler's root.
const WASMPath = "/validator.wasm"

// Handler serves the playground at its root and wasm, the bytes of validator.wasm, at WASMPath.
// The page refers to its files by relative URLs, so the handler may be mounted under a prefix
// with http.StripPrefix.
//
// The module is passed in rather than embedded because it is built by `make wasm` into the
// validator module, out of reach of go:embed here. A nil wasm serves 503 at WASMPath, and the
// page says to build it.
func Handler(wasm []byte) http.Handler {
	files, err := fs.Sub(static, "static")
	if err != nil {
		// fs.Sub fails only on an invalid path name, and "static" is a literal.
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /", http.FileServerFS(files))
	mux.Handle("GET "+WASMPath, wasmHandler(wasm))
	return headers(mux)
}

func wasmHandler(wasm []byte) http.Handler {
	if wasm == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "validator.wasm is not built: run `make wasm` and restart", http.StatusServiceUnavailable)
		})
	}
	sum := sha256.Sum256(wasm)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// WebAssembly.instantiateStreaming requires exactly this type.
		w.Header().Set("Content-Type", "application/wasm")
		w.Header().Set("ETag", etag)
		// ServeContent answers If-None-Match with 304, so a reload costs no 3 MB download.
		http.ServeContent(w, r, "validator.wasm", time.Time{}, bytes.NewReader(wasm))
	})
}

// csp allows the page's own scripts and styles and nothing else; 'wasm-unsafe-eval' is what
// lets it compile validator.wasm without allowing eval of JavaScript.
const csp = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; " +
	"img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

func headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		// Revalidate on every load so a new build is picked up at once; the wasm has an ETag
		// and the other files are small.
		h.Set("Cache-Control", "no-cache")
		next.ServeHTTP(w, r)
	})
}
