package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/runner"
	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/service/servicetest"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// scripted is a test executor: each run waits for its release (or its context) and returns the
// result it is given. It stands in for FFmpeg, whose executors have tests of their own.
type scripted struct {
	started chan string
	stopped chan string
	release chan workqueue.Result
	// computed makes each run say its compute is over as soon as it starts (Hooks.Computed),
	// as an FFmpeg run does before it uploads its outputs; computedJob, that job's run alone.
	computed    bool
	computedJob string
}

func newScripted() *scripted {
	return &scripted{started: make(chan string, 16), stopped: make(chan string, 16), release: make(chan workqueue.Result, 16)}
}

func (s *scripted) Execute(ctx context.Context, a workqueue.Assignment, _ string, h runner.Hooks) workqueue.Result {
	h.Executing()
	h.Progress(0.5)
	if s.computed || s.computedJob == a.Lease.JobID {
		h.Computed()
	}
	s.started <- a.Lease.JobID
	select {
	case r := <-s.release:
		return r
	case <-ctx.Done():
		s.stopped <- a.Lease.JobID
		return workqueue.Result{ComputeMs: 5, Failure: &workqueue.Failure{Kind: workqueue.KindCancelled}}
	}
}

// refusing is a work queue that refuses every heartbeat after the first: the control plane no
// longer honours the lease.
type refusing struct {
	workqueue.Queue
	beats atomic.Int32
}

func (r *refusing) Heartbeat(ctx context.Context, b workqueue.Beat) (workqueue.Ack, error) {
	if r.beats.Add(1) > 1 {
		return workqueue.Ack{}, workqueue.ErrLeaseRefused
	}
	return r.Queue.Heartbeat(ctx, b)
}

// flaky is a work queue whose Report fails until failures reaches zero: a control plane that is
// down, then back.
type flaky struct {
	workqueue.Queue
	failures atomic.Int32
	reports  atomic.Int32
}

func (f *flaky) Report(ctx context.Context, l workqueue.Lease, r workqueue.Result) error {
	f.reports.Add(1)
	if f.failures.Add(-1) >= 0 {
		return errors.New("connection refused")
	}
	return f.Queue.Report(ctx, l, r)
}

type agentBundle struct {
	h     *servicetest.Harness
	exec  *scripted
	queue workqueue.Queue
	acct  account.Account
}

func agentSetup(t *testing.T) *agentBundle {
	t.Helper()
	types, err := jobtype.NewRegistry(ffmpegjob.Type{})
	if err != nil {
		t.Fatal(err)
	}
	h := servicetest.New(t, servicetest.Options{Types: types})
	acct, _ := h.Open(t, "", account.PlanPro, 1000)
	return &agentBundle{h: h, exec: newScripted(), queue: h.Runs, acct: acct}
}

func (b *agentBundle) submit(t *testing.T) string {
	t.Helper()
	j, err := b.h.Submit.Submit(context.Background(), b.acct, jobtype.Request{Type: "ffmpeg",
		Params: json.RawMessage(`{"command":"ffmpeg -f lavfi -i testsrc=duration=1 out.mp4"}`)})
	if err != nil {
		t.Fatal(err)
	}
	return j.ID
}

