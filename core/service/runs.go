package service

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/asset"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// RunsPorts are what the control plane's side of the work queue needs.
type RunsPorts struct {
	Jobs     job.Store
	Accounts account.Store
	Assets   asset.Store
	Blobs    blob.Store
	Ledger   billing.Ledger
	Pricing  *billing.Pricing
	Clock    clock.Clock
	Tokens   workqueue.Tokens
	// Credentials are the worker credentials operators issue; Workers reads and revokes them,
	// Runs records each claim's worker version on them.
	Credentials workqueue.Credentials
	// Registry records the runners that claim, so that every replica knows which compute
	// classes have capacity.
	Registry workqueue.Registry
	// Lease is how long a runner holds a job without a heartbeat.
	Lease time.Duration
	// AssetURLPrefix is "{base_url}/assets/", as jobs' inputs name uploaded assets.
	AssetURLPrefix string
	// RunnerURL is the base URL at which remote runners reach the control plane's
	// /internal/runner endpoints (downloads of assets, uploads of outputs); empty: the
	// assignments carry no such URLs (in-process runners only).
	RunnerURL string
	// Split tunes split and stitch.
	Split SplitConfig
	// Recheck is how often a long-polling claim that found nothing claims again without being
	// woken; 0 is job.RetryElsewhereFor. Nothing wakes a claim when a requeued job stops
	// avoiding its runner (job.Job.Avoid), which a lone runner must still take.
	Recheck time.Duration
	Log     *slog.Logger
	// Observer hears of dispatched and finished jobs (NoObserver to hear nothing).
	Observer Observer
}

// Runs is the control plane's side of the work queue (workqueue.Queue): it hands out jobs with
// leases, keeps them through heartbeats, takes results, and fails or requeues the jobs of lost
// runners (Sweep). The in-process runner calls it directly, as workqueue.Local; the HTTP and
// broker transports authenticate each caller and drive As(identity). Its parts live by
// responsibility: dispatch.go (claims, capacity, funding), leases.go (heartbeats, reports, the
// sweep, revocation) and jobfiles.go (a lease's inputs and outputs).
type Runs struct {
	p    RunsPorts
	bill biller
	// wake holds, per class, a channel closed when work of the class may be waiting.
	mu   sync.Mutex
	wake map[job.Class]chan struct{}
	// stopping is closed when the control plane stops: waiting claims return at once.
	stopping chan struct{}
	stopOnce sync.Once
	// parts hears of the reports of split jobs' parts, by their job's ID: a split job's runner
	// waiting for its parts (splitAnswer) watches it.
	parts *Waits
	// seen throttles the registry's writes: a runner is recorded at most every few seconds.
	seenMu sync.Mutex
	seen   map[string]time.Time
}

var _ workqueue.Queue = (*Runs)(nil)

// NewRuns returns the Runs use case.
func NewRuns(p RunsPorts) (*Runs, error) {
	err := need("Runs", port{"a job store", p.Jobs}, port{"an account store", p.Accounts}, port{"an asset store", p.Assets},
		port{"a blob store", p.Blobs}, port{"a ledger", p.Ledger}, port{"pricing", p.Pricing}, port{"a clock", p.Clock},
		port{"a runner registry", p.Registry}, port{"worker credentials", p.Credentials}, port{"an observer", p.Observer})
	if !p.Tokens.Valid(workqueue.Lease{JobID: "probe", Token: p.Tokens.Issue("probe", 0)}) {
		err = errors.Join(err, errors.New("Runs needs lease tokens (workqueue.NewTokens)"))
	}
	if p.Lease <= 0 {
		err = errors.Join(err, errors.New("Runs needs a positive lease"))
	}
	if err != nil {
		return nil, err
	}
	if p.Log == nil {
		p.Log = slog.Default()
	}
	bill := biller{pricing: p.Pricing}
	if l, ok := p.Ledger.(billing.JobLedger); ok && l.ChargesWith(p.Jobs) {
		bill.ledger = nil // the change that ends a job charges it
	} else {
		bill.ledger = p.Ledger
	}
	return &Runs{p: p, bill: bill, wake: map[job.Class]chan struct{}{}, stopping: make(chan struct{}),
		parts: NewWaits(), seen: map[string]time.Time{}}, nil
}

// Stop ends every claim waiting for work, and the waits of claims to come: the control plane
// is shutting down, and a long poll must not hold it up. The runners claim again elsewhere.
func (s *Runs) Stop() {
	s.stopOnce.Do(func() { close(s.stopping) })
}

// Wake tells the runners waiting in Claim for work of class c that some may be there. It is
// the Waker of this replica's submits; hints from other replicas arrive through the bus.
func (s *Runs) Wake(_ context.Context, c job.Class) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.wake[c]; ok {
		close(ch)
		delete(s.wake, c)
	}
}

func (s *Runs) waitFor(c job.Class) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.wake[c]
	if !ok {
		ch = make(chan struct{})
		s.wake[c] = ch
	}
	return ch
}

// As is the work queue as the worker of identity id may use it: each job it claims records id,
// and a lease is honoured only from the identity that claimed it. Transports call As with the
// identity they authenticated; never with one a caller named.
func (s *Runs) As(id workqueue.Identity) workqueue.Queue { return worker{s, id} }

// worker is Runs bound to one caller's identity.
type worker struct {
	r  *Runs
	id workqueue.Identity
}

func (w worker) Claim(ctx context.Context, p workqueue.ClaimParams) ([]workqueue.Assignment, error) {
	return w.r.claimAs(ctx, w.id, p)
}

func (w worker) Heartbeat(ctx context.Context, b workqueue.Beat) (workqueue.Ack, error) {
	return w.r.heartbeat(ctx, w.id, b)
}

func (w worker) Report(ctx context.Context, l workqueue.Lease, r workqueue.Result) error {
	return w.r.report(ctx, w.id, l, r)
}

func (w worker) OpenAsset(ctx context.Context, l workqueue.Lease, assetID string) (io.ReadCloser, error) {
	return w.r.openAsset(ctx, w.id, l, assetID)
}

func (w worker) PutOutput(ctx context.Context, l workqueue.Lease, name string, r io.Reader, max int64) (int64, error) {
	return w.r.putOutput(ctx, w.id, l, name, r, max)
}

// Claim is claimAs for the in-process runner.
func (s *Runs) Claim(ctx context.Context, p workqueue.ClaimParams) ([]workqueue.Assignment, error) {
	return s.claimAs(ctx, workqueue.Local, p)
}

// Heartbeat is heartbeat for the in-process runner.
func (s *Runs) Heartbeat(ctx context.Context, b workqueue.Beat) (workqueue.Ack, error) {
	return s.heartbeat(ctx, workqueue.Local, b)
}

// Report is report for the in-process runner.
func (s *Runs) Report(ctx context.Context, l workqueue.Lease, r workqueue.Result) error {
	return s.report(ctx, workqueue.Local, l, r)
}

// OpenAsset is openAsset for the in-process runner.
func (s *Runs) OpenAsset(ctx context.Context, l workqueue.Lease, assetID string) (io.ReadCloser, error) {
	return s.openAsset(ctx, workqueue.Local, l, assetID)
}

// PutOutput is putOutput for the in-process runner.
func (s *Runs) PutOutput(ctx context.Context, l workqueue.Lease, name string, r io.Reader, max int64) (int64, error) {
	return s.putOutput(ctx, workqueue.Local, l, name, r, max)
}
