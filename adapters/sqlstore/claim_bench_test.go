package sqlstore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/mediajobs/mediajobs/adapters/sqlstore"
	"github.com/mediajobs/mediajobs/adapters/sqlstore/pgtest"
	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/batch"
	"github.com/mediajobs/mediajobs/core/job"
)

// BenchmarkClaim measures one claim of one job, as a worker slot makes it, with no backlog and
// with 10,000 waiting jobs over 100 accounts (the fair-share order ranks them all), on both
// stores. Each claim is followed, off the clock, by one new job of the same account, so the
// backlog stays as large and the accounts' dispatch history grows as it does in service.
func BenchmarkClaim(b *testing.B) {
	var analyze func()
	stores := []struct {
		name string
		open func(b *testing.B) *sqlstore.Store
	}{
		{"SQLite", func(b *testing.B) *sqlstore.Store {
			s, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
		{"Postgres", func(b *testing.B) *sqlstore.Store {
			dsn := pgtest.Schema(b, "b_")
			s, err := sqlstore.OpenPostgres(context.Background(), dsn)
			if err != nil {
				b.Fatal(err)
			}
			analyze = func() {
				// A database in service has its planner statistics (autovacuum keeps them);
				// the freshly filled schema has none until this.
				db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn)))
				defer db.Close()
				if _, err := db.Exec("ANALYZE"); err != nil {
					b.Fatal(err)
				}
			}
			return s
		}},
	}
	for _, st := range stores {
		for _, backlog := range []struct {
			name             string
			accounts, perAcc int
		}{{"NoBacklog", 1, 0}, {"Backlog10k", 100, 100}} {
			b.Run(st.name+"/"+backlog.name, func(b *testing.B) {
				analyze = func() {}
				s := st.open(b)
				defer s.Close()
				benchClaim(b, s, backlog.accounts, backlog.perAcc, analyze)
			})
		}
	}
}

// benchClaim fills the store with perAcc waiting jobs for each of n accounts on the Pro plan,
// then times claims of one job under the plans' concurrency caps, as the dispatcher makes them.
func benchClaim(b *testing.B, s *sqlstore.Store, n, perAcc int, analyze func()) {
	ctx := context.Background()
	base := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	seq := 0
	newJob := func(acc string) *job.Job {
		seq++
		return benchJob(b, acc, seq, base.Add(time.Duration(seq)*time.Millisecond))
	}
	accounts := make([]string, n)
	for i := range accounts {
		accounts[i] = fmt.Sprintf("acc_bench%03d", i)
		if err := s.CreateAccount(ctx, account.Account{ID: accounts[i], Plan: account.PlanPro, CreatedAt: base}); err != nil {
			b.Fatal(err)
		}
		if perAcc == 0 {
			continue
		}
		jobs := make([]*job.Job, perAcc)
		ids := make([]string, perAcc)
		for k := range jobs {
			jobs[k] = newJob(accounts[i])
			ids[k] = jobs[k].ID
		}
		bt, err := batch.New(job.NewID("bat"), accounts[i], ids, base)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.CreateBatch(ctx, bt, jobs); err != nil {
			b.Fatal(err)
		}
	}
	// The caps are high enough that no account is held back: the claim ranks every waiting job.
	caps := map[string]int{string(account.PlanFree): 1_000_000, string(account.PlanPro): 1_000_000}
	analyze()
	now := base.Add(time.Hour)
	b.ResetTimer()
	for i := range b.N {
		acc := accounts[i%n]
		if perAcc == 0 {
			b.StopTimer()
			if err := s.Create(ctx, newJob(acc)); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		now = now.Add(time.Millisecond)
		js, err := s.Claim(ctx, job.ClaimParams{Class: job.ClassCPU, Limit: 1, Lease: time.Minute, Now: now, Concurrency: caps, Worker: "bench"})
		if err != nil || len(js) != 1 {
			b.Fatalf("claim: %d jobs, %v", len(js), err)
		}
		if perAcc > 0 {
			b.StopTimer()
			if err := s.Create(ctx, newJob(js[0].AccountID)); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
}

// benchJob is the i-th waiting cpu job of a benchmark: a small FFmpeg command of its own,
// created at the time given.
func benchJob(b *testing.B, account string, i int, at time.Time) *job.Job {
	j, err := job.New(job.NewParams{
		ID: job.NewID("job"), AccountID: account, Type: "ffmpeg",
		Inputs: json.RawMessage(`{"in.mp4":{"url":"https://example.com/in.mp4"}}`),
		Params: json.RawMessage(fmt.Sprintf(`{"command":"ffmpeg -i in.mp4 -vf scale=320:-2 out%d.mp4"}`, i)),
		Class:  job.ClassCPU, Timeout: 120 * time.Second, Now: at,
	})
	if err != nil {
		b.Fatal(err)
	}
	return j
}
