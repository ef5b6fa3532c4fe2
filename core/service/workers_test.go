package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/blob/blobtest"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service/servicetest"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// A credential authenticates as its identity until revoked; the shared token as EnvToken;
// anything else is UNAUTHORIZED.
func TestWorkersAuthenticate(t *testing.T) {
	t.Parallel()
	h := setup(t)
	secret, c, err := h.Workers.Create(h.ctx, "box-7", job.ClassGPU)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := h.Workers.Authenticate(h.ctx, secret); err != nil || id != c.Identity() {
		t.Fatalf("its own secret: %+v %v", id, err)
	}
	if _, _, err := h.Workers.Create(h.ctx, "box-7", ""); problem.CodeOf(err) != problem.CodeConflict {
		t.Fatalf("a second box-7: %v", err)
	}
	for _, bad := range []string{"", "mjw_nope", secret + "x", "../box"} {
		if _, err := h.Workers.Authenticate(h.ctx, bad); problem.CodeOf(err) != problem.CodeUnauthorized {
			t.Errorf("secret %q: %v", bad, err)
		}
	}
	for _, bad := range []struct{ name, class string }{{"", ""}, {"-x", ""}, {"a b", ""}, {"ok", "tpu"}} {
		if _, _, err := h.Workers.Create(h.ctx, bad.name, job.Class(bad.class)); problem.CodeOf(err) != problem.CodeValidation {
			t.Errorf("create %+v: %v", bad, err)
		}
	}
	if _, err := h.Workers.Revoke(h.ctx, "box-7"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Workers.Authenticate(h.ctx, secret); problem.CodeOf(err) != problem.CodeUnauthorized {
		t.Fatalf("a revoked secret: %v", err)
	}
	if _, err := h.Workers.Revoke(h.ctx, "nobody"); problem.CodeOf(err) != problem.CodeNotFound {
		t.Fatalf("revoke nobody: %v", err)
	}
	if _, err := h.Workers.Revoke(h.ctx, workqueue.EnvToken.ID); problem.CodeOf(err) != problem.CodeValidation {
		t.Fatalf("revoke the shared token: %v", err)
	}
}

// A lease is honoured only from the worker that claimed it; a credential claims only its class.
func TestLeaseBoundToItsWorker(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc := h.open(t, account.PlanPro, 1000)
	h.submitJob(t, acc, `{}`)
	_, a, _ := h.Workers.Create(h.ctx, "a", job.ClassCPU)
	_, b, _ := h.Workers.Create(h.ctx, "b", "")
	if _, err := h.runs.As(a.Identity()).Claim(h.ctx, workqueue.ClaimParams{Class: job.ClassGPU, Max: 1}); problem.CodeOf(err) != problem.CodeForbidden {
		t.Fatalf("a cpu credential claiming gpu work: %v", err)
	}
	as, err := h.runs.As(a.Identity()).Claim(h.ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 1, Version: "v9"})
	if err != nil || len(as) != 1 {
		t.Fatalf("claim: %v %v", as, err)
	}
	l := as[0].Lease
	if _, err := h.runs.As(b.Identity()).Heartbeat(h.ctx, workqueue.Beat{Lease: l}); !errors.Is(err, workqueue.ErrLeaseRefused) {
		t.Fatalf("another worker's heartbeat with the token: %v", err)
	}
	if _, err := h.runs.Heartbeat(h.ctx, workqueue.Beat{Lease: l}); !errors.Is(err, workqueue.ErrLeaseRefused) {
		t.Fatalf("the in-process runner's heartbeat with the token: %v", err)
	}
	if _, err := h.runs.As(a.Identity()).Heartbeat(h.ctx, workqueue.Beat{Lease: l}); err != nil {
		t.Fatalf("its own heartbeat: %v", err)
	}
	list, err := h.Workers.List(h.ctx)
	if err != nil || len(list) != 2 || list[0].Name != "a" || list[0].RunningJobs != 1 || list[0].Version != "v9" || list[0].LastSeen == nil {
		t.Fatalf("list: %+v %v", list, err)
	}
}

