package httpapi

import (
	"log/slog"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bunrouter"

	"github.com/mediajobs/mediajobs/adapters/mediatype"
	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/validator"
)

// validatorOptions are the options POST /ffmpeg/validate validates with: those of the jobs this
// server accepts.
func (a *api) validatorOptions() validator.Options {
	return validator.Options{AssetURLPrefix: a.uc.Uploads.URLPrefix(), AllowPrivateNetworks: a.opts.AllowPrivateNetworks}
}

type health struct {
	Status string `json:"status"`
}

func (a *api) healthz(w http.ResponseWriter, _ bunrouter.Request) error {
	return writeData(w, http.StatusOK, health{Status: "ok"})
}

func (a *api) readyz(w http.ResponseWriter, req bunrouter.Request) error {
	if a.opts.Ready != nil {
		if err := a.opts.Ready(req.Context()); err != nil {
			// The checker logs its causes (once per interval); the answer names what, not why.
			if p, ok := problem.As(err); ok && p.Code == problem.CodeUnavailable {
				return p
			}
			return &problem.Problem{Code: problem.CodeUnavailable, Message: "the service is not ready", RetryAfter: 5 * time.Second}
		}
	}
	return writeData(w, http.StatusOK, health{Status: "ready"})
}

// openapi serves the document itself, not wrapped in { data }.
func (a *api) openapi(w http.ResponseWriter, _ bunrouter.Request) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(a.opts.OpenAPI)
	return nil
}

func (a *api) assetContent(w http.ResponseWriter, req bunrouter.Request) error {
	as, blob, err := a.uc.Uploads.Open(req.Context(), caller(req), req.Param("id"))
	if err != nil {
		return err
	}
	defer blob.Close()
	ct := as.ContentType
	if ct == "" {
		ct = mediatype.ByName(as.Name)
	}
	w.Header().Set("Cache-Control", "private, no-cache")
	a.serveContent(w, req.Request, as.Name, ct, blob)
	return nil
}

// serveContent serves a blob with Range, HEAD and conditional requests. The standard library's
// own error answers (416 for an unsatisfiable range, 412 for a failed precondition) keep their
// status and take the error envelope.
func (a *api) serveContent(w http.ResponseWriter, r *http.Request, name, contentType string, b blob.Blob) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	// Browsers must take the type as given, and show inline only what is media: anything
	// else (text, HTML a job wrote, an SVG) downloads instead of rendering in our origin.
	h.Set("X-Content-Type-Options", "nosniff")
	disposition := "attachment"
	if mediatype.IsMedia(contentType) {
		disposition = "inline"
	}
	if name != "" {
		h.Set("Content-Disposition", disposition+"; filename=\""+strings.NewReplacer(`"`, "", `\`, "").Replace(name)+"\"")
	} else {
		h.Set("Content-Disposition", disposition)
	}
	if rng := r.Header.Get("Range"); rng != "" && (strings.Contains(rng, ",") || !wellFormedRange(rng) || b.Size() == 0) {
		// Several ranges at once would be a multipart answer, which costs the server far more
		// than the bytes it sends when they are thousands of small ones (and players ask for one
		// range at a time): the file is served whole instead, as RFC 9110 allows. So is it for a
		// malformed Range, which RFC 9110 §14.2 has a server ignore; ServeContent would answer
		// 416, which is for a range that is well-formed but lies outside the file. An empty file
		// has no range to give: ServeContent would answer a suffix of it 206 "bytes 0--1/0".
		r = r.Clone(r.Context())
		r.Header.Del("Range")
	}
	served := r
	if rng := r.Header.Get("Range"); zeroSuffix(rng) {
		// The last zero bytes are no range (RFC 9110 §14.1.2), which ServeContent would answer
		// 206 with nothing: it is asked for one past the end instead, so that its preconditions
		// still come first and the answer is 416.
		served = r.Clone(r.Context())
		served.Header.Set("Range", "bytes="+strconv.FormatInt(b.Size(), 10)+"-")
	}
	http.ServeContent(&contentWriter{ResponseWriter: w, r: r, size: b.Size(), log: a.log}, served, "", b.ModTime(), b)
}

// wellFormedRange tells a Range of one byte range (RFC 9110 §14.1.1, as ServeContent reads it:
// "bytes=first-[last]" with last not under first, or "bytes=-suffix") from any other.
func wellFormedRange(h string) bool {
	spec, ok := strings.CutPrefix(h, "bytes=")
	first, last, dash := strings.Cut(spec, "-")
	first, last = textproto.TrimString(first), textproto.TrimString(last)
	from, fromErr := rangePosition(first)
	to, toErr := rangePosition(last)
	switch {
	case !ok || !dash:
		return false
	case first == "": // a suffix: the last bytes
		return toErr == nil
	case last == "":
		return fromErr == nil
	}
	return fromErr == nil && toErr == nil && from <= to
}

// zeroSuffix tells a well-formed Range for the last zero bytes ("bytes=-0").
func zeroSuffix(h string) bool {
	spec, ok := strings.CutPrefix(h, "bytes=")
	first, last, _ := strings.Cut(spec, "-")
	n, err := rangePosition(textproto.TrimString(last))
	return ok && wellFormedRange(h) && textproto.TrimString(first) == "" && err == nil && n == 0
}

// rangePosition reads a position of a Range: digits only, within int64.
func rangePosition(s string) (int64, error) {
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseInt(s, 10, 64)
}

// contentWriter replaces http.ServeContent's plain-text error bodies by the error envelope.
type contentWriter struct {
	http.ResponseWriter
	r      *http.Request
	size   int64
	log    *slog.Logger
	failed bool
}

func (w *contentWriter) WriteHeader(status int) {
	if status < http.StatusBadRequest {
		w.ResponseWriter.WriteHeader(status)
		return
	}
	w.failed = true
	var err error
	switch status {
	case http.StatusRequestedRangeNotSatisfiable:
		err = protocolError(status, "range %q cannot be satisfied; the file has %d bytes", w.r.Header.Get("Range"), w.size)
	case http.StatusPreconditionFailed:
		err = protocolError(status, "a precondition of the request (If-Match, If-Unmodified-Since) failed")
	default:
		err = protocolError(status, "the request cannot be served: %s", http.StatusText(status))
	}
	writeError(w.ResponseWriter, w.r, err, w.log)
}

func (w *contentWriter) Write(p []byte) (int, error) {
	if w.failed {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}
