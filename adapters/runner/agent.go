package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	"github.com/mediajobs/mediajobs/adapters/workdir"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/retry"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// Hooks are how an executor tells the agent about a run in progress.
type Hooks struct {
	// Progress takes a fraction 0..1 whenever it is known.
	Progress func(float64)
	// Processed takes how much media time the run has written, whenever it is known; nil
	// ignores it.
	Processed func(time.Duration)
	// Executing says that the job's compute (the first sandboxed FFmpeg or ffprobe) begins
	// now; the agent tells the control plane at once, since billing depends on it.
	Executing func()
	// Split sends a heartbeat now, carrying ask, and returns the split plan the control plane
	// answered (nil when it has none): how a job assigned with SplitParts tells its input and
	// follows its parts. Nil where the runner has no control plane to ask.
	Split func(ctx context.Context, ask SplitAsk) (*workqueue.SplitPlan, error)
	// Waiting says that the run waits for others (a split job for its parts) and does not
	// count against the agent's slots until it says so again with false; nil ignores it.
	Waiting func(bool)
	// Computed says that the run's compute is over: what is left of it (reading its outputs,
	// their upload, the report) waits on the network, not the slot's CPU, and the agent claims
	// the slot's next job meanwhile. Nil ignores it.
	Computed func()
}

// SplitAsk is what a split job's heartbeat carries besides its progress: what the runner read
// of the input, told once (Source); or, while the runner waits for the parts, how long the
// control plane may hold its answer (Wait, up to the assignment's SplitWait) while no more than
// Complete of them are complete.
type SplitAsk struct {
	Source   *workqueue.SplitSource
	Wait     time.Duration
	Complete int
}

// Executor runs one job type in a work directory of its own.
type Executor interface {
	Execute(ctx context.Context, a workqueue.Assignment, work string, h Hooks) workqueue.Result
}

// Config configures an Agent.
type Config struct {
	Class job.Class
	// Slots is how many jobs compute at once (a run uploading its outputs holds none); default 2.
	Slots int
	// WorkRoot is where work directories are made.
	WorkRoot string
	// Worker names this runner in the control plane's logs; default the host name and pid.
	Worker string
	// Version is this runner's build, as `mediajobs workers list` shows it; default the main
	// module's version from the build information.
	Version string
	// ClaimWait is how long a claim waits at the control plane for work (a long poll), for
	// runners in other processes; zero claims without waiting and polls every Poll.
	ClaimWait time.Duration
	// Poll is how often to look for work without a hint when ClaimWait is zero; default 1 s.
	Poll time.Duration
	// Heartbeat is the longest gap between heartbeats; default 2 s, and never more than a
	// third of the lease.
	Heartbeat time.Duration
	// FirstHeartbeat is how long a run's first heartbeat (the one that moves its job to
	// running) waits for the compute to begin, so as to say both at once; default 100 ms. A run
	// whose inputs take longer to fetch is seen running all the same.
	FirstHeartbeat time.Duration
	// DrainTimeout is how long, once told to stop, the agent lets running jobs finish before
	// it stops them and hands them back; default 30 s.
	DrainTimeout time.Duration
	// ReportFor is how long a result is re-sent while the control plane does not acknowledge
	// it (a restart, a network fault); default 10 minutes.
	ReportFor time.Duration
	// OnRun, when set, hears how each run ended, once its result is settled (for metrics).
	OnRun func(RunStats)
	// Stopped, when set, is called once Run has returned its last report: it releases what
	// the executors share, such as a pool of warm sandboxes.
	Stopped func()
	Log     *slog.Logger
}

// RunStats is how one run ended, as this runner saw it.
type RunStats struct {
	Type  string
	Class job.Class
	// Outcome is "complete", a workqueue failure kind (exit, timeout, fetch, limit, cancelled,
	// handback, …), or "lease_lost" when the control plane took the job back.
	Outcome string
	// Took is the run's wall time on this runner, from the first heartbeat to the report.
	Took time.Duration
	// Phases are the spans of the run that it reached, by name: where a job's time on the
	// runner goes, and its fixed cost beside the compute.
	Phases map[string]time.Duration
}