// A report carrying files with another worker's lease writes nothing: the holder's upload of the
// same name keeps its bytes.
func TestCarriedFilesBoundToTheLeasesWorker(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc := h.open(t, account.PlanPro, 1000)
	id := h.submitJob(t, acc, `{}`).ID
	_, a, _ := h.Workers.Create(h.ctx, "a", "")
	_, b, _ := h.Workers.Create(h.ctx, "b", "")
	as, err := h.runs.As(a.Identity()).Claim(h.ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 1})
	if err != nil || len(as) != 1 {
		t.Fatalf("claim: %v %v", as, err)
	}
	l := as[0].Lease
	if _, err := h.runs.As(a.Identity()).PutOutput(h.ctx, l, "out.mp4", strings.NewReader("the holder's"), 0); err != nil {
		t.Fatal(err)
	}
	res := workqueue.Result{Files: []job.File{{Path: "out.mp4", Type: job.FileVideo}},
		Inline: []workqueue.InlineFile{{Name: "out.mp4", Data: []byte("not yours")}, {Name: "x.png", Data: []byte("nor this")}}}
	if err := h.runs.As(b.Identity()).Report(h.ctx, l, res); !errors.Is(err, workqueue.ErrLeaseRefused) {
		t.Fatalf("another worker's report: %v", err)
	}
	read := func(name string) (string, bool) {
		b, err := h.blobs.Open(h.ctx, blob.OutputKey(acc.ID, id, name))
		if err != nil {
			return "", false
		}
		defer b.Close()
		data, _ := io.ReadAll(b)
		return string(data), true
	}
	if got, _ := read("out.mp4"); got != "the holder's" {
		t.Fatalf("the holder's upload holds %q", got)
	}
	if _, ok := read("x.png"); ok {
		t.Fatal("another worker's report stored x.png")
	}
}

