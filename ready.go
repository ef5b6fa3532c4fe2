package mediajobs

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/retry"
)

// readiness answers /readyz: the store answers and takes a write, the broker answers (an
// in-process bus always does), and blob storage takes a write. The answer is kept for a second, so that a busy prober costs one probe a second; a
// failure is logged once per interval while it lasts, and the service turns ready again by
// itself once the fault is gone.
type readiness struct {
	store interface {
		Ping(context.Context) error
		ProbeWrite(context.Context) error
	}
	blobs  blob.Store
	broker pinger
	log    *slog.Logger

	mu      sync.Mutex
	checked time.Time
	last    error
	gate    *retry.Backoff
}

// probeBlob is the key of the blob probe, outside every account's keys.
const probeBlob = "health/probe"

type pinger interface{ Ping(context.Context) error }

func newReadiness(store interface {
	Ping(context.Context) error
	ProbeWrite(context.Context) error
}, blobs blob.Store, broker pinger, log *slog.Logger) *readiness {
	return &readiness{store: store, blobs: blobs, broker: broker, log: log, gate: retry.New(time.Second, time.Minute)}
}

func (r *readiness) check(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.checked) < time.Second {
		return r.last
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	err := r.probe(ctx)
	r.checked, r.last = time.Now(), err
	if err == nil {
		r.gate.Reset()
		return nil
	}
	if ok, muted := r.gate.Log(); ok {
		r.log.Error("not ready", "err", err, "unlogged", muted)
	}
	return err
}

func (r *readiness) probe(ctx context.Context) error {
	unavailable := func(what string) error {
		return &problem.Problem{Code: problem.CodeUnavailable, RetryAfter: 5 * time.Second, Message: "not ready: " + what}
	}
	if err := r.store.Ping(ctx); err != nil {
		return errors.Join(unavailable("the store does not answer"), err)
	}
	if err := r.store.ProbeWrite(ctx); err != nil {
		return errors.Join(unavailable("the store cannot be written"), err)
	}
	if err := r.broker.Ping(ctx); err != nil {
		return errors.Join(unavailable("the broker does not answer"), err)
	}
	if _, err := r.blobs.Put(ctx, probeBlob, bytes.NewReader(make([]byte, 4096)), 0); err != nil {
		return errors.Join(unavailable("blob storage cannot be written"), err)
	}
	if err := r.blobs.Delete(ctx, probeBlob); err != nil {
		return errors.Join(unavailable("blob storage cannot be written"), err)
	}
	return nil
}
