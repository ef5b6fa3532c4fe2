package service

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/job"
)

// Handler handles one outbox message. It must be idempotent: after a crash, a message may be
// handled again.
type Handler func(ctx context.Context, m job.Message) error

// Relay moves outbox messages to their topic's handler after the change that wrote them
// committed. A message whose handler fails comes back after its lease.
type Relay struct {
	Outbox   job.Outbox
	Clock    clock.Clock
	Handlers map[string]Handler
	// Lease is how long a claimed message stays with this relay; default 30 s.
	Lease time.Duration
	Log   *slog.Logger
}

// Drain handles the messages available now, a batch at a time, until none is left or one
// fails; it returns how many it handled.
func (r *Relay) Drain(ctx context.Context) (int, error) {
	lease := r.Lease
	if lease <= 0 {
		lease = 30 * time.Second
	}
	n := 0
	for {
		msgs, err := r.Outbox.ClaimMessages(ctx, job.ClaimMessagesParams{Limit: 64, Lease: lease, Now: r.Clock.Now()})
		if err != nil || len(msgs) == 0 {
			return n, err
		}
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
				if r.Log != nil {
					r.Log.Warn("outbox handler failed; retried after its lease", "topic", m.Topic, "key", m.Key, "attempt", m.Attempts, "err", err)
				}
				continue
			}
			if err := r.Outbox.AckMessage(ctx, m.Key); err != nil {
				return n, fmt.Errorf("ack %s: %w", m.Key, err)
			}
			n++
		}
	}
}
