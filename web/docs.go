package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

// The API reference is the OpenAPI document rendered by Redoc (vendored from npm, see
// docs/redoc.version): the page, its script and the bundle are embedded, so /docs works offline
// and loads nothing from a CDN.
//
//go:embed docs/index.html docs/docs.js docs/docs.css docs/redoc.standalone.js docs/redoc.standalone.js.LICENSE.txt docs/redoc.LICENSE
var docsFiles embed.FS

// docsCSP allows the page's own scripts only: no inline script and no eval. Redoc's styling
// library writes <style> elements, hence 'unsafe-inline' for styles, and its search index runs in
// a worker made from a blob: URL. Nothing outside the origin loads: the one outside request
// Redoc would make, its sidebar logo, is taken out of the bundle as it is served (redocLogo).
const docsCSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"font-src 'self' data:; worker-src blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; " +
	"frame-ancestors 'none'; form-action 'none'"

// redocLogo is the address of the logo Redoc's sidebar footer shows, which its bundle loads from
// Redocly's CDN with no option to turn it off. The bundle is served with it replaced by
// redocNoLogo, an empty data: URL: the image fails to decode, Redoc's error handler then leaves
// the logo out, and no request leaves the page (nor does the CSP refuse one and log a
// violation). The committed file stays byte for byte npm's, as TestRedocBundle checks.
const (
	redocLogo   = "https://cdn.redoc.ly/redoc/logo-mini.svg"
	redocNoLogo = "data:,"
)

// docsFile is one file the reference serves, with its validator for conditional requests.
type docsFile struct {
	body        []byte
	contentType string
	etag        string
}

// staticFiles are files served from memory by path, each with a hash of its body as its ETag.
type staticFiles map[string]docsFile

func (fs staticFiles) add(name string, body []byte, contentType string) {
	sum := sha256.Sum256(body)
	fs[name] = docsFile{body: body, contentType: contentType, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
}

// serve answers a GET or HEAD of name (405 for other methods, 404 for an unknown name), with
// conditional requests and ranges handled by http.ServeContent.
func (fs staticFiles) serve(w http.ResponseWriter, r *http.Request, name string) {
	h := w.Header()
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	f, ok := fs[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h.Set("Content-Type", f.contentType)
	h.Set("ETag", f.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
}

// Docs serves the API reference: the page at its root and, beside it, openapiJSON (the document
// GET /openapi.json serves) at /openapi.json, which the page renders. The page refers to its
// files by relative URLs, so mount it under a prefix with http.StripPrefix; a request for the
// prefix without its trailing slash must be redirected to it (ServeMux does this for a
// "/docs/" pattern).
func Docs(openapiJSON []byte) http.Handler {
	files := staticFiles{}
	entries, err := docsFiles.ReadDir("docs")
	if err != nil {
		// The directory is embedded: reading it cannot fail.
		panic(err)
	}
	for _, e := range entries {
		b, err := docsFiles.ReadFile("docs/" + e.Name())
		if err != nil {
			panic(err)
		}
		if e.Name() == "redoc.standalone.js" {
			b = bytes.Replace(b, []byte(redocLogo), []byte(redocNoLogo), 1)
		}
		ct := mime.TypeByExtension(path.Ext(e.Name()))
		if strings.HasSuffix(e.Name(), "LICENSE") {
			ct = "text/plain; charset=utf-8"
		}
		files.add("/"+e.Name(), b, ct)
	}
	files["/"] = files["/index.html"]
	delete(files, "/index.html")
	files.add("/openapi.json", bytes.Clone(openapiJSON), "application/json")

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", docsCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		// Revalidate on each load: a new build is seen at once, and an unchanged megabyte of
		// Redoc costs a 304.
		h.Set("Cache-Control", "no-cache")
		files.serve(w, r, r.URL.Path)
	})
}
