package service

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/mediajobs/mediajobs/core/idempotency"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/retry"
)

// The control plane's background work is a few maintenance services, in the shape of River's:
// each has a config, Run(ctx) that works until ctx ends, a runOnce the tests call directly, and
// test signals that tell a test a pass happened. They live beside the use case each serves; the
// composition root only builds them and hands them to RunServices.

// Service is background work that runs until its context ends.
type Service interface {
	Run(ctx context.Context)
}

// ServiceFunc is a function as a Service.
type ServiceFunc func(ctx context.Context)

// Run calls f.
func (f ServiceFunc) Run(ctx context.Context) { f(ctx) }

// RunServices runs each service in a goroutine of its own until ctx ends; wait returns once all
// have returned.
func RunServices(ctx context.Context, services ...Service) (wait func()) {
	var wg sync.WaitGroup
	for _, s := range services {
		wg.Go(func() { s.Run(ctx) })
	}
	return wg.Wait
}

// PassSignals tell a test that a service's pass ran: the count it acted on, or its error.
// Nil channels are skipped; a full one drops the signal rather than blocking the service.
type PassSignals struct {
	Pass chan PassResult
}

// PassResult is the outcome of one pass.
type PassResult struct {
	N   int
	Err error
}

func (s PassSignals) signal(n int, err error) {
	if s.Pass == nil {
		return
	}
	select {
	case s.Pass <- PassResult{N: n, Err: err}:
	default:
	}
}

// loop is the schedule the services share: a pass after first, then after every (or on wake),
// with backoff up to maxBackoff while passes fail, each failure logged once per interval.
type loop struct {
	name            string
	first, every    time.Duration
	maxBackoff      time.Duration
	wake            <-chan struct{}
	pass            func(ctx context.Context) (int, error)
	done            func(ctx context.Context, n int)
	log             *slog.Logger
	signals         *PassSignals
	failureAdvisory string
}

func (l loop) run(ctx context.Context) {
	if !sleep(ctx, l.first, nil) {
		return
	}
	backoff := retry.New(l.every, l.maxBackoff)
	for {
		wait := l.every
		n, err := l.pass(ctx)
		l.signals.signal(n, err)
		switch {
		case err != nil && ctx.Err() == nil:
			if ok, muted := backoff.Log(); ok {
				l.log.Warn(l.name+" failed; "+l.failureAdvisory, "err", err, "failures", backoff.Failures()+1, "unlogged", muted)
			}
			wait = backoff.Next()
		case err == nil:
			backoff.Reset()
			if n > 0 && l.done != nil {
				l.done(ctx, n)
			}
		}
		wake := l.wake
		if wait > l.every {
			wake = nil // a failing store is not hammered on every change
		}
		if !sleep(ctx, wait, wake) {
			return
		}
	}
}

// sleep waits d, or until wake fires; false when ctx ended first.
func sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-wake:
	case <-t.C:
	}
	return true
}

// RelayConfig configures the RelayService.
type RelayConfig struct {
	// Interval is how often the outbox is polled with no wake-up (messages whose handler
	// failed, a relay that died elsewhere); default one second.
	Interval time.Duration
	// Wake runs a pass at once: a change just emitted messages.
	Wake <-chan struct{}
	Log  *slog.Logger
}

// RelayService hands outbox messages on as soon as a change emits them (Relay.Drain), and polls
// for the rest. A failing outbox is retried with backoff up to 30 s.
type RelayService struct {
	relay       *Relay
	cfg         RelayConfig
	TestSignals PassSignals
}

// NewRelayService returns the service of relay.
func NewRelayService(relay *Relay, cfg RelayConfig) *RelayService {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &RelayService{relay: relay, cfg: cfg}
}

func (s *RelayService) runOnce(ctx context.Context) (int, error) { return s.relay.Drain(ctx) }

