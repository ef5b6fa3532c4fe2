// Package workqueuetest is the shared suite every workqueue.Queue adapter passes: in process,
// over HTTP, over a message broker; and the suites of the stores behind the queue, the
// workqueue.Registry of runners and the workqueue.Credentials of worker tokens, with in-memory
// ones of each.
//
// A new transport's test calls TestQueue once, with the Features it has and a Constructor that
// puts it in front of a fresh control plane (servicetest's QueueHarness makes the Harness):
//
//	workqueuetest.TestQueue(t, workqueuetest.Features{}, func(t *testing.T) workqueuetest.Harness {
//		return h.QueueHarness(t, newClient(t))
//	})
//
// A new store calls TestRegistry and TestCredentials the same way. Each test of the suites is an
// exported function too (TestClaimOnceUnderConcurrency, …), so a failure names the function to
// read, and -run selects it by that name.
package workqueuetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/porttest"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// Harness is one adapter under test and the control plane behind it.
type Harness struct {
	// Queue is the adapter, as a runner uses it.
	Queue workqueue.Queue
	// Submit saves a waiting job of class, reading the uploaded assets given (IDs of Upload) as
	// its inputs, and returns its ID. Its account's plan caps a job at a few files and bytes
	// (see Caps), so that the suite can pass them.
	Submit func(t *testing.T, class job.Class, assets ...string) string
	// SubmitFor saves a waiting cpu job of the priority for the account the name stands for (a
	// Pro account, made on first use), and returns its ID; each job is younger than the last.
	SubmitFor func(t *testing.T, account string, p job.Priority) string
	// Upload stores an asset of the account of the jobs Submit makes and returns its ID.
	Upload func(t *testing.T, content []byte) string
	// Cancel cancels a job as its owner would.
	Cancel func(t *testing.T, id string)
	// Expire lets every lease lapse and runs the control plane's sweep.
	Expire func(t *testing.T)
	// Elapse lets d pass on the control plane's clock: the compute a report may be billed for
	// is what the control plane saw pass.
	Elapse func(d time.Duration)
	// Job reads a job from the store.
	Job func(t *testing.T, id string) *job.Job
	// Output reads a stored output file of a job; nil when none is stored.
	Output func(t *testing.T, jobID, name string) []byte
}

// Features says what a workqueue.Queue adapter can do. Every adapter (in process, over HTTP,
// over a message broker) does all the suite asks, so it has no field yet: a new adapter passes
// every test, and a field is added here only when a real adapter cannot do something the others
// can.
type Features struct{}

// Constructor returns a fresh control plane and the adapter under test in front of it. Each
// test calls it once.
type Constructor func(t *testing.T) Harness

// TestQueue runs the shared workqueue.Queue suite: each test below, in parallel, against harnesses
// that newHarness makes. An adapter's own test calls it once per transport.
func TestQueue(t *testing.T, f Features, newHarness Constructor) {
	t.Helper()
	tests := []func(t *testing.T, f Features, newHarness Constructor){
		TestClaimOnceUnderConcurrency,
		TestClaimTakesOnlyItsClass,
		TestClaimWaitsForWork,
		TestClaimOrderIsPriorityThenTurns,
		TestClaimOrderHoldsUnderConcurrency,
		TestAssignmentCarriesTheJob,
		TestHeartbeatRunsAndKeepsTheJob,
		TestCancelSeenThroughTheHeartbeat,
		TestOutputsAndResultComplete,
		TestLeaseReadsOnlyItsJobsInputs,
		TestResultHeldToStoredFiles,
		TestReportCarriesSmallFiles,
		TestComputeIsWhatTheControlPlaneSaw,
		TestFailureIsMappedByTheCore,
		TestExpiredLeaseIsRefused,
		TestForeignOrForgedLeaseIsRefused,
		TestJobWhoseComputeNeverBeganIsRequeued,
	}
	porttest.Run(t, f, newHarness, tests...)
}