// The phases of a run (RunStats.Phases), in order.
const (
	// PhaseStage is from the claim's answer to the release of the job's first FFmpeg: the work
	// directory, the checks, the inputs' downloads and staging.
	PhaseStage = "stage"
	// PhaseCompute is from that release to the end of the compute: the FFmpeg steps, and the
	// outputs' probes.
	PhaseCompute = "compute"
	// PhaseStore is the outputs' uploads, and the rest of the run after its compute; a run
	// whose executor says nothing of its compute's end has none.
	PhaseStore = "store"
	// PhaseReport is the report's round trip, re-sends included.
	PhaseReport = "report"
)

// phases times a run's phases (RunStats.Phases) from the hooks that mark them.
type phases struct {
	mu                 sync.Mutex
	began              time.Time
	executing, compute time.Time // the first Executing and Computed, zero if none
}

func (p *phases) mark(at *time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if at.IsZero() {
		*at = time.Now()
	}
}

// spans returns the phases of a run whose executor returned at executed, and whose report,
// if it was sent, took report.
func (p *phases) spans(executed time.Time, report time.Duration) map[string]time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]time.Duration{}
	if !p.executing.IsZero() {
		out[PhaseStage] = p.executing.Sub(p.began)
		end := executed
		if !p.compute.IsZero() && p.compute.After(p.executing) {
			end = p.compute
			out[PhaseStore] = executed.Sub(p.compute)
		}
		out[PhaseCompute] = end.Sub(p.executing)
	}
	if report > 0 {
		out[PhaseReport] = report
	}
	return out
}

// Agent is a runner: it claims jobs of its class from a work queue, runs each through the
// executor of its type in a fresh work directory, keeps its lease with heartbeats, and reports
// the result. It owns no database and no signing keys.
type Agent struct {
	cfg       Config
	queue     workqueue.Queue
	executors map[string]Executor

	// dirs makes the runs' work directories and keeps emptied ones for the next (workdir).
	dirs *workdir.Dirs

	wake    chan struct{}
	mu      sync.Mutex
	running map[string]context.CancelCauseFunc
	// waiting counts the runs that wait for others (a split job for its parts), and computed
	// holds, by job, those whose compute is over (uploading, reporting): they hold no slot
	// meanwhile (Hooks.Waiting, Hooks.Computed).
	waiting  int
	computed map[string]bool
	wg       sync.WaitGroup
	// hardStop ends what is left of the runs (their reports) once the drain is over.
	hardStop   context.Context
	stopReport context.CancelFunc
}

// Causes of a run's end other than its own.
var (
	errJobCancelled = errors.New("the job was cancelled")
	errLeaseLost    = errors.New("the control plane refused the lease")
	errDrained      = errors.New("the runner is stopping")
)

// New returns an agent running the given executors by job type.
func New(cfg Config, queue workqueue.Queue, executors map[string]Executor) (*Agent, error) {
	if queue == nil {
		return nil, errors.New("runner: a work queue is required")
	}
	if cfg.Slots <= 0 {
		cfg.Slots = 2
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 2 * time.Second
	}
	if cfg.FirstHeartbeat <= 0 {
		cfg.FirstHeartbeat = 100 * time.Millisecond
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 30 * time.Second
	}
	if cfg.ReportFor <= 0 {
		cfg.ReportFor = 10 * time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Version == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			cfg.Version = bi.Main.Version
		}
	}
	if cfg.Worker == "" {
		host, _ := os.Hostname()
		cfg.Worker = fmt.Sprintf("%s/%d", host, os.Getpid())
	}
	// The sandbox runs as an unprivileged user that must reach each work directory: the root
	// is searchable (0711) but not listable by it.
	if err := os.MkdirAll(cfg.WorkRoot, 0o711); err != nil {
		return nil, fmt.Errorf("runner: work root: %w", err)
	}
	if err := os.Chmod(cfg.WorkRoot, 0o711); err != nil {
		return nil, fmt.Errorf("runner: work root: %w", err)
	}
	hard, stop := context.WithCancel(context.Background())
	return &Agent{cfg: cfg, queue: queue, executors: executors, dirs: workdir.New(cfg.WorkRoot, cfg.Slots), wake: make(chan struct{}, 1),
		running: map[string]context.CancelCauseFunc{}, computed: map[string]bool{}, hardStop: hard, stopReport: stop}, nil
}

