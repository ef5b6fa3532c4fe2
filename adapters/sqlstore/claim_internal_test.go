package sqlstore

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/job/jobtest"
)

func openSQLiteT(t *testing.T) *Store {
	t.Helper()
	s, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "mediajobs.db"))
	if err != nil {
		t.Fatalf("OpenSQLite: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestJobStoreUnpreparedClaims runs the job store suite on SQLite keeping no claim statement, so
// that every claim takes the path of a text past maxClaims: bun writes the runner and the time
// into the text where the prepared statement binds them (claimIDs).
func TestJobStoreUnpreparedClaims(t *testing.T) {
	t.Parallel()
	jobtest.TestStore(t, jobtest.Features{}, func(t *testing.T) job.Store {
		s := openSQLiteT(t)
		s.hot.maxClaims = 0
		return s
	})
}

// TestClaimsArePrepared: on SQLite, claims of one class and limit share one prepared statement,
// whatever their time and runner (and the order a map gives the plans' caps in: seven claims
// of eight plans all but certainly differ), and a different limit has a statement of its own.
func TestClaimsArePrepared(t *testing.T) {
	t.Parallel()
	s := openSQLiteT(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for i := range 9 {
		j, err := job.New(job.NewParams{ID: job.NewID("job"), AccountID: "acc_prep", Type: "ffmpeg",
			Params: json.RawMessage(`{"command":"ffmpeg -i in.mp4 out.mp4"}`), Class: job.ClassCPU, Timeout: time.Minute, Now: now.Add(time.Duration(i) * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	caps := map[string]int{"free": 1, "pro": 10, "team": 50, "a": 2, "b": 3, "c": 4, "d": 5, "e": 6}
	for i, limit := range []int{1, 1, 1, 1, 1, 1, 1, 2} {
		got, err := s.Claim(ctx, job.ClaimParams{Class: job.ClassCPU, Limit: limit, Lease: time.Minute,
			Now: now.Add(time.Hour + time.Duration(i)*time.Second), Concurrency: caps, Worker: "w", Runner: "w/" + string(rune('a'+i))})
		if err != nil || len(got) != limit {
			t.Fatalf("claim %d of %d: %d jobs, %v", i, limit, len(got), err)
		}
	}
	s.hot.mu.Lock()
	defer s.hot.mu.Unlock()
	if len(s.hot.claims) != 2 || len(s.hot.claimTexts) != 2 {
		t.Fatalf("%d claim statements and %d texts kept, want 2 of each (limits 1 and 2)", len(s.hot.claims), len(s.hot.claimTexts))
	}
}

// TestClaimTextKept: the text a claim finds its statement by, kept by its class, limit and
// plans' caps, is the text bun writes for those, whichever claim of the same kind asked first.
func TestClaimTextKept(t *testing.T) {
	t.Parallel()
	s := openSQLiteT(t)
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	params := []job.ClaimParams{
		{Class: job.ClassCPU, Limit: 1},
		{Class: job.ClassGPU, Limit: 1},
		{Class: job.ClassCPU, Limit: 2},
		{Class: job.ClassCPU, Limit: 1, Concurrency: map[string]int{"free": 1, "pro": 10}},
		{Class: job.ClassCPU, Limit: 1, Concurrency: map[string]int{"free": 1, "pro": 11}},
		{Class: job.ClassCPU, Limit: 1, Concurrency: map[string]int{"free": 1, "team": 10}},
		{Class: job.ClassCPU, Limit: 1, Concurrency: map[string]int{"free": 1}},
	}
	for range 2 { // the second time, from what was kept
		for i, p := range params {
			p.Now, p.Runner, p.Worker = now.Add(time.Duration(i)*time.Minute), "w/"+string(rune('a'+i)), "w"
			if got, want := s.claimText(p), s.claimQuery(s.w, p, true).String(); got != want {
				t.Fatalf("claim text of %+v:\n%s\nwant\n%s", p, got, want)
			}
		}
	}
}

// TestClaimOfNothingTakesNoWriter: a claim that finds no job of its class waiting answers from
// the read pool, while another write transaction holds SQLite's one writer; one that finds a
// job waits for the writer and takes it.
func TestClaimOfNothingTakesNoWriter(t *testing.T) {
	t.Parallel()
	s := openSQLiteT(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	gpu, err := job.New(job.NewParams{ID: job.NewID("job"), AccountID: "acc_1", Type: "ffmpeg", Class: job.ClassGPU, Timeout: time.Minute, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, gpu); err != nil {
		t.Fatal(err)
	}
	holding, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- s.inTx(ctx, func(context.Context, bun.Tx) error {
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if got, err := s.Claim(cctx, job.ClaimParams{Class: job.ClassCPU, Limit: 1, Lease: time.Minute, Now: now}); err != nil || len(got) != 0 {
		t.Fatalf("claim of cpu work with none waiting, the writer held: %d jobs, %v; want none, at once", len(got), err)
	}
	claimed := make(chan []*job.Job, 1)
	go func() {
		got, err := s.Claim(ctx, job.ClaimParams{Class: job.ClassGPU, Limit: 1, Lease: time.Minute, Now: now})
		if err != nil {
			t.Error(err)
		}
		claimed <- got
	}()
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if got := <-claimed; len(got) != 1 || got[0].ID != gpu.ID {
		t.Fatalf("claim of the waiting gpu job took %v", got)
	}
}

// TestJobWritePrepared: on SQLite a job change writes its row through one prepared statement,
// and the row is the one bun's own update wrote: every column the same text of the same type,
// with times as bun writes them, NULL for a nil pointer and for an empty nullzero column.
func TestJobWritePrepared(t *testing.T) {
	t.Parallel()
	s := openSQLiteT(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 28, 12, 0, 0, 123456789, time.UTC)
	later := at.Add(90 * time.Second)
	full := func(id string) *job.Job {
		j, err := job.New(job.NewParams{ID: id, AccountID: "acc_1", Type: "ffmpeg", Inputs: json.RawMessage(`{"a.srt":{"content":"1"}}`),
			Params: json.RawMessage(`{"command":"ffmpeg -i a.srt out.mp4"}`), Class: job.ClassCPU, Timeout: time.Minute, Now: at})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	type variant struct {
		name   string
		change func(j *job.Job)
	}
	for _, v := range []variant{
		{"as created", func(*job.Job) {}},
		{"every column set", func(j *job.Job) {
			j.Status, j.Progress, j.ProcessedMs, j.ComputeMs, j.Attempt, j.Requeues = job.StatusFailed, 0.5, 1500, 1200, 2, 1
			j.Worker, j.Runner, j.Avoid, j.AvoidUntil, j.LeaseUntil = "wkr_1", "wkr_1/w", "wkr_0/w", &later, &later
			j.DispatchedAt, j.StartedAt, j.ExecStartedAt, j.FinishedAt, j.UpdatedAt = &at, &later, &later, &later, later
			j.Error = &job.Error{Code: "RUNNER_ERROR", Message: "ffmpeg exited with status 1"}
			j.Cost = &job.Cost{Amount: 3}
		}},
	} {
		bunID, prepID := job.NewID("job"), job.NewID("job")
		for _, id := range []string{bunID, prepID} {
			j := full(id)
			if err := s.Create(ctx, j); err != nil {
				t.Fatal(err)
			}
			v.change(j)
			write, err := s.writerStmts(ctx, hotJobWrite)
			if err != nil {
				t.Fatal(err)
			}
			if id == bunID {
				write[0] = nil // bun's update, as on PostgreSQL
			}
			if err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error { return s.write(ctx, tx, write[0], j) }); err != nil {
				t.Fatalf("%s: %v", v.name, err)
			}
		}
		rows := map[string]map[string]string{}
		for _, id := range []string{bunID, prepID} {
			rows[id] = map[string]string{}
			for _, f := range jobColumns(s.w.Dialect()) {
				var text, typ string
				if err := s.r.QueryRowContext(ctx, `SELECT COALESCE(CAST(`+string(f.SQLName)+` AS TEXT), 'NULL'), typeof(`+string(f.SQLName)+`)
					FROM jobs WHERE id = ?`, id).Scan(&text, &typ); err != nil {
					t.Fatal(err)
				}
				rows[id][f.Name] = typ + " " + text
			}
		}
		if d := cmp.Diff(rows[bunID], rows[prepID]); d != "" {
			t.Errorf("%s: the prepared write's row differs from bun's (-bun +prepared):\n%s", v.name, d)
		}
		if got, err := s.Get(ctx, prepID); err != nil || got.ID != prepID {
			t.Errorf("%s: reading the prepared write back: %v", v.name, err)
		}
	}
}
