package webhookout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/mediajobs/mediajobs/adapters/safehttp"
	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/retry"
	"github.com/mediajobs/mediajobs/core/webhook"
)

// Request headers of a delivery.
const (
	HeaderSignature         = "X-Service-Signature"
	HeaderSignaturePrevious = "X-Service-Signature-Previous"
	HeaderTimestamp         = "X-Service-Timestamp"
	HeaderEvent             = "X-Service-Event"
	HeaderDelivery          = "X-Service-Delivery"
	HeaderAttempt           = "X-Service-Attempt"
)

// Defaults of Config.
const (
	// DefaultTimeout is the spec's: a 2xx within 10 seconds, or the attempt failed.
	DefaultTimeout = webhook.Timeout
	DefaultWorkers = 32
	DefaultPoll    = 500 * time.Millisecond
)

// Config configure a Deliverer. Store is required.
type Config struct {
	Store webhook.Store
	// Clock stamps attempts and schedules retries; default the system clock.
	Clock clock.Clock
	// HTTP is the address policy (MEDIAJOBS_ALLOW_PRIVATE_NETWORKS, test roots); its Timeout and
	// MaxRedirects are ignored: a delivery follows no redirect and lasts at most Timeout.
	HTTP safehttp.Config
	// Workers bounds the deliveries in flight; default DefaultWorkers.
	Workers int
	// Timeout cuts an attempt; default DefaultTimeout. Shorter only in tests.
	Timeout time.Duration
	// Poll is how often Run looks for due deliveries when not woken; default DefaultPoll.
	Poll time.Duration
	// Lease is how long a claimed delivery stays with this deliverer; it comes back after it if
	// the process dies. Default Timeout + 30 s.
	Lease time.Duration
	Log   *slog.Logger
	// Observe, when set, hears each attempt once recorded: its outcome (delivered, retrying:
	// failed and due again, failed: the last attempt failed) and how long it took.
	Observe func(outcome string, took time.Duration)
}

// Deliverer sends due deliveries. Each runs in its own goroutine, at most Workers at a time, so
// a slow receiver holds one worker, never the others.
type Deliverer struct {
	cfg    Config
	client *http.Client
	slots  chan struct{}
	wake   chan struct{}
}

// New returns a Deliverer; it panics without a Store, a wiring mistake.
func New(cfg Config) *Deliverer {
	if cfg.Store == nil {
		panic("webhookout: New needs a Store")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Lease <= 0 {
		cfg.Lease = cfg.Timeout + 30*time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Deliverer{cfg: cfg, client: NewClient(cfg.HTTP, cfg.Timeout), slots: make(chan struct{}, cfg.Workers),
		wake: make(chan struct{}, 1)}
}

// NewClient is the client of deliveries: https only, every dialled address checked (after DNS,
// at every delivery), no redirect followed (a 3xx is a failed attempt), timeout for the whole
// exchange.
func NewClient(cfg safehttp.Config, timeout time.Duration) *http.Client {
	cfg.AllowHTTP = false
	cfg.MaxRedirects = -1
	cfg.Timeout = timeout
	c := safehttp.NewClient(cfg)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

// Timeout is the cut of an attempt.
func (d *Deliverer) Timeout() time.Duration { return d.cfg.Timeout }

// Wake makes Run look for due deliveries now.
func (d *Deliverer) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends, then waits for the attempts in flight; those cut by the end are
// not counted and come back due at once on the next start.
func (d *Deliverer) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	// A failing store (down, or its disk full) is retried with backoff and logged once per
	// interval, not once per poll.
	backoff := retry.New(d.cfg.Poll, 30*time.Second)
	for {
		wait := d.cfg.Poll
		if n, err := d.start(ctx, &wg); err != nil && ctx.Err() == nil {
			if ok, muted := backoff.Log(); ok {
				d.cfg.Log.Warn("webhook deliveries: claim failed; retrying with backoff", "err", err,
					"failures", backoff.Failures()+1, "unlogged", muted)
			}
			wait = backoff.Next()
		} else {
			backoff.Reset()
			if n > 0 {
				continue
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-d.wake:
			if wait > d.cfg.Poll {
				<-t.C
			}
		case <-t.C:
		}
		t.Stop()
	}
}

// start claims as many due deliveries as there are free workers and starts them.
func (d *Deliverer) start(ctx context.Context, wg *sync.WaitGroup) (int, error) {
	free := cap(d.slots) - len(d.slots)
	if free == 0 {
		return 0, nil
	}
	ds, err := d.cfg.Store.ClaimDeliveries(ctx, webhook.ClaimParams{Limit: free, Lease: d.cfg.Lease, Now: d.cfg.Clock.Now()})
	if err != nil {
		return 0, err
	}
	for _, del := range ds {
		d.slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				<-d.slots
				d.Wake()
			}()
			d.deliver(ctx, del)
		}()
	}
	return len(ds), nil
}

// Drain delivers every delivery due now, Workers at a time, and returns when they are all
// recorded; it returns how many it tried. Tests and benchmarks drive the deliverer with it.
func (d *Deliverer) Drain(ctx context.Context) (int, error) {
	var wg sync.WaitGroup
	total := 0
	for {
		n, err := d.start(ctx, &wg)
		total += n
		if err != nil {
			wg.Wait()
			return total, err
		}
		if n == 0 {
			if len(d.slots) == 0 {
				return total, nil
			}
			// Wait for a worker to free up, then claim again.
			select {
			case <-d.wake:
			case <-ctx.Done():
				wg.Wait()
				return total, ctx.Err()
			}
		}
	}
}

var errStale = errors.New("delivery changed while it was sent")

// deliver makes one attempt of del and records it.
func (d *Deliverer) deliver(ctx context.Context, del webhook.Delivery) {
	ep, err := d.cfg.Store.GetEndpoint(ctx, del.EndpointID)
	if errors.Is(err, problem.ErrNotFound) {
		return // deleted with its deliveries
	}
	if err != nil {
		d.cfg.Log.Warn("webhook delivery: endpoint", "delivery", del.ID, "err", err)
		return // back after its lease
	}
	if !ep.Enabled {
		d.record(del, func(x *webhook.Delivery) { x.Abandon("the endpoint is disabled") })
		return
	}
	now := d.cfg.Clock.Now()
	status, took, sendErr := d.send(ctx, ep, del, now)
	if ctx.Err() != nil {
		// Shutting down: this attempt does not count; make the delivery due again at once.
		d.record(del, func(x *webhook.Delivery) {
			due := d.cfg.Clock.Now().UTC()
			x.NextAttemptAt = &due
		})
		return
	}
	a := webhook.Attempt{At: now, StatusCode: status, DurationMs: took.Milliseconds()}
	if sendErr != nil {
		a.Error = sendErr.Error()
	}
	var state webhook.State
	if d.record(del, func(x *webhook.Delivery) { x.Record(a, d.cfg.Clock.Now()); state = x.State }) && d.cfg.Observe != nil {
		d.cfg.Observe(outcome(state), took)
	}
}

// outcome names a delivery's state after an attempt for Config.Observe.
func outcome(s webhook.State) string {
	switch s {
	case webhook.StateSucceeded:
		return "delivered"
	case webhook.StatePending:
		return "retrying"
	default:
		return "failed"
	}
}

// record applies fn to the delivery unless another deliverer has moved it on meanwhile, and
// says whether it did.
func (d *Deliverer) record(del webhook.Delivery, fn func(*webhook.Delivery)) bool {
	// Recorded even when the run's context ends: the attempt happened.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := d.cfg.Store.UpdateDelivery(ctx, del.ID, func(x *webhook.Delivery) error {
		if x.State != webhook.StatePending || x.Attempts != del.Attempts {
			return errStale
		}
		fn(x)
		return nil
	})
	if err != nil && !errors.Is(err, errStale) && !errors.Is(err, problem.ErrNotFound) {
		d.cfg.Log.Warn("webhook delivery: recording the attempt failed; retried after the lease", "delivery", del.ID, "err", err)
	}
	return err == nil
}