// TestClaimOnceUnderConcurrency: concurrent claimers take every waiting job, each once.
func TestClaimOnceUnderConcurrency(t *testing.T, f Features, newHarness Constructor) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	const jobs, runners = 12, 6
	want := map[string]bool{}
	for range jobs {
		want[h.Submit(t, job.ClassCPU)] = true
	}
	var (
		mu  sync.Mutex
		got = map[string]int{}
		wg  sync.WaitGroup
	)
	for range runners {
		wg.Go(func() {
			for {
				as, err := h.Queue.Claim(ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 2, Worker: "suite"})
				if err != nil {
					t.Error(err)
					return
				}
				if len(as) == 0 {
					return
				}
				mu.Lock()
				for _, a := range as {
					got[a.Lease.JobID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(got) != jobs {
		t.Fatalf("%d of %d jobs claimed", len(got), jobs)
	}
	for id, n := range got {
		if n != 1 || !want[id] {
			t.Fatalf("job %s claimed %d times (submitted: %v)", id, n, want[id])
		}
	}
}

// TestClaimTakesOnlyItsClass: a claim takes jobs of its class only: a cpu claim no gpu job, a gpu
// claim no cpu job.
func TestClaimTakesOnlyItsClass(t *testing.T, f Features, newHarness Constructor) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	gpu := h.Submit(t, job.ClassGPU)
	if as, err := h.Queue.Claim(ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 4}); err != nil || len(as) != 0 {
		t.Fatalf("a cpu claim took %v, %v", as, err)
	}
	as, err := h.Queue.Claim(ctx, workqueue.ClaimParams{Class: job.ClassGPU, Max: 4})
	if err != nil || len(as) != 1 || as[0].Lease.JobID != gpu || as[0].Class != job.ClassGPU {
		t.Fatalf("a gpu claim took %v, %v", as, err)
	}
}

// TestClaimWaitsForWork: a claim with nothing to take waits, and returns the job submitted while it
// waits.
func TestClaimWaitsForWork(t *testing.T, f Features, newHarness Constructor) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	got := make(chan []workqueue.Assignment, 1)
	errc := make(chan error, 1)
	go func() {
		as, err := h.Queue.Claim(ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 1, Wait: 20 * time.Second})
		got <- as
		errc <- err
	}()
	// The claim is waiting, or about to: a job submitted now is the one it returns.
	id := h.Submit(t, job.ClassCPU)
	if as := <-got; len(as) != 1 || as[0].Lease.JobID != id {
		t.Fatalf("the waiting claim got %v, %v", as, <-errc)
	}
}

// TestClaimOrderIsPriorityThenTurns: claims hand jobs out in job.Order's order: every waiting
// high job first, then the accounts' jobs by turns (the account served least recently first
// within a turn), low last.
func TestClaimOrderIsPriorityThenTurns(t *testing.T, f Features, newHarness Constructor) {
	t.Parallel()
	h := newHarness(t)
	a1, a2, a3 := h.SubmitFor(t, "a", job.PriorityNormal), h.SubmitFor(t, "a", job.PriorityNormal), h.SubmitFor(t, "a", job.PriorityNormal)
	b1, b2 := h.SubmitFor(t, "b", job.PriorityNormal), h.SubmitFor(t, "b", job.PriorityNormal)
	bLow := h.SubmitFor(t, "b", job.PriorityLow)
	aHigh := h.SubmitFor(t, "a", job.PriorityHigh)
	// The high job, the youngest, overtakes them all. A, served by it, then waits for B's first
	// turn although its own first job is older; in the second turn B, served before A, goes first.
	want := []string{aHigh, b1, a1, b2, a2, a3, bLow}
	var got []string
	for range want {
		got = append(got, claimOne(t, h).Lease.JobID)
		// Served is when an account's job was dispatched: let each claim be later than the last.
		h.Elapse(time.Millisecond)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("claim order %v, want %v (high, then turns, low last)", got, want)
	}
}

// TestClaimOrderHoldsUnderConcurrency: concurrent claims take the head of the order between them:
// with two accounts' backlogs (all of A's older) and a high job of each, each round of two claims
// at once takes the two high jobs first, then one job of each account, never two of A's.
func TestClaimOrderHoldsUnderConcurrency(t *testing.T, f Features, newHarness Constructor) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	owner := map[string]string{}
	for _, acct := range []string{"a", "b"} {
		for range 6 {
			owner[h.SubmitFor(t, acct, job.PriorityNormal)] = acct
		}
	}
	aHigh, bHigh := h.SubmitFor(t, "a", job.PriorityHigh), h.SubmitFor(t, "b", job.PriorityHigh)
	for round := range 4 {
		var (
			mu  sync.Mutex
			got []string
			wg  sync.WaitGroup
		)
		for range 2 {
			wg.Go(func() {
				as, err := h.Queue.Claim(ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 1, Worker: "suite"})
				if err != nil || len(as) != 1 {
					t.Errorf("claim: %v, %v", as, err)
					return
				}
				mu.Lock()
				got = append(got, as[0].Lease.JobID)
				mu.Unlock()
			})
		}
		wg.Wait()
		// Served is when an account's job was dispatched: the next round is later.
		h.Elapse(time.Millisecond)
		if len(got) != 2 {
			t.Fatalf("round %d took %v", round+1, got)
		}
		if round == 0 {
			if !slices.Contains(got, aHigh) || !slices.Contains(got, bHigh) {
				t.Fatalf("the first two concurrent claims took %v, want the high jobs %s and %s", got, aHigh, bHigh)
			}
			continue
		}
		if owner[got[0]] == owner[got[1]] || owner[got[0]] == "" {
			t.Fatalf("round %d: two concurrent claims took %v of accounts %q and %q, want one of each account", round+1, got, owner[got[0]], owner[got[1]])
		}
	}
}

