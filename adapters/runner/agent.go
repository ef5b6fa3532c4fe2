package runner

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
)

// Source hands out work: in one process the service itself.
type Source interface {
	Claim(ctx context.Context, class job.Class, limit int) ([]service.Assignment, error)
}

// Reporter carries reports back to the control plane.
type Reporter interface {
	Report(ctx context.Context, r service.RunnerReport) error
}

// Executor runs one job type. progress takes a fraction 0..1 whenever it is known.
type Executor interface {
	Execute(ctx context.Context, a service.Assignment, work string, progress func(float64)) service.RunResult
}

// Config configures an Agent.
type Config struct {
	Class     job.Class
	Slots     int           // jobs run at once; default 2
	WorkRoot  string        // where work directories are made
	Poll      time.Duration // how often to look for work without a hint; default 1 s
	Heartbeat time.Duration // how often a running job reports; default 5 s
	Log       *slog.Logger
}

// Agent is a runner.
type Agent struct {
	cfg       Config
	source    Source
	reporter  Reporter
	executors map[string]Executor

	wake    chan struct{}
	mu      sync.Mutex
	running map[string]context.CancelFunc
	wg      sync.WaitGroup
}

// New returns an agent running the given executors by job type.
func New(cfg Config, source Source, reporter Reporter, executors map[string]Executor) (*Agent, error) {
	if cfg.Slots <= 0 {
		cfg.Slots = 2
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 5 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	// The sandbox runs as an unprivileged user that must reach each work directory: the root
	// is searchable (0711) but not listable by it.
	if err := os.MkdirAll(cfg.WorkRoot, 0o711); err != nil {
		return nil, fmt.Errorf("runner: work root: %w", err)
	}
	if err := os.Chmod(cfg.WorkRoot, 0o711); err != nil {
		return nil, fmt.Errorf("runner: work root: %w", err)
	}
	return &Agent{cfg: cfg, source: source, reporter: reporter, executors: executors,
		wake: make(chan struct{}, 1), running: map[string]context.CancelFunc{}}, nil
}

// Wake tells the agent that work may be waiting (a bus hint).
func (a *Agent) Wake() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Cancel kills the run of a job, if this agent runs it.
func (a *Agent) Cancel(jobID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if cancel, ok := a.running[jobID]; ok {
		cancel()
	}
}

// Run claims and runs jobs until ctx ends, then waits for the runs in flight to stop.
func (a *Agent) Run(ctx context.Context) {
	defer a.wg.Wait()
	tick := time.NewTicker(a.cfg.Poll)
	defer tick.Stop()
	for {
		a.fill(ctx)
		select {
		case <-ctx.Done():
			return
		case <-a.wake:
		case <-tick.C:
		}
	}
}

func (a *Agent) fill(ctx context.Context) {
	a.mu.Lock()
	free := a.cfg.Slots - len(a.running)
	a.mu.Unlock()
	if free <= 0 || ctx.Err() != nil {
		return
	}
	work, err := a.source.Claim(ctx, a.cfg.Class, free)
	if err != nil {
		a.cfg.Log.Warn("runner: claim failed", "err", err)
		return
	}
	for _, w := range work {
		runCtx, cancel := context.WithCancel(ctx)
		a.mu.Lock()
		a.running[w.JobID] = cancel
		a.mu.Unlock()
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			defer func() {
				a.mu.Lock()
				delete(a.running, w.JobID)
				a.mu.Unlock()
				cancel()
				a.Wake() // a slot is free
			}()
			a.run(runCtx, w)
		}()
	}
}

func (a *Agent) run(ctx context.Context, w service.Assignment) {
	// Reports use a context of their own: a cancelled run must still say what it used.
	report := func(r service.RunnerReport) {
		r.JobID, r.Attempt = w.JobID, w.Attempt
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := a.reporter.Report(rctx, r); err != nil {
			a.cfg.Log.Warn("runner: report failed", "job", w.JobID, "kind", r.Kind, "err", err)
		}
	}
	report(service.RunnerReport{Kind: service.ReportStarted})

	var (
		mu       sync.Mutex
		progress float64
	)
	hbDone := make(chan struct{})
	go func() {
		t := time.NewTicker(a.cfg.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-hbDone:
				return
			case <-t.C:
				mu.Lock()
				p := progress
				mu.Unlock()
				report(service.RunnerReport{Kind: service.ReportProgress, Progress: p})
			}
		}
	}()

	res := a.execute(ctx, w, func(p float64) {
		mu.Lock()
		progress = p
		mu.Unlock()
	})
	close(hbDone)
	report(service.RunnerReport{Kind: service.ReportResult, Result: &res})
}

func (a *Agent) execute(ctx context.Context, w service.Assignment, progress func(float64)) service.RunResult {
	ex, ok := a.executors[w.Type]
	if !ok {
		return service.RunResult{Error: job.NewError(problem.CodeRunnerError, fmt.Sprintf("this runner cannot run jobs of type %q", w.Type), nil)}
	}
	work, err := os.MkdirTemp(a.cfg.WorkRoot, w.JobID+"-")
	if err != nil {
		return service.RunResult{Error: job.NewError(problem.CodeRunnerLost, "the runner could not make a work directory", nil)}
	}
	defer os.RemoveAll(work)
	return ex.Execute(ctx, w, filepath.Clean(work), progress)
}