// Revoking a credential ends its jobs at once: one whose FFmpeg step never began goes back to
// the queue, one that was computing fails RUNNER_LOST, free; its later calls are refused.
func TestRevokeEndsTheWorkersJobs(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc := h.open(t, account.PlanPro, 1000)
	first, second := h.submitJob(t, acc, `{}`), h.submitJob(t, acc, `{}`)
	_, c, _ := h.Workers.Create(h.ctx, "box", "")
	q := h.runs.As(c.Identity())
	as, err := q.Claim(h.ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 2})
	if err != nil || len(as) != 2 {
		t.Fatalf("claim: %v %v", as, err)
	}
	if _, err := q.Heartbeat(h.ctx, workqueue.Beat{Lease: as[0].Lease, Executing: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Workers.Revoke(h.ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if j := h.job(t, first.ID); j.Status != job.StatusFailed || j.Error.Code != problem.CodeRunnerLost || j.Cost == nil || j.Cost.Amount != 0 {
		t.Fatalf("the computing job: %s %+v %+v", j.Status, j.Error, j.Cost)
	}
	if j := h.job(t, second.ID); j.Status != job.StatusWaiting {
		t.Fatalf("the job not yet computing: %s", j.Status)
	}
	if err := q.Report(h.ctx, as[0].Lease, workqueue.Result{Data: []byte(`{}`), ComputeMs: 5}); !errors.Is(err, workqueue.ErrLeaseRefused) {
		t.Fatalf("a report after the revocation: %v", err)
	}
	if list, _ := h.Workers.List(h.ctx); len(list) != 1 || list[0].RevokedAt == nil || list[0].RunningJobs != 0 {
		t.Fatalf("list: %+v", list)
	}
}

// An asset a command names inside params.command is the job's input as much as one in inputs.
func TestLeaseReadsAnAssetNamedInTheCommand(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc := h.open(t, account.PlanPro, 1000)
	up, err := h.uploads.Upload(h.ctx, acc, "in.mp4", "", strings.NewReader("video"))
	if err != nil {
		t.Fatal(err)
	}
	params, _ := json.Marshal(map[string]string{"command": "ffmpeg -i " + h.uploads.URL(up.ID) + " -t 1 out.mp4"})
	if _, err := h.submit.Submit(h.ctx, acc, jobtype.Request{Type: "ffmpeg", Params: params}); err != nil {
		t.Fatal(err)
	}
	a := h.claim(t, job.ClassCPU)
	r, err := h.runs.OpenAsset(h.ctx, a.Lease, up.ID)
	if err != nil {
		t.Fatalf("the asset the command names: %v", err)
	}
	r.Close()
}

// A long poll outlives its authentication: a credential revoked while its claim waits takes
// nothing that arrives afterwards.
func TestRevokedWhileClaimWaits(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc := h.open(t, account.PlanPro, 1000)
	_, c, _ := h.Workers.Create(h.ctx, "box", "")
	got := make(chan error, 1)
	go func() {
		as, err := h.runs.As(c.Identity()).Claim(h.ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 1, Wait: time.Minute})
		if err == nil && len(as) > 0 {
			err = errors.New("claimed a job after the revocation")
		}
		got <- err
	}()
	if _, err := h.Workers.Revoke(h.ctx, "box"); err != nil {
		t.Fatal(err)
	}
	j := h.submitJob(t, acc, `{}`) // wakes the waiting claim
	if err := <-got; problem.CodeOf(err) != problem.CodeUnauthorized {
		t.Fatalf("the waiting claim: %v, want UNAUTHORIZED", err)
	}
	if got := h.job(t, j.ID); got.Status != job.StatusWaiting {
		t.Fatalf("the job is %s", got.Status)
	}
}

// The report is held to storage as well as to the record: a stored file whose size differs
// from the one recorded (two uploads of one name racing) refuses the result.
func TestReportHeldToStoredSizes(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc := h.open(t, account.PlanPro, 1000)
	j := h.submitJob(t, acc, `{}`)
	a := h.claim(t, job.ClassCPU)
	h.beat(t, a.Lease, 0, true)
	if _, err := h.runs.PutOutput(h.ctx, a.Lease, "out.mp4", strings.NewReader("small"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := h.blobs.Put(h.ctx, blob.OutputKey(acc.ID, j.ID, "out.mp4"), strings.NewReader("much larger than recorded"), 0); err != nil {
		t.Fatal(err)
	}
	res := workqueue.Result{Files: []job.File{{Path: "out.mp4"}}, ComputeMs: 5, Started: true}
	if err := h.runs.Report(h.ctx, a.Lease, res); problem.CodeOf(err) != problem.CodeConflict {
		t.Fatalf("a report over a file stored larger than recorded: %v", err)
	}
	if got := h.job(t, j.ID); got.Status != job.StatusRunning {
		t.Fatalf("the job is %s", got.Status)
	}
}

// gathering is a blob store whose writes wait until n have begun (or a few seconds have
// passed): reports sent at once all store their files before any of them is taken.
type gathering struct {
	*blobtest.Memory
	n       int
	mu      sync.Mutex
	arrived int
	all     chan struct{}
}

func (g *gathering) Put(ctx context.Context, key string, r io.Reader, max int64) (int64, error) {
	g.mu.Lock()
	if g.arrived++; g.arrived == g.n {
		close(g.all)
	}
	g.mu.Unlock()
	select {
	case <-g.all:
	case <-time.After(5 * time.Second):
	}
	return g.Memory.Put(ctx, key, r, max)
}

// Of reports sent at once under one lease, each carrying a file of its own, one is taken; the
// files of the others are deleted, so that racing reports cannot store more than the plan
// allows.
func TestConcurrentReportsKeepOneResultsFiles(t *testing.T) {
	t.Parallel()
	const n = 6
	blobs := &gathering{Memory: blobtest.NewMemory(), n: n, all: make(chan struct{})}
	h := setupOptions(t, servicetest.Options{Blobs: blobs})
	acc := h.open(t, account.PlanPro, 1000)
	id := h.submitJob(t, acc, `{}`).ID
	a := h.claim(t, job.ClassCPU)
	h.beat(t, a.Lease, 0, true)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			name := fmt.Sprintf("r%d.png", i)
			res := workqueue.Result{Files: []job.File{{Path: name, Type: job.FileImage}},
				Inline: []workqueue.InlineFile{{Name: name, Data: []byte(name)}}, ComputeMs: 10, Started: true}
			if err := h.runs.Report(h.ctx, a.Lease, res); err != nil {
				t.Errorf("report %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	j, err := h.store.Get(h.ctx, id)
	if err != nil || j.Status != job.StatusComplete || j.Output == nil || len(j.Output.Files) != 1 {
		t.Fatalf("job %+v (%v), want complete with one file", j, err)
	}
	if keys := blobs.Keys(); len(keys) != 1 || keys[0] != blob.OutputKey(acc.ID, id, j.Output.Files[0].Path) {
		t.Fatalf("stored %v, want the taken report's %s alone", keys, j.Output.Files[0].Path)
	}
}

// gatedReader holds its first Read until release is closed, telling started when it is there.
type gatedReader struct {
	started, release chan struct{}
	r                io.Reader
	once             sync.Once
}

func (g *gatedReader) Read(p []byte) (int, error) {
	g.once.Do(func() { close(g.started); <-g.release })
	return g.r.Read(p)
}

// An upload that began under a lease that then lapsed lands where the job's next attempt never
// reads: the output of the attempt that completed the job is what users get, and the stale
// bytes are not kept.
func TestStaleUploadLeavesTheNextAttemptsOutput(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc := h.open(t, account.PlanPro, 1000)
	j := h.submitJob(t, acc, `{}`)
	first := h.claim(t, job.ClassCPU)
	h.beat(t, first.Lease, 0, false) // fetching its inputs: a lapse requeues it

	stale := &gatedReader{started: make(chan struct{}), release: make(chan struct{}), r: strings.NewReader("STALESTALE")}
	staleErr := make(chan error, 1)
	go func() {
		_, err := h.runs.PutOutput(h.ctx, first.Lease, "out.mp4", stale, 0)
		staleErr <- err
	}()
	<-stale.started // past the lease check, streaming

	h.clock.Advance(2 * lease)
	if n, err := h.runs.Sweep(h.ctx); err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	h.clock.Advance(job.RetryElsewhereFor + time.Second)
	second := h.claim(t, job.ClassCPU)
	if second.Lease.Attempt != first.Lease.Attempt+1 {
		t.Fatalf("attempts %d then %d", first.Lease.Attempt, second.Lease.Attempt)
	}
	h.beat(t, second.Lease, 0, true)
	if _, err := h.runs.PutOutput(h.ctx, second.Lease, "out.mp4", strings.NewReader("FRESHFRESH"), 0); err != nil {
		t.Fatal(err)
	}
	if err := h.runs.Report(h.ctx, second.Lease, workqueue.Result{Files: []job.File{{Path: "out.mp4", Size: 10}}, ComputeMs: 1000, Started: true}); err != nil {
		t.Fatal(err)
	}
	close(stale.release)
	if err := <-staleErr; !errors.Is(err, workqueue.ErrLeaseRefused) {
		t.Errorf("the stale upload: %v; want the lease refused", err)
	}
	_, b, err := h.jobs.OpenOutput(h.ctx, j.ID, "out.mp4")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(b)
	b.Close()
	if string(got) != "FRESHFRESH" {
		t.Errorf("the completed job's out.mp4 holds %q; want the second attempt's FRESHFRESH", got)
	}
	if _, err := h.blobs.Open(h.ctx, blob.AttemptOutputKey(acc.ID, j.ID, first.Lease.Attempt, "out.mp4")); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("the stale upload's bytes were kept: %v", err)
	}

	// A job completed on a later attempt before attempts had keys of their own kept its files
	// under the first attempt's: they are still found.
	if _, err := h.blobs.Put(h.ctx, blob.OutputKey(acc.ID, j.ID, "out.mp4"), strings.NewReader("OLDLAYOUT!"), 0); err != nil {
		t.Fatal(err)
	}
	if err := h.blobs.Delete(h.ctx, blob.AttemptOutputKey(acc.ID, j.ID, second.Lease.Attempt, "out.mp4")); err != nil {
		t.Fatal(err)
	}
	if _, b, err = h.jobs.OpenOutput(h.ctx, j.ID, "out.mp4"); err != nil {
		t.Fatalf("a file stored before attempts had keys: %v", err)
	}
	got, _ = io.ReadAll(b)
	b.Close()
	if string(got) != "OLDLAYOUT!" {
		t.Errorf("read %q under the old layout", got)
	}
}

// The files an attempt stored are deleted when the attempt ends without them: its lease lapsed
// before compute began, or its worker handed the job back. The next attempt stores its own.
func TestRequeuedAttemptsFilesAreDeleted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, h *harness, l workqueue.Lease)
	}{
		{"lease lapsed", func(t *testing.T, h *harness, _ workqueue.Lease) {
			h.clock.Advance(2 * lease)
			if n, err := h.runs.Sweep(h.ctx); err != nil || n != 1 {
				t.Fatalf("sweep: %d, %v", n, err)
			}
		}},
		{"handed back", func(t *testing.T, h *harness, l workqueue.Lease) {
			if err := h.runs.Report(h.ctx, l, workqueue.Result{Failure: &workqueue.Failure{Kind: workqueue.KindHandBack, Message: "draining"}}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t)
			acc := h.open(t, account.PlanPro, 1000)
			j := h.submitJob(t, acc, `{}`)
			a := h.claim(t, job.ClassCPU)
			h.beat(t, a.Lease, 0, false)
			if _, err := h.runs.PutOutput(h.ctx, a.Lease, "out.mp4", strings.NewReader("first"), 0); err != nil {
				t.Fatal(err)
			}
			tc.end(t, h, a.Lease)
			if got := h.job(t, j.ID); got.Status != job.StatusWaiting {
				t.Fatalf("the job is %s; want waiting", got.Status)
			}
			if _, err := h.blobs.Open(h.ctx, blob.AttemptOutputKey(acc.ID, j.ID, a.Lease.Attempt, "out.mp4")); !errors.Is(err, problem.ErrNotFound) {
				t.Errorf("the requeued attempt's out.mp4 is kept: %v", err)
			}
		})
	}
}