// TestAssignmentCarriesTheJob: an assignment carries its job's ID, type, inputs and params, and the
// job is dispatched.
func TestAssignmentCarriesTheJob(t *testing.T, f Features, newHarness Constructor) {
	t.Parallel()
	h := newHarness(t)
	id := h.Submit(t, job.ClassCPU)
	a := claimOne(t, h)
	j := h.Job(t, id)
	if a.Lease.JobID != id || a.Lease.Attempt != 1 || a.Lease.Token == "" || a.AccountID != j.AccountID || a.Type != j.Type ||
		a.Timeout != j.Timeout || a.LeaseFor <= 0 || a.Limits.Bytes <= 0 || a.Limits.Files <= 0 {
		t.Fatalf("assignment %+v of job %+v", a, j)
	}
	if !bytes.Equal(compact(a.Params), compact(j.Params)) {
		t.Fatalf("params %s, want %s", a.Params, j.Params)
	}
	if j.Status != job.StatusDispatched {
		t.Fatalf("a claimed job is %s", j.Status)
	}
}

// TestHeartbeatRunsAndKeepsTheJob: heartbeats start the job, record its progress and when its
// compute began, and keep its lease.
func TestHeartbeatRunsAndKeepsTheJob(t *testing.T, f Features, newHarness Constructor) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	id := h.Submit(t, job.ClassCPU)
	a := claimOne(t, h)
	ack, err := h.Queue.Heartbeat(ctx, workqueue.Beat{Lease: a.Lease})
	if err != nil || ack.Cancelled || ack.LeaseUntil.IsZero() {
		t.Fatalf("first heartbeat: %+v %v", ack, err)
	}
	if j := h.Job(t, id); j.Status != job.StatusRunning || j.ExecStartedAt != nil {
		t.Fatalf("after the first heartbeat: %s, exec %v", j.Status, j.ExecStartedAt)
	}
	if _, err := h.Queue.Heartbeat(ctx, workqueue.Beat{Lease: a.Lease, Progress: 0.4, ProcessedMs: 1500, Executing: true}); err != nil {
		t.Fatal(err)
	}
	if j := h.Job(t, id); j.Progress != 0.4 || j.ProcessedMs != 1500 || j.ExecStartedAt == nil {
		t.Fatalf("after an executing heartbeat: progress %v, processed %d ms, exec %v", j.Progress, j.ProcessedMs, j.ExecStartedAt)
	}
	// The media time written only grows: a heartbeat sent before another arrives late.
	if _, err := h.Queue.Heartbeat(ctx, workqueue.Beat{Lease: a.Lease, Progress: 0.3, ProcessedMs: 900, Executing: true}); err != nil {
		t.Fatal(err)
	}
	if j := h.Job(t, id); j.Progress != 0.4 || j.ProcessedMs != 1500 {
		t.Fatalf("after a late heartbeat: progress %v, processed %d ms", j.Progress, j.ProcessedMs)
	}
}

// TestCancelSeenThroughTheHeartbeat: a job cancelled while it runs is told so by its next
// heartbeat, and the killed run's report changes nothing.
func TestCancelSeenThroughTheHeartbeat(t *testing.T, f Features, newHarness Constructor) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	id := h.Submit(t, job.ClassCPU)
	a := claimExecuting(t, h)
	h.Cancel(t, id)
	ack, err := h.Queue.Heartbeat(ctx, workqueue.Beat{Lease: a.Lease, Progress: 0.5, Executing: true})
	if err != nil || !ack.Cancelled {
		t.Fatalf("heartbeat after the cancel: %+v %v", ack, err)
	}
	// The killed run's report is taken and changes nothing.
	if err := h.Queue.Report(ctx, a.Lease, workqueue.Result{ComputeMs: 10, Started: true,
		Failure: &workqueue.Failure{Kind: workqueue.KindCancelled}}); err != nil {
		t.Fatalf("report of the cancelled run: %v", err)
	}
	if j := h.Job(t, id); j.Status != job.StatusCancelled {
		t.Fatalf("job %s", j.Status)
	}
}

