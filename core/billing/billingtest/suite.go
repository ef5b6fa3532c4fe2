package billingtest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/porttest"
)

// Features says what a billing.Ledger adapter can do. Every adapter (memory, SQLite, PostgreSQL)
// does all the suite asks, so it has no field yet: a new adapter passes every test, and a field
// is added here only when a real adapter cannot do something the others can.
type Features struct{}

// Constructor returns an empty ledger of its own, cleaned up by the adapter's test.
type Constructor func(t *testing.T) billing.Ledger

// TestLedger runs the shared billing.Ledger suite: each test below, in parallel, against ledgers
// that newLedger makes. An adapter's own test calls it once per backend.
func TestLedger(t *testing.T, f Features, newLedger Constructor) {
	t.Helper()
	tests := []func(t *testing.T, f Features, newLedger Constructor){
		TestBalanceIsTheSumAndAppendIsIdempotent,
		TestInvalidEntriesWriteNothing,
		TestEntriesNewestFirstPaged,
		TestConcurrentChargesAppliedOnce,
	}
	porttest.Run(t, f, newLedger, tests...)
}

// base is the time the suite's entries are written at.
var base = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// TestBalanceIsTheSumAndAppendIsIdempotent: an account's balance is the sum of its entries, and an
// entry whose key is written already is not written again.
func TestBalanceIsTheSumAndAppendIsIdempotent(t *testing.T, f Features, newLedger Constructor) {
	t.Parallel()
	l, ctx := newLedger(t), context.Background()
	if b, err := l.Balance(ctx, "acc_1"); err != nil || b != 0 {
		t.Fatalf("empty balance = %d, %v", b, err)
	}
	first := []billing.Entry{
		{Key: "starter:acc_1", AccountID: "acc_1", Kind: billing.KindGrant, Amount: 600, CreatedAt: base},
		{Key: "charge:job_1", AccountID: "acc_1", Kind: billing.KindCharge, Amount: -7, JobID: "job_1", Note: "cpu, 7 s", CreatedAt: base.Add(time.Second)},
		{Key: "starter:acc_2", AccountID: "acc_2", Kind: billing.KindGrant, Amount: 5, CreatedAt: base},
	}
	got, err := l.Append(ctx, first...)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Seq <= 0 || got[1].Seq <= got[0].Seq {
		t.Fatalf("Append returned %+v; want three entries with increasing Seq", got)
	}
	// The same keys again, in any mix with new ones, write only the new ones.
	again, err := l.Append(ctx, first[1], billing.Entry{Key: "purchase:p1", AccountID: "acc_1", Kind: billing.KindPurchase,
		Amount: 100, Note: "small", CreatedAt: base.Add(2 * time.Second)}, first[1])
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 1 || again[0].Key != "purchase:p1" {
		t.Fatalf("second Append wrote %+v; want only purchase:p1", again)
	}
	for acc, want := range map[string]int64{"acc_1": 693, "acc_2": 5, "acc_3": 0} {
		if b, err := l.Balance(ctx, acc); err != nil || b != want {
			t.Errorf("balance of %s = %d, %v; want %d", acc, b, err, want)
		}
	}
	spent, err := l.Spent(ctx, "acc_1", base)
	if err != nil || spent != 7 {
		t.Errorf("Spent = %d, %v; want 7", spent, err)
	}
	if spent, _ := l.Spent(ctx, "acc_1", base.Add(time.Hour)); spent != 0 {
		t.Errorf("Spent after the charge = %d; want 0", spent)
	}
}

