package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/mediajobs/mediajobs/core/job"
)

// errorBody is { error: { code, message } }.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    job.Code `json:"code"`
	Message string   `json:"message"`
}

// statusError keeps an HTTP protocol status that the code table has no code for (405, 412, 416):
// its code is still the table's, VALIDATION_ERROR.
type statusError struct {
	status int
	err    error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

func protocolError(status int, format string, args ...any) error {
	return &statusError{status: status, err: job.Reject(job.CodeValidation, format, args...)}
}

func notFoundRoute(method, path string) error {
	return job.Reject(job.CodeNotFound, "no route %s %s", method, path)
}

var errPanic = errors.New("panic in handler")

const internalMessage = "an internal error occurred; it has been logged"

// WriteError answers a request with the error envelope of err: the code from job.CodeOf, the
// status from Code.HTTPStatus. Middleware plugged into Options.Authenticated rejects through it.
// A *job.Problem's message is shown as written; any other error is logged and shown as a
// generic message, so that internal details never leak.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	writeError(w, r, err, slog.Default())
}

func (a *api) writeError(w http.ResponseWriter, r *http.Request, err error) {
	writeError(w, r, err, a.log)
}

func writeError(w http.ResponseWriter, r *http.Request, err error, log *slog.Logger) {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		err = job.Reject(job.CodePayloadTooLarge, "request body exceeds the %d byte limit", tooBig.Limit)
	}
	code := job.CodeOf(err)
	status := code.HTTPStatus()
	var se *statusError
	if errors.As(err, &se) {
		status = se.status
	}
	msg := internalMessage
	var p *job.Problem
	if errors.As(err, &p) {
		msg = p.Message
	} else {
		log.Error("httpapi: internal error", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	h := w.Header()
	if code == job.CodeUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="mediajobs"`)
	}
	h.Del("Content-Length")
	h.Del("Content-Disposition")
	if status != http.StatusRequestedRangeNotSatisfiable {
		// 416 keeps ServeContent's Content-Range: bytes */<size>.
		h.Del("Content-Range")
	}
	writeJSON(w, status, errorBody{Error: errorDetail{Code: code, Message: msg}})
}

// dataBody is { data: ... }.
type dataBody struct {
	Data any `json:"data"`
}

func writeData(w http.ResponseWriter, status int, v any) error {
	writeJSON(w, status, dataBody{Data: v})
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Our own types always marshal; this keeps a mistake from becoming a half-written body.
		status = http.StatusInternalServerError
		b = fmt.Appendf(nil, `{"error":{"code":%q,"message":%q}}`, job.CodeInternal, internalMessage)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