// TestOutputsAndResultComplete: a lease reads its input and stores an output, and the result
// completes the job with its compute and cost; a re-sent result is harmless.
func TestOutputsAndResultComplete(t *testing.T, f Features, newHarness Constructor) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	asset := h.Upload(t, []byte("WEBVTT\n"))
	id := h.Submit(t, job.ClassCPU, asset)
	a := claimExecuting(t, h)
	r, err := h.Queue.OpenAsset(ctx, a.Lease, asset)
	if err != nil {
		t.Fatalf("OpenAsset: %v", err)
	}
	in, _ := io.ReadAll(r)
	r.Close()
	if string(in) != "WEBVTT\n" {
		t.Fatalf("asset read %q", in)
	}
	video := bytes.Repeat([]byte{0, 1, 2, 3}, 100<<10)
	if n, err := h.Queue.PutOutput(ctx, a.Lease, "out.mp4", bytes.NewReader(video), 0); err != nil || n != int64(len(video)) {
		t.Fatalf("PutOutput: %d %v", n, err)
	}
	h.Elapse(1500 * time.Millisecond)
	res := workqueue.Result{Files: []job.File{{Path: "out.mp4", Type: job.FileVideo, Size: int64(len(video))}}, ComputeMs: 1500, Started: true}
	for range 2 { // a re-sent result is harmless
		if err := h.Queue.Report(ctx, a.Lease, res); err != nil {
			t.Fatalf("Report: %v", err)
		}
	}
	j := h.Job(t, id)
	if j.Status != job.StatusComplete || j.ComputeMs != 1500 || j.Cost == nil || j.Cost.Amount != 2 {
		t.Fatalf("job %s, compute %d, cost %+v", j.Status, j.ComputeMs, j.Cost)
	}
	if got := h.Output(t, id, "out.mp4"); !bytes.Equal(got, video) {
		t.Fatalf("stored output has %d bytes, want %d", len(got), len(video))
	}
}

// TestLeaseReadsOnlyItsJobsInputs: a lease reads the uploaded assets its job names as inputs, and
// no other upload of the
// account: another is not found.
func TestLeaseReadsOnlyItsJobsInputs(t *testing.T, f Features, newHarness Constructor) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	mine, other := h.Upload(t, []byte("mine")), h.Upload(t, []byte("other"))
	h.Submit(t, job.ClassCPU, mine)
	a := claimOne(t, h)
	r, err := h.Queue.OpenAsset(ctx, a.Lease, mine)
	if err != nil {
		t.Fatalf("its input: %v", err)
	}
	r.Close()
	if r, err := h.Queue.OpenAsset(ctx, a.Lease, other); err == nil || !strings.Contains(err.Error(), "not found") {
		if r != nil {
			r.Close()
		}
		t.Fatalf("another upload of the same account: %v, want not found", err)
	}
}

