package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/mediajobs/mediajobs/adapters/logctx"

	"github.com/mediajobs/mediajobs/core/problem"
)

// errorBody is { error: { code, message } }.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    problem.Code `json:"code"`
	Message string       `json:"message"`
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
	return &statusError{status: status, err: problem.Reject(problem.CodeValidation, format, args...)}
}

func notFoundRoute(method, path string) error {
	return problem.Reject(problem.CodeNotFound, "no route %s %s", method, path)
}

var errPanic = errors.New("panic in handler")

const internalMessage = "an internal error occurred; it has been logged"

// statusOf is the HTTP status of a request rejected with a code. Codes that only appear on
// failed jobs (RUNNER_ERROR, ...) answer 500: a request should never be rejected with them.
var statusOf = map[problem.Code]int{
	problem.CodeValidation:           http.StatusBadRequest,
	problem.CodePlanLimit:            http.StatusForbidden,
	problem.CodeRateLimited:          http.StatusTooManyRequests,
	problem.CodeNotFound:             http.StatusNotFound,
	problem.CodeUnauthorized:         http.StatusUnauthorized,
	problem.CodeForbidden:            http.StatusForbidden,
	problem.CodeInsufficientCredits:  http.StatusPaymentRequired,
	problem.CodeConflict:             http.StatusConflict,
	problem.CodeIdempotencyKeyReused: http.StatusConflict,
	problem.CodePayloadTooLarge:      http.StatusRequestEntityTooLarge,
	problem.CodeUnavailable:          http.StatusServiceUnavailable,
	problem.CodeInternal:             http.StatusInternalServerError,
}

// Status is the HTTP status of a request rejected with code.
func Status(code problem.Code) int {
	if s, ok := statusOf[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// WriteError answers a request with the error envelope of err: the code from problem.CodeOf,
// the status from Status. Middleware plugged into Options.Authenticated rejects through it.
// A *problem.Problem's message is shown as written; any other error is logged and shown as a
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
		err = problem.Reject(problem.CodePayloadTooLarge, "request body exceeds the %d byte limit", tooBig.Limit)
	}
	code := problem.CodeOf(err)
	status := Status(code)
	var se *statusError
	if errors.As(err, &se) {
		status = se.status
	}
	msg := internalMessage
	var p *problem.Problem
	if errors.As(err, &p) {
		msg = p.Message
		if p.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(seconds(p.RetryAfter)))
		}
	} else {
		// The cause is the operator's; the client gets the request ID to quote.
		id := logctx.Request(r.Context())
		log.ErrorContext(r.Context(), "httpapi: internal error", "method", r.Method, "path", r.URL.Path, "error", err)
		if id != "" {
			msg = internalMessage + " (request " + id + ")"
		}
	}
	h := w.Header()
	if code == problem.CodeUnauthorized {
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
		b = fmt.Appendf(nil, `{"error":{"code":%q,"message":%q}}`, problem.CodeInternal, internalMessage)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if h.Get("Cache-Control") == "" { // a handler of public, unchanging data may allow caching
		h.Set("Cache-Control", "no-store")
	}
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