// Wake tells the agent that work may be waiting (a bus hint).
func (a *Agent) Wake() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Cancel stops the run of a job at once, if this agent runs it (a bus hint; the heartbeat
// tells it too).
func (a *Agent) Cancel(jobID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if cancel, ok := a.running[jobID]; ok {
		cancel(errJobCancelled)
	}
}

// Running is how many slots the agent's runs hold now: its runs, less those waiting for others
// (Hooks.Waiting) or done computing (Hooks.Computed), at most one a slot.
func (a *Agent) Running() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	// Such runs hold no slot, up to one per slot: more would gather split jobs that each keep
	// their input on disk and all join at once when their parts end, or uploads beyond what
	// the network takes.
	return len(a.running) - min(a.waiting+len(a.computed), a.cfg.Slots)
}

// Run claims and runs jobs until ctx ends. Then it takes no new work, lets the jobs in flight
// finish for up to DrainTimeout, stops and hands back those still running, and returns once
// their reports are done.
func (a *Agent) Run(ctx context.Context) {
	if a.cfg.Stopped != nil {
		defer a.cfg.Stopped()
	}
	defer a.dirs.Close()
	a.loop(ctx)
	done := make(chan struct{})
	go func() { a.wg.Wait(); close(done) }()
	a.mu.Lock()
	inFlight := len(a.running)
	a.mu.Unlock()
	if inFlight > 0 {
		a.cfg.Log.Info("runner: draining", "running", inFlight, "timeout", a.cfg.DrainTimeout)
	}
	t := time.NewTimer(a.cfg.DrainTimeout)
	defer t.Stop()
	select {
	case <-done:
		a.stopReport()
		return
	case <-t.C:
	}
	// The runs still computing are stopped and handed back; those whose compute is over are
	// let finish their upload and report, within the grace.
	a.cancelRuns(func(id string) bool { return !a.computed[id] })
	// The handed-back runs report at once; give them a little time, then stop re-sending.
	grace := time.AfterFunc(10*time.Second, func() {
		a.cancelRuns(func(string) bool { return true })
		a.stopReport()
	})
	defer grace.Stop()
	<-done
	a.stopReport()
}

// cancelRuns stops, handing them back, the runs whose job which picks.
func (a *Agent) cancelRuns(which func(jobID string) bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, cancel := range a.running {
		if which(id) {
			cancel(errDrained)
		}
	}
}

func (a *Agent) loop(ctx context.Context) {
	backoff := retry.New(time.Second, 30*time.Second)
	tick := time.NewTicker(a.cfg.Poll)
	defer tick.Stop()
	for ctx.Err() == nil {
		free := a.cfg.Slots - a.Running()
		if free > 0 {
			work, err := a.queue.Claim(ctx, workqueue.ClaimParams{Class: a.cfg.Class, Max: free, Worker: a.cfg.Worker, Version: a.cfg.Version, Wait: a.cfg.ClaimWait, Slots: a.cfg.Slots})
			switch {
			case err != nil && ctx.Err() == nil:
				if ok, muted := backoff.Log(); ok {
					a.cfg.Log.Warn("runner: claim failed; retrying with backoff", "err", err, "failures", backoff.Failures(), "unlogged", muted)
				}
				a.sleep(ctx, backoff.Next())
				continue
			case err == nil:
				backoff.Reset()
			}
			for _, w := range work {
				a.start(w)
			}
			if len(work) > 0 || (a.cfg.ClaimWait > 0 && err == nil) {
				continue // claim again at once: more may be waiting, or the long poll ended
			}
		}
		select {
		case <-ctx.Done():
		case <-a.wake:
		case <-tick.C:
		}
	}
}

func (a *Agent) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-a.wake:
	case <-t.C:
	}
}

