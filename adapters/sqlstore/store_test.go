package sqlstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/adapters/sqlstore"
	"github.com/mediajobs/mediajobs/adapters/sqlstore/pgtest"
	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/account/accounttest"
	"github.com/mediajobs/mediajobs/core/asset"
	"github.com/mediajobs/mediajobs/core/asset/assettest"
	"github.com/mediajobs/mediajobs/core/batch/batchtest"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/billing/billingtest"
	"github.com/mediajobs/mediajobs/core/idempotency"
	"github.com/mediajobs/mediajobs/core/idempotency/idempotencytest"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/job/jobtest"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
	"github.com/mediajobs/mediajobs/core/workqueue"
	"github.com/mediajobs/mediajobs/core/workqueue/workqueuetest"
)

// backends open a fresh, empty Store of each dialect for one test.
var backends = []struct {
	name string
	open func(t *testing.T) *sqlstore.Store
}{
	{"SQLite", newSQLite},
	{"Postgres", newPostgres},
}

func newSQLite(t *testing.T) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "mediajobs.db"))
	if err != nil {
		t.Fatalf("OpenSQLite: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// newPostgres gives the test a schema of its own, t_<random>, dropped with everything in it
// when the test ends; the store's connections reach it through search_path.
func newPostgres(t *testing.T) *sqlstore.Store {
	t.Helper()
	dsn := pgtest.Schema(t, "t_")
	s, err := sqlstore.OpenPostgres(context.Background(), dsn)
	if err != nil {
		t.Fatalf("OpenPostgres: %v", err)
	}
	// Registered after the drop, so it runs first: connections close before their schema goes.
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestJobStore(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			jobtest.TestStore(t, jobtest.Features{}, func(t *testing.T) job.Store { return b.open(t) })
		})
	}
}

func TestBatchStore(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			batchtest.TestStore(t, batchtest.Features{}, func(t *testing.T) batchtest.Stores { return b.open(t) })
		})
	}
}

func TestAccountStore(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			accounttest.TestStore(t, accounttest.Features{}, func(t *testing.T) account.Store { return b.open(t) })
		})
	}
}

func TestLedger(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			billingtest.TestLedger(t, billingtest.Features{}, func(t *testing.T) billing.Ledger { return b.open(t) })
		})
	}
}

func TestAssetStore(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			assettest.TestStore(t, assettest.Features{}, func(t *testing.T) asset.Store { return b.open(t) })
		})
	}
}

func TestIdempotencyStore(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			idempotencytest.TestStore(t, idempotencytest.Features{}, func(t *testing.T) idempotency.Store { return b.open(t) })
		})
	}
}

// TestConcurrentCreates checks what SQLite's shared commits must keep: each Create answers for
// its own row, a taken ID fails alone, and every accepted job is there.
func TestConcurrentCreates(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s, ctx := b.open(t), context.Background()
			at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
			const n = 64
			jobs := make([]*job.Job, n)
			for i := range jobs {
				id := job.NewID("job")
				if i%2 == 1 {
					id = jobs[i-1].ID // every other Create reuses its neighbour's ID
				}
				j, err := job.New(job.NewParams{ID: id, AccountID: "acc_1", Type: "ffmpeg", Class: job.ClassCPU, Now: at})
				if err != nil {
					t.Fatal(err)
				}
				jobs[i] = j
			}
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i, j := range jobs {
				wg.Go(func() { errs[i] = s.Create(ctx, j) })
			}
			wg.Wait()
			for i := 0; i < n; i += 2 {
				a, b := errs[i], errs[i+1]
				refused := a
				if refused == nil {
					refused = b
				}
				if (a == nil) == (b == nil) || !errors.Is(refused, problem.ErrConflict) {
					t.Fatalf("two Creates of %s: %v and %v; want one nil, one ErrConflict", jobs[i].ID, a, b)
				}
				if _, err := s.Get(ctx, jobs[i].ID); err != nil {
					t.Fatalf("accepted job %s: %v", jobs[i].ID, err)
				}
			}
		})
	}
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	want := []string{"20261122000001", "20261122000002", "20261122000003", "20261122000004", "20261122000005", "20261123000006", "20261124000001", "20261124000002", "20261124000021", "20261124000051", "20261125000001", "20261126000001", "20261127000001", "20261127000002", "20261127000003", "20261128000001", "20261128000010", "20261128000020", "20261128000030", "20261129000010", "20261130000010", "20261206000010"}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s, ctx := b.open(t), context.Background()
			for range 2 {
				applied, err := s.Migrate(ctx)
				if err != nil {
					t.Fatalf("Migrate: %v", err)
				}
				if len(applied) != 0 {
					t.Fatalf("Migrate on a current schema applied %v", applied)
				}
			}
			got, err := s.AppliedMigrations(ctx)
			if err != nil {
				t.Fatalf("AppliedMigrations: %v", err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("applied migrations (-want +got):\n%s", d)
			}
			if err := s.Ping(ctx); err != nil {
				t.Fatalf("Ping: %v", err)
			}
		})
	}
}