// TestResultHeldToStoredFiles: the result of a success must name exactly the files stored under the
// lease, each a name
// the validator lets a command write, within the plan's caps for the whole job; the sizes
// recorded are the control plane's. A refused report or upload leaves the job running and
// the report can be made right.
func TestResultHeldToStoredFiles(t *testing.T, f Features, newHarness Constructor) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	id := h.Submit(t, job.ClassCPU)
	a := claimExecuting(t, h)
	if a.Limits.Files > 64 || a.Limits.Bytes > 8<<20 {
		t.Fatalf("the harness's plan allows %d files and %d bytes a job: too many to pass here; make them small", a.Limits.Files, a.Limits.Bytes)
	}
	video := []byte("video bytes")
	if _, err := h.Queue.PutOutput(ctx, a.Lease, "out.mp4", bytes.NewReader(video), 0); err != nil {
		t.Fatalf("PutOutput: %v", err)
	}
	// Past the plan's files: the first new name over job_files is refused and not kept.
	for i := 1; i < a.Limits.Files; i++ {
		if _, err := h.Queue.PutOutput(ctx, a.Lease, fmt.Sprintf("seg%03d.ts", i), bytes.NewReader([]byte("s")), 0); err != nil {
			t.Fatalf("segment %d of %d: %v", i, a.Limits.Files, err)
		}
	}
	if _, err := h.Queue.PutOutput(ctx, a.Lease, "one-too-many.ts", bytes.NewReader([]byte("s")), 0); !tooLarge(err) {
		t.Fatalf("file %d: %v, want too large", a.Limits.Files+1, err)
	}
	// Past the plan's bytes for the whole job: a file that fits alone but not with the rest.
	rest := a.Limits.Bytes - int64(len(video)) - int64(a.Limits.Files-1)
	if _, err := h.Queue.PutOutput(ctx, a.Lease, "seg001.ts", bytes.NewReader(make([]byte, rest+2)), 0); !tooLarge(err) {
		t.Fatalf("bytes past job_bytes: %v, want too large", err)
	}
	// Refusals of names and of results; over a broker they also end the client's memory of
	// the lease's file URLs, so they come after the uploads.
	for _, name := range []string{".env", "-x.mp4", "a b.mp4", "%2e%2e"} {
		if _, err := h.Queue.PutOutput(ctx, a.Lease, name, bytes.NewReader([]byte("x")), 0); !refused(err) {
			t.Errorf("an output named %q: %v, want refused", name, err)
		}
	}
	file := func(name string, size int64) job.File { return job.File{Path: name, Type: job.FileVideo, Size: size} }
	for _, tt := range []struct {
		name  string
		files []job.File
	}{
		{"a file not stored", []job.File{file("out.mp4", 11), file("other.mp4", 5)}},
		{"a traversal name", []job.File{file("out.mp4", 11), file("../../acc_x/jobs/j/out.mp4", 5)}},
		{"a host path", []job.File{file("/etc/passwd", 5)}},
		{"a stored file left out", nil},
		{"the same file twice", []job.File{file("out.mp4", 11), file("out.mp4", 11)}},
	} {
		res := workqueue.Result{Files: tt.files, Data: json.RawMessage(`{"x":1}`), ComputeMs: 10, Started: true}
		if err := h.Queue.Report(ctx, a.Lease, res); !refused(err) {
			t.Errorf("%s: %v, want refused", tt.name, err)
		}
		if j := h.Job(t, id); j.Status != job.StatusRunning || j.Output != nil || j.Cost != nil {
			t.Fatalf("%s changed the job: %s %+v %+v", tt.name, j.Status, j.Output, j.Cost)
		}
	}
	// Reported sizes are not believed: the stored ones are recorded.
	files := []job.File{file("out.mp4", 1)}
	for i := 1; i < a.Limits.Files; i++ {
		files = append(files, file(fmt.Sprintf("seg%03d.ts", i), 999))
	}
	if err := h.Queue.Report(ctx, a.Lease, workqueue.Result{Files: files, ComputeMs: 10, Started: true}); err != nil {
		t.Fatalf("the right result: %v", err)
	}
	j := h.Job(t, id)
	if j.Status != job.StatusComplete || len(j.Output.Files) != a.Limits.Files {
		t.Fatalf("job %s with %+v", j.Status, j.Output)
	}
	for _, f := range j.Output.Files {
		if want := map[bool]int64{true: int64(len(video)), false: 1}[f.Path == "out.mp4"]; f.Size != want {
			t.Errorf("%s recorded as %d bytes, stored %d", f.Path, f.Size, want)
		}
	}
}

