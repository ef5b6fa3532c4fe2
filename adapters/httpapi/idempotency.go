package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"

	"github.com/uptrace/bunrouter"

	"github.com/mediajobs/mediajobs/core/idempotency"
	"github.com/mediajobs/mediajobs/core/problem"
)

// HeaderIdempotencyKey names a request that is safe to repeat; HeaderReplayed marks an answer
// given again from an earlier request with the same key.
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderReplayed       = "Idempotent-Replayed"
)

// storedResponse is what a key keeps of its first response: enough to answer it again byte
// for byte.
type storedResponse struct {
	Status   int             `json:"status"`
	Location string          `json:"location,omitempty"`
	Body     json.RawMessage `json:"body"`
}

// idempotentJSON makes a handler of a JSON body honour Idempotency-Key: the body's canonical
// JSON (keys sorted, spacing dropped) is its fingerprint, so a client that re-encodes the
// same request repeats it.
func (a *api) idempotentJSON(op string, h bunrouter.HandlerFunc) bunrouter.HandlerFunc {
	return func(w http.ResponseWriter, req bunrouter.Request) error {
		key, ok := req.Header[http.CanonicalHeaderKey(HeaderIdempotencyKey)]
		if !ok {
			return h(w, req)
		}
		one, err := oneKey(key)
		if err != nil {
			return err
		}
		body, err := a.readJSON(w, req)
		if err != nil {
			return err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		call := idempotency.Call{AccountID: caller(req).ID, Key: one, Operation: op, Fingerprint: fingerprintJSON(body)}
		tk, prior, err := a.uc.Idempotency.Begin(req.Context(), call)
		if err != nil {
			return err
		}
		if prior != nil {
			return a.replay(w, prior)
		}
		return a.keep(w, req, tk, func(w http.ResponseWriter) (string, error) { return "", h(w, req) })
	}
}

// oneKey is the request's one Idempotency-Key: given twice, the request is refused rather
// than kept under the first (a repeat with the second would run again).
func oneKey(vs []string) (string, error) {
	if len(vs) != 1 {
		return "", problem.Reject(problem.CodeValidation, "the %s header is given %d times; give it once", HeaderIdempotencyKey, len(vs))
	}
	return vs[0], nil
}

// keep runs the request under a held key, answers its response and keeps it for repeats; a
// refused request releases the key, since it did nothing. run returns the request's
// fingerprint when it learnt it while working (a streamed upload).
func (a *api) keep(w http.ResponseWriter, req bunrouter.Request, tk *idempotency.Ticket, run func(http.ResponseWriter) (string, error)) error {
	rec := &recorder{header: w.Header()}
	fp, err := run(rec)
	if err != nil || rec.status < 200 || rec.status > 299 {
		if rerr := tk.Release(req.Context()); rerr != nil {
			a.log.Error("httpapi: release idempotency key", "error", rerr)
		}
		if err != nil {
			return err
		}
	} else {
		stored, merr := json.Marshal(storedResponse{Status: rec.status, Location: w.Header().Get("Location"),
			Body: bytes.TrimSpace(rec.body.Bytes())})
		if merr == nil {
			merr = tk.Complete(req.Context(), fp, stored)
		}
		if merr != nil {
			// The work is done and answered; a repeat waits out the key's lease, then runs again.
			a.log.Error("httpapi: keep idempotent response", "error", merr)
		}
	}
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	w.WriteHeader(rec.status)
	_, _ = w.Write(rec.body.Bytes())
	return nil
}

// replay answers the response a key kept.
func (a *api) replay(w http.ResponseWriter, prior *idempotency.Record) error {
	var r storedResponse
	if err := json.Unmarshal(prior.Response, &r); err != nil {
		return err
	}
	h := w.Header()
	if r.Location != "" {
		h.Set("Location", r.Location)
	}
	h.Set(HeaderReplayed, "true")
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(r.Status)
	_, _ = w.Write(append(r.Body, '\n'))
	return nil
}

// fingerprintJSON hashes the canonical form of a JSON body; a body that is not JSON (the
// handler refuses it) is hashed as sent.
func fingerprintJSON(body []byte) string {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err == nil {
		if canon, err := json.Marshal(v); err == nil {
			body = canon
		}
	}
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// recorder holds a response until it is kept.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
