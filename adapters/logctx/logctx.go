// Package logctx carries the IDs a log line should name (the request's, the job's) in a
// context, and a slog.Handler that adds them to every record logged with that context, so that
// one grep follows a request from its arrival to its job's end.
package logctx

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
)

type key int

const (
	requestKey key = iota
	jobKey
)

// Attribute names of the IDs.
const (
	RequestID = "request_id"
	JobID     = "job"
)

// WithRequest returns ctx carrying the request ID.
func WithRequest(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestKey, id)
}

// Request is the request ID ctx carries, or "".
func Request(ctx context.Context) string {
	id, _ := ctx.Value(requestKey).(string)
	return id
}

// WithJob returns ctx carrying the job ID.
func WithJob(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, jobKey, id)
}

// HeaderRequestID carries a request's ID, both ways.
const HeaderRequestID = "X-Request-Id"

// SaneRequestID keeps a client's request ID only if it is short and plain, so that it can
// neither forge log lines nor bloat them.
func SaneRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// Middleware gives every request an ID, the client's X-Request-Id when it is sane, else a
// fresh one: it is set on the answer and carried in the request's context for the log.
func Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(HeaderRequestID)
		if !SaneRequestID(id) {
			id = NewRequestID()
		}
		w.Header().Set(HeaderRequestID, id)
		next.ServeHTTP(w, r.WithContext(WithRequest(r.Context(), id)))
	})
}

// NewRequestID returns a fresh random request ID.
func NewRequestID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "req_" + hex.EncodeToString(b)
}

// Handler adds the context's IDs to each record.
type Handler struct{ slog.Handler }

// NewHandler wraps h.
func NewHandler(h slog.Handler) Handler { return Handler{h} }

// Handle implements slog.Handler.
func (h Handler) Handle(ctx context.Context, r slog.Record) error {
	if ctx != nil {
		if id, ok := ctx.Value(requestKey).(string); ok && id != "" {
			r.AddAttrs(slog.String(RequestID, id))
		}
		if id, ok := ctx.Value(jobKey).(string); ok && id != "" {
			r.AddAttrs(slog.String(JobID, id))
		}
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h Handler) WithAttrs(as []slog.Attr) slog.Handler { return Handler{h.Handler.WithAttrs(as)} }

// WithGroup implements slog.Handler.
func (h Handler) WithGroup(name string) slog.Handler { return Handler{h.Handler.WithGroup(name)} }