// TestReportCarriesSmallFiles: a report may carry output files itself, up to the assignment's
// InlineBytes, beside files stored with PutOutput. They are held to the rules of an upload
// (names, each once, the plan's caps) and of a result (named in it, their sizes the control
// plane's); a refused report keeps none of them and leaves the job running.
func TestReportCarriesSmallFiles(t *testing.T, f Features, newHarness Constructor) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	id := h.Submit(t, job.ClassCPU)
	a := claimExecuting(t, h)
	if a.InlineBytes <= 0 || a.InlineBytes > a.Limits.Bytes {
		t.Fatalf("the assignment allows %d inline bytes of a job's %d: want some, within the job's", a.InlineBytes, a.Limits.Bytes)
	}
	video := []byte("video bytes")
	if _, err := h.Queue.PutOutput(ctx, a.Lease, "out.mp4", bytes.NewReader(video), 0); err != nil {
		t.Fatalf("PutOutput: %v", err)
	}
	thumb := []byte("a small jpeg")
	file := func(name string, size int64) job.File {
		return job.File{Path: name, Type: job.TypeOf(name), Size: size}
	}
	both := []job.File{file("out.mp4", 11), file("thumb.jpg", 1)}
	for _, tt := range []struct {
		name   string
		inline []workqueue.InlineFile
		files  []job.File
		check  func(error) bool
	}{
		{"more than the assignment allows", []workqueue.InlineFile{{Name: "thumb.jpg", Data: make([]byte, a.InlineBytes+1)}}, both, tooLarge},
		{"a name no command may write", []workqueue.InlineFile{{Name: ".env", Data: thumb}}, []job.File{file("out.mp4", 11), file(".env", 1)}, refused},
		{"a traversal name", []workqueue.InlineFile{{Name: "../x/thumb.jpg", Data: thumb}}, both, refused},
		{"the same file twice", []workqueue.InlineFile{{Name: "thumb.jpg", Data: thumb}, {Name: "thumb.jpg", Data: thumb}}, both, refused},
		{"a file the result leaves out", []workqueue.InlineFile{{Name: "thumb.jpg", Data: thumb}}, []job.File{file("out.mp4", 11)}, refused},
		{"a name uploaded already", []workqueue.InlineFile{{Name: "thumb.jpg", Data: thumb}, {Name: "out.mp4", Data: []byte("other")}}, both, refused},
		{"past the plan's files with those stored", many(a.Limits.Files), append(both, names(a.Limits.Files)...), tooLarge},
	} {
		res := workqueue.Result{Files: tt.files, Inline: tt.inline, ComputeMs: 10, Started: true}
		if err := h.Queue.Report(ctx, a.Lease, res); !tt.check(err) {
			t.Errorf("%s: %v, want refused", tt.name, err)
		}
		if j := h.Job(t, id); j.Status != job.StatusRunning || j.Output != nil || j.Cost != nil {
			t.Fatalf("%s changed the job: %s %+v %+v", tt.name, j.Status, j.Output, j.Cost)
		}
		if got := h.Output(t, id, "thumb.jpg"); got != nil {
			t.Fatalf("%s kept the file it carried: %q", tt.name, got)
		}
	}
	res := workqueue.Result{Files: both, Inline: []workqueue.InlineFile{{Name: "thumb.jpg", Data: thumb}}, ComputeMs: 10, Started: true}
	for range 2 { // a re-sent result is harmless
		if err := h.Queue.Report(ctx, a.Lease, res); err != nil {
			t.Fatalf("the right result: %v", err)
		}
	}
	j := h.Job(t, id)
	if j.Status != job.StatusComplete || j.Output == nil || len(j.Output.Files) != 2 {
		t.Fatalf("job %s with %+v", j.Status, j.Output)
	}
	for _, f := range j.Output.Files {
		if want := map[string]int64{"out.mp4": int64(len(video)), "thumb.jpg": int64(len(thumb))}[f.Path]; f.Size != want {
			t.Errorf("%s recorded as %d bytes, stored %d", f.Path, f.Size, want)
		}
	}
	if got := h.Output(t, id, "thumb.jpg"); !bytes.Equal(got, thumb) {
		t.Fatalf("the carried file holds %q, want %q", got, thumb)
	}
	if got := h.Output(t, id, "out.mp4"); !bytes.Equal(got, video) {
		t.Fatalf("the uploaded file holds %q, want %q", got, video)
	}
	for _, f := range names(a.Limits.Files) {
		if got := h.Output(t, id, f.Path); got != nil {
			t.Fatalf("a refused report's %s is stored", f.Path)
		}
	}
}

// many is n tiny files to carry, named as names names them.
func many(n int) []workqueue.InlineFile {
	var out []workqueue.InlineFile
	for _, f := range names(n) {
		out = append(out, workqueue.InlineFile{Name: f.Path, Data: []byte("i")})
	}
	return out
}

// names is n image files, p0001.png on.
func names(n int) []job.File {
	var out []job.File
	for i := range n {
		out = append(out, job.File{Path: fmt.Sprintf("p%04d.png", i+1), Type: job.FileImage, Size: 1})
	}
	return out
}

