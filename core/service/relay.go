package service

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/retry"
)

// Handler handles one outbox message. It must be idempotent: after a crash, a message may be
// handled again.
type Handler func(ctx context.Context, m job.Message) error

// Relay moves outbox messages to their topic's handler after the change that wrote them
// committed. A message whose handler fails comes back after a backoff that grows with its
// attempts (1 s doubling to MaxRetryDelay, jittered); the failures of a topic are logged once
// per interval, not once per try.
type Relay struct {
	Outbox   job.Outbox
	Clock    clock.Clock
	Handlers map[string]Handler
	// Lease is how long a claimed message stays with this relay; default 30 s.
	Lease time.Duration
	// MaxRetryDelay bounds a failed message's backoff; default 5 minutes.
	MaxRetryDelay time.Duration
	Log           *slog.Logger

	mu   sync.Mutex
	logs map[string]*retry.Backoff
}

// retryAt is when a message whose handler failed on its attempt-th try comes back.
func (r *Relay) retryAt(now time.Time, attempts int) time.Time {
	maxDelay := r.MaxRetryDelay
	if maxDelay <= 0 {
		maxDelay = 5 * time.Minute
	}
	b := retry.New(time.Second, maxDelay)
	var d time.Duration
	for range max(attempts, 1) {
		d = b.Next()
	}
	return now.Add(d)
}

// logFailure logs a handler's failure, once per interval per topic.
func (r *Relay) logFailure(m job.Message, err error) {
	if r.Log == nil {
		return
	}
	r.mu.Lock()
	if r.logs == nil {
		r.logs = map[string]*retry.Backoff{}
	}
	gate, ok := r.logs[m.Topic]
	if !ok {
		gate = retry.New(time.Second, time.Minute)
		gate.Now = r.Clock.Now
		r.logs[m.Topic] = gate
	}
	logNow, muted := gate.Log()
	r.mu.Unlock()
	if logNow {
		r.Log.Warn("outbox handler failed; the message is retried with backoff", "topic", m.Topic, "key", m.Key,
			"attempt", m.Attempts, "err", err, "unlogged", muted)
	}
}

// Drain handles the messages available when it claims, a batch at a time, until a batch comes
// back short or the outbox fails; it returns how many it handled. The handled messages of a
// batch are acknowledged together, in one write. A short batch was all there was: a change that
// writes a message after the claim, a handler's own included, wakes the relay for another pass
// (RelayConfig.Wake), so Drain does not claim once more only to find the outbox empty.
func (r *Relay) Drain(ctx context.Context) (int, error) {
	lease := r.Lease
	if lease <= 0 {
		lease = 30 * time.Second
	}
	const limit = 64
	n := 0
	for {
		msgs, err := r.Outbox.ClaimMessages(ctx, job.ClaimMessagesParams{Limit: limit, Lease: lease, Now: r.Clock.Now()})
		if err != nil || len(msgs) == 0 {
			return n, err
		}
		handled, err := r.handle(ctx, msgs)
		if aerr := r.Outbox.AckMessages(ctx, handled); aerr != nil {
			return n, fmt.Errorf("ack %d messages: %w", len(handled), aerr)
		}
		n += len(handled)
		if err != nil || len(msgs) < limit {
			return n, err
		}
	}
}

// handle hands each message to its topic's handler and returns the keys of those handled. A
// message whose handler failed comes back after a backoff; an error is the outbox's own.
func (r *Relay) handle(ctx context.Context, msgs []job.Message) (handled []string, err error) {
	for _, m := range msgs {
		h, ok := r.Handlers[m.Topic]
		if !ok {
			// A message nobody handles would come back forever; keep it for a handler a
			// newer release may bring, and say so.
			if r.Log != nil {
				r.Log.Warn("outbox message has no handler", "topic", m.Topic, "key", m.Key)
			}
			continue
		}
		if err := h(ctx, m); err != nil {
			r.logFailure(m, err)
			if rerr := r.Outbox.RetryMessage(ctx, m.Key, r.retryAt(r.Clock.Now(), m.Attempts)); rerr != nil {
				return handled, fmt.Errorf("retry %s: %w", m.Key, rerr)
			}
			continue
		}
		handled = append(handled, m.Key)
	}
	return handled, nil
}
