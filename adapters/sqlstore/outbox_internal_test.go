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

// TestOutboxClaimPrepared: on SQLite the relay's claim is one prepared statement; it takes the
// oldest messages first, no more than the limit, counts the attempt, and leases them until a
// time written as bun writes times, so the next claim compares it as text.
func TestOutboxClaimPrepared(t *testing.T) {
	t.Parallel()
	s := openSQLiteT(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 28, 12, 0, 0, 500000000, time.UTC)
	var msgs []job.Message
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		msgs = append(msgs, job.Message{Key: k, Topic: "t", Payload: []byte(k)})
	}
	if err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error { return enqueue(ctx, tx, nil, msgs, now) }); err != nil {
		t.Fatal(err)
	}
	keys := func(ms []job.Message) (out []string) {
		for _, m := range ms {
			out = append(out, m.Key+":"+string(m.Payload))
			if m.Attempts != 1 || !m.CreatedAt.Equal(now) {
				t.Errorf("message %s: attempts %d, created %v", m.Key, m.Attempts, m.CreatedAt)
			}
		}
		return out
	}
	first, err := s.ClaimMessages(ctx, job.ClaimMessagesParams{Limit: 3, Lease: time.Minute, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.ClaimMessages(ctx, job.ClaimMessagesParams{Limit: 3, Lease: time.Minute, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a:a", "b:b", "c:c", "d:d", "e:e"}, append(keys(first), keys(second)...)); diff != "" {
		t.Errorf("claimed in two passes of 3 (-want +got):\n%s", diff)
	}
	var leased []string
	if err := s.r.NewRaw(`SELECT DISTINCT CAST(available_at AS TEXT) FROM outbox`).Scan(ctx, &leased); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"2026-11-28 12:01:00.5+00:00"}, leased); diff != "" {
		t.Errorf("leased until (-want +got):\n%s", diff)
	}
	if early, err := s.ClaimMessages(ctx, job.ClaimMessagesParams{Limit: 10, Lease: time.Minute, Now: now.Add(time.Minute - time.Microsecond)}); err != nil || len(early) != 0 {
		t.Fatalf("claimed before the lease ended: %v, %v", early, err)
	}
	again, err := s.ClaimMessages(ctx, job.ClaimMessagesParams{Limit: 10, Lease: time.Minute, Now: now.Add(time.Minute)})
	if err != nil || len(again) != 5 || again[0].Key != "a" || again[4].Attempts != 2 {
		t.Fatalf("claimed once the lease ended: %+v, %v", again, err)
	}
}