func TestSQLiteReopenKeepsData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "mediajobs.db")
	s, err := sqlstore.OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	a := asset.Asset{ID: "ast_1", AccountID: "acc_1", Name: "a.mp4", ContentType: "video/mp4", Size: 1,
		CreatedAt: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	if err := s.CreateAsset(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = sqlstore.OpenSQLite(ctx, path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	got, err := s.GetAsset(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(a, got); d != "" {
		t.Fatalf("after reopen (-want +got):\n%s", d)
	}
}

func TestProbeWrite(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t)
			for range 2 {
				if err := s.ProbeWrite(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			workqueuetest.TestRegistry(t, workqueuetest.RegistryFeatures{}, func(t *testing.T) workqueue.Registry { return b.open(t) })
		})
	}
}

func TestCredentialsSuite(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			workqueuetest.TestCredentials(t, workqueuetest.CredentialsFeatures{}, func(t *testing.T) workqueue.Credentials { return b.open(t) })
		})
	}
}

// The database and its WAL files are readable by their owner only, whatever the umask, and an
// older world-readable file is tightened when opened.
func TestSQLiteFilesArePrivate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, existing := range map[string]bool{"new": false, "old 0644 file": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "mediajobs.db")
			if existing {
				if err := os.WriteFile(path, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			s, err := sqlstore.OpenSQLite(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.CreateAsset(ctx, asset.Asset{ID: "ast_1", AccountID: "acc_1", Name: "a.mp4", ContentType: "video/mp4", Size: 1,
				CreatedAt: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{path, path + "-wal", path + "-shm"} {
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				if perm := fi.Mode().Perm(); perm != 0o600 {
					t.Errorf("%s has mode %o, want 600", filepath.Base(p), perm)
				}
			}
		})
	}
}

func TestQueueDepth(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s, ctx := b.open(t), context.Background()
			now := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
			for _, c := range []job.Class{job.ClassCPU, job.ClassCPU, job.ClassGPU, job.ClassCPU} {
				j, err := job.New(job.NewParams{ID: job.NewID("job"), AccountID: "acc_1", Type: "ffmpeg", Class: c,
					Timeout: time.Minute, Now: now})
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Create(ctx, j); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Claim(ctx, job.ClaimParams{Class: job.ClassCPU, Limit: 1, Lease: time.Minute, Now: now}); err != nil {
				t.Fatal(err)
			}
			got, err := s.QueueDepth(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(map[job.Class]int{job.ClassCPU: 2, job.ClassGPU: 1}, got); d != "" {
				t.Errorf("QueueDepth (-want +got):\n%s", d)
			}
		})
	}
}

// The key lookup reads the account's balance in the same statement, for the submit gate
// (service.KeyBalances): 0 before the account has a ledger entry, then the running balance; a
// revoked key is not found, as by AccountByKeyHash.
func TestAccountAndBalanceByKeyHash(t *testing.T) {
	t.Parallel()
	var _ service.KeyBalances = (*sqlstore.Store)(nil)
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s, ctx := b.open(t), context.Background()
			now := time.Now().UTC().Truncate(time.Microsecond)
			acc := account.Account{ID: "acc_1", Plan: account.PlanFree, CreatedAt: now}
			if err := s.CreateAccount(ctx, acc); err != nil {
				t.Fatal(err)
			}
			secret, k := account.NewKey(acc.ID, "key_1", now)
			if err := s.CreateKey(ctx, k); err != nil {
				t.Fatal(err)
			}
			lookup := func() int64 {
				t.Helper()
				a, got, bal, err := s.AccountAndBalanceByKeyHash(ctx, account.HashSecret(secret))
				if err != nil || a.ID != acc.ID || got.ID != k.ID {
					t.Fatalf("AccountAndBalanceByKeyHash: %v %v %v", a, got, err)
				}
				return bal
			}
			if got := lookup(); got != 0 {
				t.Fatalf("balance before any entry: %d, want 0", got)
			}
			for i, amount := range []int64{25, -7} {
				e := billing.Entry{Key: fmt.Sprintf("e%d", i), AccountID: acc.ID, Kind: billing.KindAdjustment, Amount: amount, CreatedAt: now}
				if _, err := s.Append(ctx, e); err != nil {
					t.Fatal(err)
				}
			}
			if got := lookup(); got != 18 {
				t.Fatalf("balance after +25 and -7: %d, want 18", got)
			}
			if err := s.RevokeKey(ctx, acc.ID, k.ID, now); err != nil {
				t.Fatal(err)
			}
			if _, _, _, err := s.AccountAndBalanceByKeyHash(ctx, account.HashSecret(secret)); !errors.Is(err, problem.ErrNotFound) {
				t.Fatalf("a revoked key: %v, want not found", err)
			}
		})
	}
}

