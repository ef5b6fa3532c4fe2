package web

import (
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

// The console is plain ES modules and CSS with no build step, plus hls.js vendored from npm
// (console/lib/hls.version): everything it loads is embedded here.
//
//go:embed console
var consoleFiles embed.FS

// ConsolePrefix is where the console's assets live; the page itself is served at "/".
const ConsolePrefix = "/console/"

// consoleCSP allows the console's own scripts only, no inline script or eval; 'wasm-unsafe-eval'
// lets it compile validator.wasm. media-src and worker-src allow blob: because hls.js plays a
// stream through a MediaSource object URL. Media and downloads come from the service's own
// signed URLs (/dl/, /v/), hence 'self'.
const consoleCSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; " +
	"img-src 'self' data: blob:; media-src 'self' blob:; worker-src 'self' blob:; connect-src 'self'; " +
	"object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

// Console serves the web console: its page at "/" and its files under ConsolePrefix, with
// validator.wasm (wasm, as Handler takes it) at ConsolePrefix+"validator.wasm" and the
// @mediajobs/validator package's loader, which the playground uses too, under
// ConsolePrefix+"validator/". Mount it for "GET /{$}" and ConsolePrefix; it talks to the public
// API of the same origin only.
func Console(wasm []byte) http.Handler {
	files := staticFiles{}
	add := func(name string, body []byte) {
		ct := mime.TypeByExtension(path.Ext(name))
		if strings.HasSuffix(name, "LICENSE") || strings.HasSuffix(name, ".version") {
			ct = "text/plain; charset=utf-8"
		}
		files.add(name, body, ct)
	}
	err := fs.WalkDir(consoleFiles, "console", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := consoleFiles.ReadFile(p)
		if err != nil {
			return err
		}
		add(ConsolePrefix+strings.TrimPrefix(p, "console/"), b)
		return nil
	})
	if err != nil {
		// The tree is embedded: walking it cannot fail.
		panic(err)
	}
	// The validator package's files are the playground's, served here too.
	for _, name := range ValidatorPackageFiles {
		b, err := static.ReadFile("static/validator/" + name)
		if err != nil {
			panic(err)
		}
		add(ConsolePrefix+"validator/"+name, b)
	}
	files["/"] = files[ConsolePrefix+"index.html"]
	delete(files, ConsolePrefix+"index.html")
	wasmFile := wasmHandler(wasm)

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", consoleCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		if r.URL.Path == ConsolePrefix+"validator.wasm" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			wasmFile.ServeHTTP(w, r)
			return
		}
		files.serve(w, r, r.URL.Path)
	})
}