// TestComputeIsWhatTheControlPlaneSaw: a worker's compute figure is a hint: the charge is never
// more than what the control plane
// saw pass since the FFmpeg step began (or, with no heartbeat saying so, since it handed the
// job out), nor more than the job's timeout.
func TestComputeIsWhatTheControlPlaneSaw(t *testing.T, f Features, newHarness Constructor) {
	t.Parallel()
	ctx := context.Background()
	const absurd = 1_000_000_000_000
	tests := []struct {
		name      string
		executing bool
		elapse    time.Duration
		want      func(j *job.Job) int64
	}{
		{"after an executing heartbeat", true, 2 * time.Second, func(*job.Job) int64 { return 2000 }},
		{"with no heartbeat at all", false, 3 * time.Second, func(*job.Job) int64 { return 3000 }},
		{"past the job's timeout", true, 48 * time.Hour, func(j *job.Job) int64 { return j.Timeout.Milliseconds() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			id := h.Submit(t, job.ClassCPU)
			a := claimOne(t, h)
			if tt.executing {
				if _, err := h.Queue.Heartbeat(ctx, workqueue.Beat{Lease: a.Lease, Executing: true}); err != nil {
					t.Fatal(err)
				}
			}
			h.Elapse(tt.elapse)
			res := workqueue.Result{ComputeMs: absurd, Started: true, Failure: &workqueue.Failure{Kind: workqueue.KindExit, Message: "exit 1"}}
			if err := h.Queue.Report(ctx, a.Lease, res); err != nil {
				t.Fatalf("Report: %v", err)
			}
			j := h.Job(t, id)
			if want := tt.want(j); j.Status != job.StatusFailed || j.ComputeMs != want || j.Cost == nil || j.Cost.Amount > (want+999)/1000*10 {
				t.Fatalf("job %s, compute %d ms, cost %+v; want failed, %d ms billed", j.Status, j.ComputeMs, j.Cost, want)
			}
		})
	}
}

// TestFailureIsMappedByTheCore: a runner's failure becomes the error the core maps it to (a failed
// fetch is INPUT_FETCH_FAILED, retryable), and costs nothing.
func TestFailureIsMappedByTheCore(t *testing.T, f Features, newHarness Constructor) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	id := h.Submit(t, job.ClassCPU)
	a := claimOne(t, h)
	if err := h.Queue.Report(ctx, a.Lease, workqueue.Result{Failure: &workqueue.Failure{Kind: workqueue.KindFetch,
		Message: "input https://media.example/a.mp4 could not be fetched: the server answered 404"}}); err != nil {
		t.Fatal(err)
	}
	j := h.Job(t, id)
	if j.Status != job.StatusFailed || j.Error.Code != problem.CodeInputFetchFailed || !j.Error.Retryable || j.Cost.Amount != 0 {
		t.Fatalf("job %s %+v %+v", j.Status, j.Error, j.Cost)
	}
}

// TestExpiredLeaseIsRefused: after a lease lapses the job fails as RUNNER_LOST, and its heartbeat,
// report and output are refused and change nothing.
func TestExpiredLeaseIsRefused(t *testing.T, f Features, newHarness Constructor) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	id := h.Submit(t, job.ClassCPU)
	a := claimExecuting(t, h)
	h.Expire(t)
	j := h.Job(t, id)
	if j.Status != job.StatusFailed || j.Error.Code != problem.CodeRunnerLost {
		t.Fatalf("after the lease lapsed: %s %+v", j.Status, j.Error)
	}
	if _, err := h.Queue.Heartbeat(ctx, workqueue.Beat{Lease: a.Lease}); !errors.Is(err, workqueue.ErrLeaseRefused) {
		t.Fatalf("heartbeat on an expired lease: %v", err)
	}
	err := h.Queue.Report(ctx, a.Lease, workqueue.Result{Data: json.RawMessage(`{"late":true}`), ComputeMs: 1, Started: true})
	if !errors.Is(err, workqueue.ErrLeaseRefused) {
		t.Fatalf("report on an expired lease: %v", err)
	}
	if _, err := h.Queue.PutOutput(ctx, a.Lease, "late.mp4", bytes.NewReader([]byte("x")), 0); !errors.Is(err, workqueue.ErrLeaseRefused) {
		t.Fatalf("output on an expired lease: %v", err)
	}
	if j := h.Job(t, id); j.Status != job.StatusFailed || j.Output != nil {
		t.Fatal("a refused report changed the job")
	}
}