// Run relays until ctx ends.
func (s *RelayService) Run(ctx context.Context) {
	loop{name: "outbox relay", every: s.cfg.Interval, maxBackoff: 30 * time.Second, wake: s.cfg.Wake, pass: s.runOnce,
		log: s.cfg.Log, signals: &s.TestSignals, failureAdvisory: "retrying with backoff"}.run(ctx)
}

// SweepConfig configures the SweepService.
type SweepConfig struct {
	// Lease is the runners' lease: the first sweep waits one (a replica just started does not
	// fail the jobs of runners that have not yet heard of it), then sweeps every quarter of it,
	// between 100 ms and 5 s.
	Lease time.Duration
	// Requeued hears that a sweep put jobs of lost runners back in the queue or failed them,
	// so that other replicas' claims wake; nil: nothing.
	Requeued func(ctx context.Context, classes []job.Class)
	Log      *slog.Logger
}

// SweepService acts on the jobs whose runner stopped renewing its lease (Runs.Sweep).
type SweepService struct {
	runs        *Runs
	cfg         SweepConfig
	TestSignals PassSignals
}

// NewSweepService returns the lease sweep of runs.
func NewSweepService(runs *Runs, cfg SweepConfig) *SweepService {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &SweepService{runs: runs, cfg: cfg}
}

func (s *SweepService) runOnce(ctx context.Context) (int, error) { return s.runs.Sweep(ctx) }

// Run sweeps until ctx ends.
func (s *SweepService) Run(ctx context.Context) {
	every := min(5*time.Second, max(s.cfg.Lease/4, 100*time.Millisecond))
	loop{name: "lease sweep", first: s.cfg.Lease, every: every, maxBackoff: time.Minute, pass: s.runOnce,
		done: func(ctx context.Context, n int) {
			s.cfg.Log.Info("acted on jobs of lost runners", "count", n)
			if s.cfg.Requeued != nil {
				s.cfg.Requeued(ctx, []job.Class{job.ClassCPU, job.ClassGPU})
			}
		},
		log: s.cfg.Log, signals: &s.TestSignals, failureAdvisory: "retrying with backoff"}.run(ctx)
}

// GrantConfig configures the GrantService.
type GrantConfig struct {
	// Interval is how often it runs; default one hour (a new month is granted within it).
	Interval time.Duration
	Log      *slog.Logger
}

// GrantService grants the plans' monthly credits (Credits.GrantMonthly, idempotent per account
// and month, so restarts and replicas grant nothing twice) at start and every hour, and drops
// the expired idempotency keys (which answer for a day) in the same pass.
type GrantService struct {
	credits     *Credits
	keys        *idempotency.Guard
	cfg         GrantConfig
	TestSignals PassSignals
}

// NewGrantService returns the monthly grant of credits, purging keys' expired answers too
// (keys may be nil).
func NewGrantService(credits *Credits, keys *idempotency.Guard, cfg GrantConfig) *GrantService {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Hour
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &GrantService{credits: credits, keys: keys, cfg: cfg}
}

// runOnce grants and purges; it returns the accounts granted, and the first error.
func (s *GrantService) runOnce(ctx context.Context) (int, error) {
	n, err := s.credits.GrantMonthly(ctx)
	if err == nil && n > 0 {
		s.cfg.Log.Info("granted monthly credits", "accounts", n)
	}
	if s.keys != nil {
		purged, perr := s.keys.Purge(ctx)
		if perr == nil && purged > 0 {
			s.cfg.Log.Info("purged expired idempotency keys", "keys", purged)
		}
		if err == nil {
			err = perr
		}
	}
	return n, err
}

// Run grants until ctx ends. A failed pass is tried again at the next interval.
func (s *GrantService) Run(ctx context.Context) {
	loop{name: "monthly credit grant", every: s.cfg.Interval, maxBackoff: s.cfg.Interval, pass: s.runOnce,
		log: s.cfg.Log, signals: &s.TestSignals, failureAdvisory: "retried within the interval"}.run(ctx)
}