// TestInvalidEntriesWriteNothing: an Append holding an entry with no key, no account, an unknown
// kind or a charge of the wrong sign writes none of its entries.
func TestInvalidEntriesWriteNothing(t *testing.T, f Features, newLedger Constructor) {
	t.Parallel()
	l, ctx := newLedger(t), context.Background()
	for _, bad := range []billing.Entry{
		{AccountID: "acc_1", Kind: billing.KindGrant, Amount: 1},
		{Key: "k", Kind: billing.KindGrant, Amount: 1},
		{Key: "k", AccountID: "acc_1", Kind: "gift", Amount: 1},
		{Key: "k", AccountID: "acc_1", Kind: billing.KindCharge, Amount: 1},
	} {
		ok := billing.Entry{Key: "ok", AccountID: "acc_1", Kind: billing.KindGrant, Amount: 1, CreatedAt: base}
		if _, err := l.Append(ctx, ok, bad); err == nil {
			t.Errorf("Append of %+v succeeded", bad)
		}
	}
	if b, _ := l.Balance(ctx, "acc_1"); b != 0 {
		t.Fatalf("balance after refused appends = %d; want 0", b)
	}
}

// TestEntriesNewestFirstPaged: Entries pages through an account's entries newest first, and refuses
// a bad cursor.
func TestEntriesNewestFirstPaged(t *testing.T, f Features, newLedger Constructor) {
	t.Parallel()
	l, ctx := newLedger(t), context.Background()
	var want []billing.Entry
	for i := range 7 {
		e := billing.Entry{Key: fmt.Sprintf("grant:%d", i), AccountID: "acc_1", Kind: billing.KindAdjustment,
			Amount: int64(i - 3), Note: fmt.Sprint("n", i), CreatedAt: base.Add(time.Duration(i) * time.Second)}
		if _, err := l.Append(ctx, e, billing.Entry{Key: fmt.Sprintf("other:%d", i), AccountID: "acc_2",
			Kind: billing.KindGrant, Amount: 1, CreatedAt: base}); err != nil {
			t.Fatal(err)
		}
		want = append([]billing.Entry{e}, want...)
	}
	var got []billing.Entry
	cursor := ""
	for pages := 0; ; pages++ {
		page, err := l.Entries(ctx, billing.EntriesParams{AccountID: "acc_1", Cursor: cursor, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page.Entries...)
		if page.NextCursor == "" {
			if pages != 2 {
				t.Fatalf("%d pages; want 3", pages+1)
			}
			break
		}
		cursor = page.NextCursor
	}
	if d := cmp.Diff(want, got, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Seq" }, cmp.Ignore())); d != "" {
		t.Fatalf("entries (-want +got):\n%s", d)
	}
	if _, err := l.Entries(ctx, billing.EntriesParams{AccountID: "acc_1", Cursor: "nonsense"}); err == nil {
		t.Fatal("a bad cursor was accepted")
	}
}

// TestConcurrentChargesAppliedOnce: copies of a charge appended concurrently are written once each.
func TestConcurrentChargesAppliedOnce(t *testing.T, f Features, newLedger Constructor) {
	t.Parallel()
	l, ctx := newLedger(t), context.Background()
	if _, err := l.Append(ctx, billing.Entry{Key: "starter:acc_1", AccountID: "acc_1", Kind: billing.KindGrant, Amount: 1000, CreatedAt: base}); err != nil {
		t.Fatal(err)
	}
	const jobs, copies = 40, 3
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		written int
	)
	for i := range jobs * copies {
		wg.Go(func() {
			c := billing.Charge{AccountID: "acc_1", JobID: fmt.Sprintf("job_%d", i%jobs), Class: "cpu", Seconds: 2, Amount: 2}
			got, err := l.Append(ctx, c.Entry(base.Add(time.Minute)))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			written += len(got)
			mu.Unlock()
		})
	}
	wg.Wait()
	if written != jobs {
		t.Errorf("%d charges written; want %d", written, jobs)
	}
	if b, _ := l.Balance(ctx, "acc_1"); b != 1000-2*jobs {
		t.Errorf("balance = %d; want %d", b, 1000-2*jobs)
	}
	var sum int64
	for cursor := ""; ; {
		page, err := l.Entries(ctx, billing.EntriesParams{AccountID: "acc_1", Cursor: cursor, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Entries {
			sum += e.Amount
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if sum != 1000-2*jobs {
		t.Errorf("sum of entries = %d; want the balance %d", sum, 1000-2*jobs)
	}
}