func (a *Agent) start(w workqueue.Assignment) {
	// A run outlives the agent's context: a stop drains it rather than killing it.
	runCtx, cancel := context.WithCancelCause(context.Background())
	a.mu.Lock()
	a.running[w.Lease.JobID] = cancel
	a.mu.Unlock()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer func() {
			a.mu.Lock()
			delete(a.running, w.Lease.JobID)
			delete(a.computed, w.Lease.JobID)
			a.mu.Unlock()
			cancel(nil)
			a.Wake() // a slot is free
		}()
		a.run(runCtx, cancel, w)
	}()
}

// beats sends a run's heartbeats: a first one as the run starts (it moves the job to running),
// then every interval and whenever the run says its compute began.
type beats struct {
	a      *Agent
	w      workqueue.Assignment
	cancel context.CancelCauseFunc

	mu        sync.Mutex
	progress  float64
	processed time.Duration
	executing bool
	now       chan struct{}
}

func (b *beats) send(ctx context.Context) error {
	_, err := b.sendSplit(ctx, SplitAsk{})
	return err
}

// sendSplit sends a heartbeat that carries ask, and returns its answer's split plan.
func (b *beats) sendSplit(ctx context.Context, ask SplitAsk) (*workqueue.SplitPlan, error) {
	b.mu.Lock()
	beat := workqueue.Beat{Lease: b.w.Lease, Progress: b.progress, ProcessedMs: b.processed.Milliseconds(), Executing: b.executing,
		Split: ask.Source, SplitWait: ask.Wait, PartsComplete: ask.Complete}
	b.mu.Unlock()
	bctx, cancel := context.WithTimeout(ctx, 10*time.Second+ask.Wait)
	defer cancel()
	ack, err := b.a.queue.Heartbeat(bctx, beat)
	switch {
	case errors.Is(err, workqueue.ErrLeaseRefused):
		b.cancel(errLeaseLost)
	case err != nil:
		b.a.cfg.Log.Warn("runner: heartbeat failed", "job", b.w.Lease.JobID, "err", err)
	case ack.Cancelled:
		b.cancel(errJobCancelled)
	}
	return ack.Split, err
}

func (b *beats) loop(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-b.now:
		}
		_ = b.send(ctx)
	}
}

func (a *Agent) run(ctx context.Context, cancel context.CancelCauseFunc, w workqueue.Assignment) {
	log := a.cfg.Log.With("job", w.Lease.JobID, "attempt", w.Lease.Attempt)
	interval := a.cfg.Heartbeat
	if w.LeaseFor > 0 {
		interval = min(interval, w.LeaseFor/3)
	}
	b := &beats{a: a, w: w, cancel: cancel, now: make(chan struct{}, 1)}
	ph := &phases{began: time.Now()}
	// The first heartbeat moves the job to running. It goes while the run starts, rather than
	// before it (a round trip off every job's path), once the compute begins, or FirstHeartbeat
	// after the claim, or when the run ends, whichever comes first: a run whose FFmpeg starts at
	// once sends one heartbeat that says both. An answer that the job was cancelled or its lease
	// lost since the claim stops the run through ctx; the report waits for the answer.
	ran, firstDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(firstDone)
		t := time.NewTimer(a.cfg.FirstHeartbeat)
		defer t.Stop()
		select {
		case <-b.now:
		case <-t.C:
		case <-ran:
		case <-ctx.Done():
			return // stopped before it began (a drain): its hand-back starts the job if need be
		}
		_ = b.send(ctx)
	}()
	beatCtx, stopBeats := context.WithCancel(ctx)
	defer stopBeats()
	go func() {
		<-firstDone // the beat that says the compute began comes after it
		b.loop(beatCtx, interval)
	}()

	hooks := Hooks{
		Progress: func(p float64) {
			b.mu.Lock()
			b.progress = p
			b.mu.Unlock()
		},
		Processed: func(d time.Duration) {
			b.mu.Lock()
			b.processed = d
			b.mu.Unlock()
		},
		Executing: func() {
			ph.mark(&ph.executing)
			b.mu.Lock()
			first := !b.executing
			b.executing = true
			b.mu.Unlock()
			if first {
				select {
				case b.now <- struct{}{}:
				default:
				}
			}
		},
		Split: b.sendSplit,
		Computed: func() {
			ph.mark(&ph.compute)
			a.mu.Lock()
			first := !a.computed[w.Lease.JobID]
			a.computed[w.Lease.JobID] = true
			a.mu.Unlock()
			if first {
				a.Wake() // the slot is free for the next job
			}
		},
		Waiting: func(w bool) {
			a.mu.Lock()
			if w {
				a.waiting++
			} else {
				a.waiting--
			}
			a.mu.Unlock()
			if w {
				a.Wake() // a slot is free while the run waits
			}
		},
	}
	began := time.Now()
	res, cleanup := a.execute(ctx, w, hooks)
	executed := time.Now()
	// The work directory goes beside the report, not before it: removing it took 0.5 to 3 ms,
	// which the job's end need not wait for; the run ends when both are done.
	removed := make(chan struct{})
	go func() { defer close(removed); cleanup() }()
	defer func() { <-removed }()
	close(ran)
	<-firstDone
	stopBeats()
	b.mu.Lock()
	res.Started = b.executing
	b.mu.Unlock()
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errLeaseLost):
		log.Warn("runner: the lease was refused while the job ran; its result is dropped")
		a.ran(w, "lease_lost", began, ph.spans(executed, 0))
		return
	case errors.Is(cause, errDrained):
		res.Failure = &workqueue.Failure{Kind: workqueue.KindHandBack}
	case errors.Is(cause, errJobCancelled):
		res.Failure = &workqueue.Failure{Kind: workqueue.KindCancelled}
	}
	reporting := time.Now()
	a.report(w.Lease, res, log)
	reported := time.Since(reporting)
	outcome := "complete"
	if res.Failure != nil {
		outcome = string(res.Failure.Kind)
	}
	a.ran(w, outcome, began, ph.spans(executed, reported))
}