// send POSTs the delivery's body, signed at now, and returns the status (0 without an answer),
// how long it took, and the error that made the attempt fail without a usable answer.
func (d *Deliverer) send(ctx context.Context, ep webhook.Endpoint, del webhook.Delivery, now time.Time) (int, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(del.Body))
	if err != nil {
		return 0, 0, fmt.Errorf("bad endpoint URL: %w", err)
	}
	ts := now.Unix()
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "mediajobs-webhooks/1")
	h.Set(HeaderSignature, webhook.Sign(ep.Secret, ts, del.Body))
	if prev, ok := ep.Previous(now); ok {
		h.Set(HeaderSignaturePrevious, webhook.Sign(prev, ts, del.Body))
	}
	h.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	h.Set(HeaderEvent, del.Event)
	h.Set(HeaderDelivery, del.ID)
	h.Set(HeaderAttempt, strconv.Itoa(del.Attempts+1))
	start := time.Now()
	resp, err := d.client.Do(req)
	if err != nil {
		d.cfg.Log.Info("webhook delivery: no answer", "delivery", del.ID, "endpoint", ep.ID, "err", err)
		return 0, time.Since(start), describe(err, d.cfg.Timeout)
	}
	// The answer must be whole within the timeout too; its content is not kept.
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	took := time.Since(start)
	if err != nil && webhook.Succeeded(resp.StatusCode) {
		return resp.StatusCode, took, describe(err, d.cfg.Timeout)
	}
	return resp.StatusCode, took, nil
}

// describe makes a transport error fit for the delivery history, which the endpoint's owner
// reads: no URL (its query may be a credential), no address or resolver (safehttp.Reason),
// timeouts said plainly. The raw error goes to the log.
func describe(err error, timeout time.Duration) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %v", timeout)
	}
	return errors.New(safehttp.Reason(err))
}

// URLChecker vets endpoint URLs at creation with the deliveries' own address policy; it
// implements service.URLChecker.
type URLChecker struct {
	HTTP safehttp.Config
}

// CheckURL refuses a URL that is not https or whose host resolves to a blocked address.
func (c URLChecker) CheckURL(ctx context.Context, rawURL string) error {
	cfg := c.HTTP
	cfg.AllowHTTP = false
	// The message reaches the client: the reason, never what the name resolved to (an oracle
	// of the network behind the service).
	return safehttp.Public(safehttp.CheckURL(ctx, rawURL, cfg))
}
