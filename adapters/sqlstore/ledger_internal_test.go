package sqlstore

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/billing"
)

// TestLedgerAppendPrepared: on SQLite the ledger's append and the balance's move are prepared
// statements, and the rows are those bun wrote before them: the time as the same text, a job
// ID or NULL, and an entry already there appended once.
func TestLedgerAppendPrepared(t *testing.T) {
	t.Parallel()
	s := openSQLiteT(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 27, 12, 0, 0, 123456789, time.UTC)
	entries := []billing.Entry{
		{Key: "grant", AccountID: "acc_1", Kind: billing.KindGrant, Amount: 100, Note: "welcome", CreatedAt: at},
		{Key: "charge", AccountID: "acc_1", Kind: billing.KindCharge, Amount: -7, JobID: "job_1", CreatedAt: at},
	}
	for range 2 { // the second time, both are there already
		if _, err := s.Append(ctx, entries...); err != nil {
			t.Fatal(err)
		}
	}
	type row struct {
		Key, CreatedAt, Types string
		JobID                 *string
	}
	var rows []row
	if err := s.r.NewRaw(`SELECT "key", CAST(created_at AS TEXT) AS created_at, typeof(created_at) || ' ' || typeof(job_id) AS types, job_id
		FROM ledger ORDER BY seq`).Scan(ctx, &rows); err != nil {
		t.Fatal(err)
	}
	job := "job_1"
	want := []row{{"grant", "2026-11-27 12:00:00.123456+00:00", "text null", nil}, {"charge", "2026-11-27 12:00:00.123456+00:00", "text text", &job}}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("ledger rows (-want +got):\n%s", diff)
	}
	if b, err := s.Balance(ctx, "acc_1"); err != nil || b != 93 {
		t.Errorf("balance %d, %v; want 93", b, err)
	}
}