// start runs an agent over q until the returned stop is called; stop waits for Run to return.
func (b *agentBundle) start(t *testing.T, q workqueue.Queue, cfg runner.Config) (stop func()) {
	t.Helper()
	cfg.Class, cfg.WorkRoot, cfg.Poll = job.ClassCPU, t.TempDir(), 10*time.Millisecond
	if cfg.DrainTimeout == 0 {
		cfg.DrainTimeout = 100 * time.Millisecond
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	a, err := runner.New(cfg, q, map[string]runner.Executor{ffmpegjob.Name: b.exec})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

func (b *agentBundle) waitStatus(t *testing.T, id string, want job.Status) *job.Job {
	t.Helper()
	return b.waitJob(t, id, string(want), func(j *job.Job) bool { return j.Status == want })
}

// waitJob polls the store until cond holds.
func (b *agentBundle) waitJob(t *testing.T, id, what string, cond func(*job.Job) bool) *job.Job {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		j, err := b.h.Store.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if cond(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %s (exec %v), want %s", id, j.Status, j.ExecStartedAt, what)
		}
		time.Sleep(5 * time.Millisecond) // the poll interval of a wait on the job's state
	}
}

func TestAgentRunsAJob(t *testing.T) {
	t.Parallel()
	b := agentSetup(t)
	b.start(t, b.queue, runner.Config{Slots: 1, Heartbeat: 20 * time.Millisecond})
	id := b.submit(t)
	if got := <-b.exec.started; got != id {
		t.Fatalf("ran %s", got)
	}
	// The compute began: the agent says so at once, and billing reads it.
	b.waitJob(t, id, "executing", func(j *job.Job) bool { return j.Status == job.StatusRunning && j.ExecStartedAt != nil })
	b.h.Clock.Advance(1200 * time.Millisecond) // the control plane bills no more compute than it saw pass
	b.exec.release <- workqueue.Result{Data: json.RawMessage(`{"ok":true}`), ComputeMs: 1200}
	j := b.waitStatus(t, id, job.StatusComplete)
	if j.Cost == nil || j.Cost.Amount != 2 {
		t.Fatalf("cost %+v", j.Cost)
	}
}

// TestAgentTimesARunsPhases: a run's stats carry its phases as its hooks mark them: a run that
// says when its compute ended has a store phase after it, one that does not has none, and each
// reported run has its report's round trip.
func TestAgentTimesARunsPhases(t *testing.T) {
	t.Parallel()
	for _, computed := range []bool{true, false} {
		b := agentSetup(t)
		b.exec.computed = computed
		stats := make(chan runner.RunStats, 1)
		b.start(t, b.queue, runner.Config{Slots: 1, Heartbeat: 20 * time.Millisecond, OnRun: func(r runner.RunStats) { stats <- r }})
		id := b.submit(t)
		if got := <-b.exec.started; got != id {
			t.Fatalf("ran %s", got)
		}
		const held = 30 * time.Millisecond
		time.Sleep(held) // the run's span to measure: the executor holds it this long
		b.exec.release <- workqueue.Result{Data: json.RawMessage(`{"ok":true}`)}
		var r runner.RunStats
		select {
		case r = <-stats:
		case <-time.After(10 * time.Second):
			t.Fatal("no run stats within 10 s")
		}
		var sum time.Duration
		for _, d := range r.Phases {
			if d < 0 {
				t.Errorf("computed %v: negative phase in %v", computed, r.Phases)
			}
			sum += d
		}
		want := []string{runner.PhaseStage, runner.PhaseCompute, runner.PhaseReport}
		if computed {
			want = append(want, runner.PhaseStore)
		}
		if len(r.Phases) != len(want) {
			t.Errorf("computed %v: phases %v, want %v", computed, r.Phases, want)
		}
		for _, p := range want {
			if _, ok := r.Phases[p]; !ok {
				t.Errorf("computed %v: phases %v lack %s", computed, r.Phases, p)
			}
		}
		// The executor's hold falls in the store phase when it said its compute ended before
		// it, else in the compute phase; the phases add up to no more than the run.
		if in := r.Phases[map[bool]string{true: runner.PhaseStore, false: runner.PhaseCompute}[computed]]; in < held {
			t.Errorf("computed %v: the executor's %v hold is not in its phase: %v", computed, held, r.Phases)
		}
		if r.Phases[runner.PhaseReport] <= 0 || sum > r.Took+10*time.Millisecond {
			t.Errorf("computed %v: phases %v (sum %v) against a run of %v", computed, r.Phases, sum, r.Took)
		}
	}
}

// TestAgentTakesTheNextJobOnceComputed: a run whose compute is over (uploading, reporting)
// holds no slot, so a one-slot agent starts the next job meanwhile; one such run per slot, so a
// third waits for one of the two to end.
func TestAgentTakesTheNextJobOnceComputed(t *testing.T) {
	t.Parallel()
	b := agentSetup(t)
	b.exec.computed = true
	b.start(t, b.queue, runner.Config{Slots: 1, Heartbeat: 20 * time.Millisecond})
	ids := []string{b.submit(t), b.submit(t), b.submit(t)}
	started := func() string {
		t.Helper()
		select {
		case id := <-b.exec.started:
			return id
		case <-time.After(10 * time.Second):
			t.Fatal("no run started within 10 s")
			return ""
		}
	}
	first, second := started(), started()
	if first == second {
		t.Fatalf("ran %s twice", first)
	}
	b.exec.release <- workqueue.Result{Data: json.RawMessage(`{"ok":true}`)}
	third := started()
	b.exec.release <- workqueue.Result{Data: json.RawMessage(`{"ok":true}`)}
	b.exec.release <- workqueue.Result{Data: json.RawMessage(`{"ok":true}`)}
	for _, id := range ids {
		b.waitStatus(t, id, job.StatusComplete)
	}
	if third == first || third == second {
		t.Fatalf("ran %s twice", third)
	}
}

// A cancel reaches the run through the heartbeat alone: no bus hint is needed.
func TestAgentStopsACancelledJob(t *testing.T) {
	t.Parallel()
	b := agentSetup(t)
	b.start(t, b.queue, runner.Config{Slots: 1, Heartbeat: 20 * time.Millisecond})
	id := b.submit(t)
	<-b.exec.started
	b.waitStatus(t, id, job.StatusRunning)
	if _, err := b.h.Cancel.Cancel(context.Background(), b.acct, id); err != nil {
		t.Fatal(err)
	}
	// The run's context ends at the next heartbeat, which answers cancelled.
	select {
	case got := <-b.exec.stopped:
		if got != id {
			t.Fatalf("stopped %s", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled job's run was not stopped")
	}
	b.waitStatus(t, id, job.StatusCancelled)
}

// A result the control plane does not take (it is down) is re-sent until it is acknowledged.
func TestAgentResendsAnUnacknowledgedResult(t *testing.T) {
	t.Parallel()
	b := agentSetup(t)
	q := &flaky{Queue: b.queue}
	q.failures.Store(3)
	b.start(t, q, runner.Config{Slots: 1, Heartbeat: 20 * time.Millisecond})
	id := b.submit(t)
	<-b.exec.started
	b.exec.release <- workqueue.Result{Data: json.RawMessage(`{"ok":true}`), ComputeMs: 100}
	b.waitStatus(t, id, job.StatusComplete)
	if n := q.reports.Load(); n != 4 {
		t.Fatalf("%d report calls, want 3 refused then 1 taken", n)
	}
}

// On stop, the agent takes no new work, lets a running job finish within the drain timeout, and
// hands back one that does not.
func TestAgentDrains(t *testing.T) {
	t.Parallel()
	b := agentSetup(t)
	stop := b.start(t, b.queue, runner.Config{Slots: 2, Heartbeat: 20 * time.Millisecond, DrainTimeout: 200 * time.Millisecond})
	finishes, lingers := b.submit(t), b.submit(t)
	started := map[string]bool{<-b.exec.started: true, <-b.exec.started: true}
	if !started[finishes] || !started[lingers] {
		t.Fatalf("started %v", started)
	}
	b.waitStatus(t, finishes, job.StatusRunning)
	b.waitStatus(t, lingers, job.StatusRunning)
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	b.exec.release <- workqueue.Result{Data: json.RawMessage(`{"ok":true}`), ComputeMs: 100}
	<-stopped
	later := b.submit(t)
	// One run took the release and completed; the other was handed back at the drain's end:
	// queued again, as a new attempt.
	ended := map[job.Status]int{}
	for _, id := range []string{finishes, lingers} {
		j := b.waitJob(t, id, "complete or handed back", func(j *job.Job) bool {
			return j.Status == job.StatusComplete || (j.Status == job.StatusWaiting && j.Requeues == 1)
		})
		ended[j.Status]++
	}
	if ended[job.StatusComplete] != 1 || ended[job.StatusWaiting] != 1 {
		t.Fatalf("after the drain: %v", ended)
	}
	if j, _ := b.h.Store.Get(context.Background(), later); j.Status != job.StatusWaiting || j.Attempt != 0 {
		t.Fatalf("a stopped agent claimed new work: %s, attempt %d", j.Status, j.Attempt)
	}
}

// TestAgentDrainLetsAnUploadFinish: at the drain's end a run still computing is handed back,
// while one whose compute is over (uploading its outputs) is let finish and report: its work is
// done.
func TestAgentDrainLetsAnUploadFinish(t *testing.T) {
	t.Parallel()
	b := agentSetup(t)
	uploading, computing := b.submit(t), b.submit(t)
	b.exec.computedJob = uploading
	stop := b.start(t, b.queue, runner.Config{Slots: 2, Heartbeat: 20 * time.Millisecond, DrainTimeout: time.Millisecond})
	started := map[string]bool{<-b.exec.started: true, <-b.exec.started: true}
	if !started[uploading] || !started[computing] {
		t.Fatalf("started %v", started)
	}
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	// The drain's end stops the computing run; the uploading one goes on until released.
	select {
	case got := <-b.exec.stopped:
		if got != computing {
			t.Fatalf("the drain stopped %s, want %s (still computing)", got, computing)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the drain did not stop the computing run")
	}
	b.exec.release <- workqueue.Result{Data: json.RawMessage(`{"ok":true}`), ComputeMs: 100}
	<-stopped
	b.waitStatus(t, uploading, job.StatusComplete)
	b.waitJob(t, computing, "handed back", func(j *job.Job) bool { return j.Status == job.StatusWaiting && j.Requeues == 1 })
}

// A lease the control plane refuses (the job went back to the queue, or failed RUNNER_LOST)
// stops the run at the refused heartbeat, and its result is not reported.
func TestAgentDropsARefusedLease(t *testing.T) {
	t.Parallel()
	b := agentSetup(t)
	q := &refusing{Queue: b.queue}
	reports := &flaky{Queue: q}
	b.start(t, reports, runner.Config{Slots: 1, Heartbeat: 20 * time.Millisecond})
	id := b.submit(t)
	<-b.exec.started
	select {
	case <-b.exec.stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("a run whose lease was refused went on")
	}
	if n := reports.reports.Load(); n != 0 {
		t.Fatalf("%d reports of a refused lease", n)
	}
	if j, _ := b.h.Store.Get(context.Background(), id); j.Status != job.StatusRunning {
		t.Fatalf("the job is %s", j.Status)
	}
}

// firstBeat is a work queue that calls before (once) ahead of the first heartbeat, and records
// when that heartbeat was answered and when the result was reported.
type firstBeat struct {
	workqueue.Queue
	before   func()
	beats    atomic.Int32
	once     sync.Once
	mu       sync.Mutex
	answered time.Time
	reported time.Time
}

func (f *firstBeat) Heartbeat(ctx context.Context, b workqueue.Beat) (workqueue.Ack, error) {
	f.beats.Add(1)
	first := false
	f.once.Do(func() {
		first = true
		if f.before != nil {
			f.before()
		}
	})
	ack, err := f.Queue.Heartbeat(ctx, b)
	if first {
		f.mu.Lock()
		f.answered = time.Now()
		f.mu.Unlock()
	}
	return ack, err
}

func (f *firstBeat) Report(ctx context.Context, l workqueue.Lease, r workqueue.Result) error {
	f.mu.Lock()
	f.reported = time.Now()
	f.mu.Unlock()
	return f.Queue.Report(ctx, l, r)
}

// TestAgentRunsWhileTheFirstHeartbeatIsOut: the run starts without waiting for the first
// heartbeat's answer (a round trip off the job's path), and the report waits for it.
func TestAgentRunsWhileTheFirstHeartbeatIsOut(t *testing.T) {
	t.Parallel()
	b := agentSetup(t)
	gate := make(chan struct{})
	var open sync.Once
	q := &firstBeat{Queue: b.queue, before: func() { <-gate }}
	b.start(t, q, runner.Config{Slots: 1, Heartbeat: time.Hour})
	t.Cleanup(func() { open.Do(func() { close(gate) }) }) // before the agent's stop, on a failure
	id := b.submit(t)
	select {
	case <-b.exec.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the run waited for the first heartbeat's answer")
	}
	b.exec.release <- workqueue.Result{Data: json.RawMessage(`{"ok":true}`), ComputeMs: 5}
	open.Do(func() { close(gate) })
	b.waitStatus(t, id, job.StatusComplete)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.answered.IsZero() || q.reported.Before(q.answered) {
		t.Fatalf("first heartbeat answered at %v, the result reported at %v: want the report after", q.answered, q.reported)
	}
}

// TestAgentStopsAJobCancelledBeforeItsFirstHeartbeat: a job cancelled between its claim and its
// first heartbeat is stopped by that heartbeat's answer, and stays cancelled, uncharged.
func TestAgentStopsAJobCancelledBeforeItsFirstHeartbeat(t *testing.T) {
	t.Parallel()
	b := agentSetup(t)
	var id atomic.Value
	q := &firstBeat{Queue: b.queue, before: func() {
		if _, err := b.h.Cancel.Cancel(context.Background(), b.acct, id.Load().(string)); err != nil {
			t.Error(err)
		}
	}}
	id.Store(b.submit(t))
	b.start(t, q, runner.Config{Slots: 1, Heartbeat: time.Hour})
	select {
	case got := <-b.exec.stopped:
		if got != id.Load() {
			t.Fatalf("stopped %s", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run of a job cancelled before its first heartbeat went on")
	}
	if j := b.waitStatus(t, id.Load().(string), job.StatusCancelled); j.Cost != nil && j.Cost.Amount != 0 {
		t.Fatalf("the cancelled job was charged %+v", j.Cost)
	}
}

// TestAgentSaysRunningAndExecutingInOneHeartbeat: a run whose compute begins at once sends one
// heartbeat that moves the job to running and says the compute began, not one of each.
func TestAgentSaysRunningAndExecutingInOneHeartbeat(t *testing.T) {
	t.Parallel()
	b := agentSetup(t)
	q := &firstBeat{Queue: b.queue}
	b.start(t, q, runner.Config{Slots: 1, Heartbeat: time.Hour, FirstHeartbeat: time.Hour})
	id := b.submit(t)
	<-b.exec.started
	b.waitJob(t, id, "executing", func(j *job.Job) bool { return j.Status == job.StatusRunning && j.ExecStartedAt != nil })
	b.exec.release <- workqueue.Result{Data: json.RawMessage(`{"ok":true}`), ComputeMs: 5}
	b.waitStatus(t, id, job.StatusComplete)
	if n := q.beats.Load(); n != 1 {
		t.Fatalf("%d heartbeats, want 1", n)
	}
}

// startsLate is an executor whose compute begins only when begin is closed (its inputs are slow
// to fetch), and completes when finish is.
type startsLate struct{ begin, finish chan struct{} }

func (s startsLate) Execute(ctx context.Context, _ workqueue.Assignment, _ string, h runner.Hooks) workqueue.Result {
	select {
	case <-s.begin:
	case <-ctx.Done():
		return workqueue.Result{Failure: &workqueue.Failure{Kind: workqueue.KindCancelled}}
	}
	h.Executing()
	select {
	case <-s.finish:
	case <-ctx.Done():
		return workqueue.Result{Failure: &workqueue.Failure{Kind: workqueue.KindCancelled}}
	}
	return workqueue.Result{Data: json.RawMessage(`{"ok":true}`), ComputeMs: 5}
}

// TestAgentSaysRunningBeforeASlowStart: a run whose compute has not begun FirstHeartbeat after
// its claim is seen running all the same, and says its compute began when it does.
func TestAgentSaysRunningBeforeASlowStart(t *testing.T) {
	t.Parallel()
	b := agentSetup(t)
	exec := startsLate{begin: make(chan struct{}), finish: make(chan struct{})}
	a, err := runner.New(runner.Config{Class: job.ClassCPU, WorkRoot: t.TempDir(), Poll: 10 * time.Millisecond, Slots: 1,
		Heartbeat: time.Hour, FirstHeartbeat: 20 * time.Millisecond, Log: slog.New(slog.DiscardHandler)},
		b.queue, map[string]runner.Executor{ffmpegjob.Name: exec})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	id := b.submit(t)
	if j := b.waitStatus(t, id, job.StatusRunning); j.ExecStartedAt != nil {
		t.Fatalf("the compute began at %v, before the executor said so", j.ExecStartedAt)
	}
	close(exec.begin)
	b.waitJob(t, id, "executing", func(j *job.Job) bool { return j.ExecStartedAt != nil }) // told by a heartbeat, not the report
	close(exec.finish)
	b.waitStatus(t, id, job.StatusComplete)
}
