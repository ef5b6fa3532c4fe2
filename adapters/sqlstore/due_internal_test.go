package sqlstore

import (
	"context"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/destination"
	"github.com/mediajobs/mediajobs/core/webhook"
)

// TestIdlePollsLeaveTheWriterFree: on SQLite a delivery poller that finds nothing due answers
// from the read pool (anyDue) and does not wait for the single writer, which a job change may
// hold; before, every poll took it, twice a second from the webhook deliverer alone.
func TestIdlePollsLeaveTheWriterFree(t *testing.T) {
	t.Parallel()
	s := openSQLiteT(t)
	ctx := context.Background()
	held, err := s.w.BeginTx(ctx, nil) // the writer's one connection, taken
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback()
	// With the writer held, a claim that took it would wait out this deadline and fail.
	pollCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	now := time.Now()
	if ds, err := s.ClaimDeliveries(pollCtx, webhook.ClaimParams{Limit: 8, Lease: time.Minute, Now: now}); err != nil || len(ds) != 0 {
		t.Errorf("webhook deliveries with nothing due: %v, %v; want none at once", ds, err)
	}
	if ds, err := s.ClaimJobDeliveries(pollCtx, destination.ClaimParams{Limit: 8, Lease: time.Minute, Now: now}); err != nil || len(ds) != 0 {
		t.Errorf("destination deliveries with nothing due: %v, %v; want none at once", ds, err)
	}
}
