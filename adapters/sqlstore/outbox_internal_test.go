package sqlstore

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/mediajobs/mediajobs/core/job"
)

// TestOutboxInsertPrepared: on SQLite a job change's messages are written through the prepared
// hotOutbox, and the rows are those bun writes: the same text for the times, which the relay
// compares as text, and a key already there dropped.
func TestOutboxInsertPrepared(t *testing.T) {
	t.Parallel()
	s := openSQLiteT(t)
	ctx := context.Background()
	prepared, err := s.hot.stmt(ctx, s.w, hotOutbox)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 27, 12, 0, 0, 123456000, time.UTC)
	err = s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := enqueue(ctx, tx, nil, []job.Message{{Key: "bun", Topic: "t", Payload: []byte("p1")}}, now); err != nil {
			return err
		}
		return enqueue(ctx, tx, prepared, []job.Message{
			{Key: "prepared", Topic: "t", Payload: []byte("p2")},
			{Key: "bun", Topic: "t", Payload: []byte("again")}, // dropped: the key is there
		}, now)
	})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Key, Topic, Payload, CreatedAt, AvailableAt string
		Attempts                                    int
		Types                                       string // of payload, created_at, available_at
	}
	var rows []row
	if err := s.r.NewRaw(`SELECT "key", topic, CAST(payload AS TEXT) AS payload, attempts, CAST(created_at AS TEXT) AS created_at,
		CAST(available_at AS TEXT) AS available_at, typeof(payload) || ' ' || typeof(created_at) || ' ' || typeof(available_at) AS types
		FROM outbox ORDER BY seq`).Scan(ctx, &rows); err != nil {
		t.Fatal(err)
	}
	at := "2026-11-27 12:00:00.123456+00:00"
	want := []row{{"bun", "t", "p1", at, at, 0, "blob text text"}, {"prepared", "t", "p2", at, at, 0, "blob text text"}}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("outbox rows (-want +got):\n%s", diff)
	}
	// The relay takes both at their time, and neither a moment before.
	if got, err := s.ClaimMessages(ctx, job.ClaimMessagesParams{Limit: 10, Lease: time.Minute, Now: now.Add(-time.Microsecond)}); err != nil || len(got) != 0 {
		t.Fatalf("claimed before their time: %v, %v", got, err)
	}
	got, err := s.ClaimMessages(ctx, job.ClaimMessagesParams{Limit: 10, Lease: time.Minute, Now: now})
	if err != nil || len(got) != 2 || got[1].Key != "prepared" || string(got[1].Payload) != "p2" {
		t.Fatalf("claimed at their time: %+v, %v", got, err)
	}
}
