// Package logctx carries the IDs a log line should name (the request's, the job's) in a
// context, and a slog.Handler that adds them to every record logged with that context, so that
// one grep follows a request from its arrival to its job's end.
package logctx

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
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