// A job change that emits a charge (billing.TopicCharge) puts it in the ledger, and moves the
// balance, in its own transaction: a change that fails charges nothing, UpdateMany charges each
// job it ends, and the relay's later append of the same charge changes nothing.
func TestJobChangesChargeTheLedger(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s, ctx := b.open(t), context.Background()
			if !s.ChargesWith(s) || s.ChargesWith(b.open(t)) || s.ChargesWith(jobtest.NewMemory()) {
				t.Fatal("ChargesWith: want true for the store itself only")
			}
			now := time.Date(2026, 11, 28, 9, 0, 0, 123456789, time.UTC)
			var ids []string
			for range 3 {
				j, err := job.New(job.NewParams{ID: job.NewID("job"), AccountID: "acc_1", Type: "ffmpeg", Class: job.ClassCPU,
					Timeout: time.Minute, Now: now})
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Create(ctx, j); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, j.ID)
			}
			end := func(amount int64) func(j *job.Job) error {
				return func(j *job.Job) error {
					p, err := json.Marshal(billing.Charge{AccountID: j.AccountID, JobID: j.ID, Class: j.Class, ComputeMs: 1500,
						Seconds: 2, Amount: amount})
					if err != nil {
						return err
					}
					j.Emit(billing.TopicCharge, billing.ChargeKey(j.ID), p)
					j.Emit("events", "event:"+j.ID, []byte(`{}`))
					return j.Cancel(now.Add(time.Second))
				}
			}
			if _, err := s.Update(ctx, ids[0], func(j *job.Job) error {
				_ = end(5)(j)
				return errors.New("abort")
			}); err == nil {
				t.Fatal("Update did not fail")
			}
			if bal, err := s.Balance(ctx, "acc_1"); err != nil || bal != 0 {
				t.Fatalf("after a failed change: balance %d, %v; want 0", bal, err)
			}
			ended, err := s.Update(ctx, ids[0], end(5))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.UpdateMany(ctx, ids[1:], end(7)); err != nil {
				t.Fatal(err)
			}
			if bal, err := s.Balance(ctx, "acc_1"); err != nil || bal != -19 {
				t.Fatalf("balance %d, %v; want -19 (5 + 7 + 7 charged)", bal, err)
			}
			page, err := s.Entries(ctx, billing.EntriesParams{AccountID: "acc_1", Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			var first billing.Entry
			for _, e := range page.Entries {
				if e.JobID == ids[0] {
					first = e
				}
			}
			want := billing.Entry{Seq: first.Seq, Key: billing.ChargeKey(ids[0]), AccountID: "acc_1", Kind: billing.KindCharge, Amount: -5,
				JobID: ids[0], Note: "cpu, 2 s", CreatedAt: ended.UpdatedAt.Truncate(time.Microsecond)}
			if len(page.Entries) != 3 || cmp.Diff(want, first) != "" {
				t.Fatalf("ledger %+v; want three charges, the first %+v", page.Entries, want)
			}
			// The relay's handler appends each charge again from its message: a no-op.
			msgs, err := s.ClaimMessages(ctx, job.ClaimMessagesParams{Limit: 10, Lease: time.Minute, Now: now.Add(time.Minute)})
			if err != nil {
				t.Fatal(err)
			}
			charges := 0
			for _, m := range msgs {
				if m.Topic != billing.TopicCharge {
					continue
				}
				charges++
				c, err := billing.DecodeCharge(m.Payload)
				if err != nil {
					t.Fatal(err)
				}
				if added, err := s.Append(ctx, c.Entry(m.CreatedAt)); err != nil || len(added) != 0 {
					t.Fatalf("the relay's append of %s added %v, %v; want nothing", m.Key, added, err)
				}
			}
			if bal, err := s.Balance(ctx, "acc_1"); charges != 3 || err != nil || bal != -19 {
				t.Fatalf("after the relay: %d charge messages, balance %d, %v; want 3 and -19", charges, bal, err)
			}
		})
	}
}