// TestForeignOrForgedLeaseIsRefused: a lease with another job's token, a forged token, a later
// attempt or no token is refused, and changes nothing.
func TestForeignOrForgedLeaseIsRefused(t *testing.T, f Features, newHarness Constructor) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	first, second := h.Submit(t, job.ClassCPU), h.Submit(t, job.ClassCPU)
	as, err := h.Queue.Claim(ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 2})
	if err != nil || len(as) != 2 {
		t.Fatalf("claim: %v %v", as, err)
	}
	mine, other := as[0].Lease, as[1].Lease
	leases := map[string]workqueue.Lease{
		"another job's token": {JobID: mine.JobID, Attempt: mine.Attempt, Token: other.Token},
		"a forged token":      {JobID: mine.JobID, Attempt: mine.Attempt, Token: "AAAA" + mine.Token[4:]},
		"a later attempt":     {JobID: mine.JobID, Attempt: mine.Attempt + 1, Token: mine.Token},
		"no token":            {JobID: mine.JobID, Attempt: mine.Attempt},
	}
	for name, l := range leases {
		if _, err := h.Queue.Heartbeat(ctx, workqueue.Beat{Lease: l}); !errors.Is(err, workqueue.ErrLeaseRefused) {
			t.Errorf("heartbeat with %s: %v", name, err)
		}
		if err := h.Queue.Report(ctx, l, workqueue.Result{Data: json.RawMessage(`{}`)}); !errors.Is(err, workqueue.ErrLeaseRefused) {
			t.Errorf("report with %s: %v", name, err)
		}
		carrying := workqueue.Result{Files: []job.File{{Path: "out.mp4", Type: job.FileVideo}},
			Inline: []workqueue.InlineFile{{Name: "out.mp4", Data: []byte("not yours")}}}
		if err := h.Queue.Report(ctx, l, carrying); !errors.Is(err, workqueue.ErrLeaseRefused) {
			t.Errorf("report carrying a file with %s: %v", name, err)
		}
	}
	for _, id := range []string{first, second} {
		if j := h.Job(t, id); j.Status != job.StatusDispatched {
			t.Fatalf("refused calls changed job %s: %s", id, j.Status)
		}
		if got := h.Output(t, id, "out.mp4"); got != nil {
			t.Fatalf("a refused report stored a file of job %s: %q", id, got)
		}
	}
}

// TestJobWhoseComputeNeverBeganIsRequeued: a job whose lease lapses before its compute began waits
// again, under a new lease, for another runner first; the first attempt's report is refused.
func TestJobWhoseComputeNeverBeganIsRequeued(t *testing.T, f Features, newHarness Constructor) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	id := h.Submit(t, job.ClassCPU)
	a := claimOne(t, h)
	h.Expire(t)
	if j := h.Job(t, id); j.Status != job.StatusWaiting {
		t.Fatalf("a job lost before it ran is %s, want waiting", j.Status)
	}
	if as, err := h.Queue.Claim(ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 1, Worker: "suite"}); err != nil || len(as) != 0 {
		t.Fatalf("the runner that lost the job claimed %v (%v) at once", as, err)
	}
	again := claimAs(t, h, "another")
	if again.Lease.JobID != id || again.Lease.Attempt != a.Lease.Attempt+1 || again.Lease.Token == a.Lease.Token {
		t.Fatalf("reclaimed lease %+v after %+v", again.Lease, a.Lease)
	}
	if err := h.Queue.Report(ctx, a.Lease, workqueue.Result{Data: json.RawMessage(`{}`)}); !errors.Is(err, workqueue.ErrLeaseRefused) {
		t.Fatalf("the first attempt's report: %v", err)
	}
}

// refused tells an error of a refused report or upload, as any transport carries it: a
// CONFLICT, which runners take as a lease to drop.
func refused(err error) bool {
	return err != nil && (problem.CodeOf(err) == problem.CodeConflict || errors.Is(err, workqueue.ErrLeaseRefused))
}

// tooLarge tells an error of a cap passed (413 PAYLOAD_TOO_LARGE), as any transport carries it.
func tooLarge(err error) bool {
	return err != nil && (problem.CodeOf(err) == problem.CodePayloadTooLarge || strings.Contains(err.Error(), "PAYLOAD_TOO_LARGE"))
}

// claimExecuting claims one job and says its FFmpeg step began.
func claimExecuting(t *testing.T, h Harness) workqueue.Assignment {
	t.Helper()
	a := claimOne(t, h)
	if _, err := h.Queue.Heartbeat(context.Background(), workqueue.Beat{Lease: a.Lease, Executing: true}); err != nil {
		t.Fatal(err)
	}
	return a
}

func claimOne(t *testing.T, h Harness) workqueue.Assignment {
	t.Helper()
	return claimAs(t, h, "suite")
}

// claimAs claims one job as the runner named runner.
func claimAs(t *testing.T, h Harness, runner string) workqueue.Assignment {
	t.Helper()
	as, err := h.Queue.Claim(context.Background(), workqueue.ClaimParams{Class: job.ClassCPU, Max: 1, Worker: runner})
	if err != nil || len(as) != 1 {
		t.Fatalf("claim: %v %v", as, err)
	}
	return as[0]
}

func compact(b []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return b
	}
	return buf.Bytes()
}