func (a *Agent) ran(w workqueue.Assignment, outcome string, began time.Time, phases map[string]time.Duration) {
	if a.cfg.OnRun != nil {
		a.cfg.OnRun(RunStats{Type: w.Type, Class: w.Class, Outcome: outcome, Took: time.Since(began), Phases: phases})
	}
}

// report sends the result until the control plane acknowledges or refuses it, with bounded
// backoff: a control plane that restarts gets the result when it is back.
func (a *Agent) report(l workqueue.Lease, res workqueue.Result, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(a.hardStop, a.cfg.ReportFor)
	defer cancel()
	backoff := retry.New(200*time.Millisecond, 5*time.Second)
	for {
		rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
		err := a.queue.Report(rctx, l, res)
		rcancel()
		switch {
		case err == nil:
			return
		case errors.Is(err, workqueue.ErrLeaseRefused):
			log.Warn("runner: the control plane refused the result", "err", err)
			return
		}
		if ok, muted := backoff.Log(); ok {
			log.Warn("runner: report failed; re-sending with backoff", "err", err, "failures", backoff.Failures(), "unlogged", muted)
		}
		if !backoff.Wait(ctx) {
			log.Error("runner: gave up re-sending a result", "err", err)
			return
		}
	}
}

// execute runs the job in a work directory of its own, which cleanup removes.
func (a *Agent) execute(ctx context.Context, w workqueue.Assignment, h Hooks) (res workqueue.Result, cleanup func()) {
	ex, ok := a.executors[w.Type]
	if !ok {
		return workqueue.Result{Failure: invalid(fmt.Sprintf("this runner cannot run jobs of type %q", w.Type))}, func() {}
	}
	work, err := a.dirs.Make(w.Lease.JobID + "-")
	if err != nil {
		a.cfg.Log.Error("runner: could not make a work directory", "job", w.Lease.JobID, "err", err)
		return workqueue.Result{Failure: &workqueue.Failure{Kind: workqueue.KindInternal, Message: "making a work directory"}}, func() {}
	}
	cleanup = func() {
		if err := a.dirs.Remove(work); err != nil {
			a.cfg.Log.Warn("runner: could not remove a work directory", "job", w.Lease.JobID, "err", err)
		}
	}
	return ex.Execute(ctx, w, filepath.Clean(work), h), cleanup
}
