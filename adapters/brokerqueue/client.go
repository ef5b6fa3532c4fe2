package brokerqueue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/mediajobs/mediajobs/adapters/httpqueue"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// ClientConfig configures a Client.
type ClientConfig struct {
	// Token is the worker token (MEDIAJOBS_WORKER_TOKEN), the same as the control plane's.
	Token string
	// Worker names this worker in the control plane's logs; empty: "worker". Its address on
	// the broker is the name (letters, digits, _ and - kept) and a random suffix, so that two
	// workers of one name never read each other's replies.
	Worker string
	// Timeout is how long a call waits for its answer, beyond a claim's own wait; default 10 s.
	Timeout time.Duration
	// HTTP carries assets and outputs; nil: one with no overall timeout (httpqueue.NewFiles).
	HTTP *http.Client
	Log  *slog.Logger
}

// DefaultTimeout is how long a call waits for its answer when ClientConfig.Timeout is zero,
// beyond a claim's own wait.
const DefaultTimeout = 10 * time.Second

// Client is a workqueue.Queue over a message broker, for a worker in a process of its own:
// claims, heartbeats and reports are calls answered by the control plane through the broker;
// assets and outputs go over HTTP to the URLs each assignment carries.
type Client struct {
	b       Broker
	id      string
	name    string
	token   string
	timeout time.Duration
	files   *httpqueue.Files
	log     *slog.Logger

	stop    context.CancelFunc
	closing chan struct{}
	// wg holds the reply reader and the hand-backs of late claims.
	wg sync.WaitGroup

	mu sync.Mutex
	// pending are the calls waiting for their answer, by correlation ID.
	pending map[string]chan replyBody
	// abandoned are the claims given up on, by correlation ID: jobs their late answer hands
	// out go back to the queue at once instead of waiting for their lease to lapse.
	abandoned map[string]time.Time
	// leases are the URLs of the assignments claimed through this client, until reported.
	leases map[workqueue.Lease]jobURLs
	closed bool
}

type jobURLs struct{ assets, outputs string }

var _ workqueue.Queue = (*Client)(nil)

// Errors a caller may branch on.
var (
	// ErrNoAnswer is a call the control plane did not answer in time: none runs on this
	// broker, or it is overloaded, or it is restarting. Call again.
	ErrNoAnswer = errors.New("brokerqueue: no answer from the control plane in time")
	// ErrUnauthorized is the control plane refusing the worker token.
	ErrUnauthorized = errors.New("brokerqueue: the control plane refused the worker token (MEDIAJOBS_WORKER_TOKEN must be the same on serve and its workers)")
	// ErrClosed is a call on a closed Client.
	ErrClosed = errors.New("brokerqueue: the client is closed")
)

// NewClient returns a Client over b, subscribed to its replies. The Client owns b.
func NewClient(b Broker, cfg ClientConfig) (*Client, error) {
	if b == nil {
		return nil, errors.New("brokerqueue: NewClient needs a broker")
	}
	if cfg.Token == "" {
		return nil, errors.New("brokerqueue: a worker token is required (MEDIAJOBS_WORKER_TOKEN)")
	}
	if cfg.Worker == "" {
		cfg.Worker = "worker"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	c := &Client{b: b, id: workerID(cfg.Worker), name: cfg.Worker, token: cfg.Token, timeout: cfg.Timeout,
		files: httpqueue.NewFiles(cfg.Token, cfg.HTTP), log: cfg.Log, closing: make(chan struct{}),
		pending: map[string]chan replyBody{}, abandoned: map[string]time.Time{}, leases: map[workqueue.Lease]jobURLs{}}
	ctx, stop := context.WithCancel(context.Background())
	replies, err := b.replies(ctx, c.id)
	if err != nil {
		stop()
		return nil, fmt.Errorf("brokerqueue: subscribe to the replies of %s: %w", c.id, err)
	}
	c.stop = stop
	c.wg.Go(func() {
		for m := range replies {
			m.Ack()
			c.dispatch(m)
		}
	})
	return c, nil
}

// workerID is name made a subject token and a short SQL value, with a random suffix.
func workerID(name string) string {
	clean := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, name)
	if len(clean) > 60 {
		clean = clean[:60]
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return clean + "-" + hex.EncodeToString(b[:])
}

// ID is this worker's address on the broker.
func (c *Client) ID() string { return c.id }

// Close ends the client: calls waiting for an answer return ErrClosed, the reply subscription
// ends, and the broker is closed.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.closing)
	c.mu.Unlock()
	c.stop()
	c.wg.Wait()
	c.files.CloseIdleConnections()
	return c.b.close()
}

// Claim asks the control plane for up to p.Max jobs of p.Class, waiting up to p.Wait (at most
// MaxClaimWait) for work.
func (c *Client) Claim(ctx context.Context, p workqueue.ClaimParams) ([]workqueue.Assignment, error) {
	if p.Max <= 0 {
		return nil, nil
	}
	if !knownClass(p.Class) {
		return nil, problem.Reject(problem.CodeValidation, "class %q is not cpu or gpu", p.Class)
	}
	if p.Worker == "" {
		p.Worker = c.name
	}
	wait := min(max(p.Wait, 0), MaxClaimWait)
	data, err := c.call(ctx, claimsTopic(p.Class), opClaim, claimBody{Class: p.Class, Max: p.Max, Worker: p.Worker, Version: p.Version, WaitMs: wait.Milliseconds(), Slots: p.Slots}, wait)
	if err != nil {
		return nil, err
	}
	var out []workqueue.Assignment
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("brokerqueue: claim: decoding the answer: %w", err)
	}
	c.mu.Lock()
	for _, a := range out {
		c.leases[a.Lease] = jobURLs{assets: a.AssetsURL, outputs: a.OutputsURL}
	}
	c.mu.Unlock()
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func knownClass(c job.Class) bool {
	for _, k := range classes {
		if c == k {
			return true
		}
	}
	return false
}

// Heartbeat keeps a lease.
func (c *Client) Heartbeat(ctx context.Context, b workqueue.Beat) (workqueue.Ack, error) {
	var ack workqueue.Ack
	data, err := c.call(ctx, topicLeases, opHeartbeat, b, 0)
	if err != nil {
		c.forgetIfRefused(b.Lease, err)
		return ack, err
	}
	if err := json.Unmarshal(data, &ack); err != nil {
		return ack, fmt.Errorf("brokerqueue: heartbeat: decoding the answer: %w", err)
	}
	return ack, nil
}

// Report ends an attempt. It is safe to send again when it failed.
func (c *Client) Report(ctx context.Context, l workqueue.Lease, r workqueue.Result) error {
	_, err := c.call(ctx, topicLeases, opReport, reportBody{Lease: l, Result: r}, 0)
	if err == nil || errors.Is(err, workqueue.ErrLeaseRefused) {
		c.forget(l)
	}
	return err
}

// OpenAsset reads an uploaded input of the job over HTTP, from the assignment's AssetsURL.
func (c *Client) OpenAsset(ctx context.Context, l workqueue.Lease, assetID string) (io.ReadCloser, error) {
	u, err := c.urls(l)
	if err != nil {
		return nil, err
	}
	if u.assets == "" {
		return nil, errors.New("brokerqueue: the assignment has no assets URL: the control plane needs its base URL (--base-url) reachable from workers")
	}
	r, err := c.files.Open(ctx, u.assets+url.PathEscape(assetID), l)
	c.forgetIfRefused(l, err)
	return r, err
}

// PutOutput stores one output file of the job over HTTP, at the assignment's OutputsURL.
func (c *Client) PutOutput(ctx context.Context, l workqueue.Lease, name string, r io.Reader, max int64) (int64, error) {
	u, err := c.urls(l)
	if err != nil {
		return 0, err
	}
	if u.outputs == "" {
		return 0, errors.New("brokerqueue: the assignment has no outputs URL: the control plane needs its base URL (--base-url) reachable from workers")
	}
	n, err := c.files.Put(ctx, u.outputs+url.PathEscape(name), l, r, max)
	c.forgetIfRefused(l, err)
	return n, err
}

// urls are the URLs of lease l's assignment. A lease this client did not claim, or has
// reported, is refused: no job of this worker holds it.
func (c *Client) urls(l workqueue.Lease) (jobURLs, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.leases[l]
	if !ok {
		return u, fmt.Errorf("%w: job %s attempt %d: no assignment claimed through this worker holds this lease", workqueue.ErrLeaseRefused, l.JobID, l.Attempt)
	}
	return u, nil
}

func (c *Client) forget(l workqueue.Lease) {
	c.mu.Lock()
	delete(c.leases, l)
	c.mu.Unlock()
}

func (c *Client) forgetIfRefused(l workqueue.Lease, err error) {
	if errors.Is(err, workqueue.ErrLeaseRefused) {
		c.forget(l)
	}
}

// call publishes a call on topic and waits for its answer until wait plus the client's
// timeout have passed.
func (c *Client) call(ctx context.Context, topic, op string, body any, wait time.Duration) (json.RawMessage, error) {
	deadline := time.Now().Add(wait + c.timeout)
	m, err := newCall(op, c.id, c.token, deadline, body)
	if err != nil {
		return nil, err
	}
	answer := make(chan replyBody, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	c.pending[m.UUID] = answer
	c.mu.Unlock()
	if err := c.b.publish(topic, m); err != nil {
		c.mu.Lock()
		delete(c.pending, m.UUID)
		c.mu.Unlock()
		return nil, fmt.Errorf("brokerqueue: %s: publishing the call: %w", op, err)
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case r := <-answer:
		return c.result(op, r)
	case <-ctx.Done():
		c.giveUp(m.UUID, op, answer)
		return nil, fmt.Errorf("brokerqueue: %s: %w", op, ctx.Err())
	case <-t.C:
		c.giveUp(m.UUID, op, answer)
		return nil, fmt.Errorf("%w: the %s call waited %s (is `mediajobs serve` running on this broker?)", ErrNoAnswer, op,
			(wait + c.timeout).Round(time.Millisecond))
	case <-c.closing:
		c.giveUp(m.UUID, op, answer)
		return nil, ErrClosed
	}
}

// giveUp stops waiting for call id. A claim's answer that comes later, or came just now, hands
// its jobs back.
func (c *Client) giveUp(id, op string, answer chan replyBody) {
	c.mu.Lock()
	_, waiting := c.pending[id]
	delete(c.pending, id)
	if waiting && op == opClaim {
		now := time.Now()
		for k, at := range c.abandoned {
			if now.Sub(at) > natsMaxAge {
				delete(c.abandoned, k)
			}
		}
		c.abandoned[id] = now
	}
	c.mu.Unlock()
	if !waiting && op == opClaim {
		// dispatch took the answer under the lock: it is in the channel.
		c.handBack(<-answer)
	}
}

// dispatch hands a reply to the call waiting for it.
func (c *Client) dispatch(m *message.Message) {
	id := m.Metadata.Get(metaCorrelation)
	var r replyBody
	if err := json.Unmarshal(m.Payload, &r); err != nil {
		c.log.Warn("brokerqueue: a reply that is not JSON was dropped", "correlation", id, "err", err)
		return
	}
	c.mu.Lock()
	answer, waiting := c.pending[id]
	if waiting {
		delete(c.pending, id)
		answer <- r // buffered: never blocks
	}
	_, late := c.abandoned[id]
	delete(c.abandoned, id)
	c.mu.Unlock()
	if late {
		c.handBack(r)
	}
}

// handBack gives the jobs of a claim nobody waits for back to the queue, at once, instead of
// leaving them dispatched until their lease lapses.
func (c *Client) handBack(r replyBody) {
	var as []workqueue.Assignment
	if r.Error != nil || json.Unmarshal(r.Data, &as) != nil || len(as) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	for _, a := range as {
		c.leases[a.Lease] = jobURLs{}
		c.wg.Go(func() {
			c.log.Info("brokerqueue: handing back a job whose claim was given up", "job", a.Lease.JobID, "attempt", a.Lease.Attempt)
			err := c.Report(context.Background(), a.Lease, workqueue.Result{Failure: &workqueue.Failure{Kind: workqueue.KindHandBack,
				Message: "the worker had given up the claim when its answer came"}})
			if err != nil {
				c.forget(a.Lease)
				c.log.Warn("brokerqueue: could not hand back a job; it returns to the queue when its lease lapses", "job", a.Lease.JobID, "err", err)
			}
		})
	}
}

// result is a reply's data, or its error: CONFLICT is workqueue.ErrLeaseRefused, UNAUTHORIZED
// ErrUnauthorized, any other code a *problem.Problem.
func (c *Client) result(op string, r replyBody) (json.RawMessage, error) {
	if r.Error == nil {
		return r.Data, nil
	}
	switch r.Error.Code {
	case problem.CodeConflict:
		return nil, fmt.Errorf("%w: %s", workqueue.ErrLeaseRefused, r.Error.Message)
	case problem.CodeUnauthorized:
		return nil, ErrUnauthorized
	}
	return nil, fmt.Errorf("brokerqueue: %s: %w", op, &problem.Problem{Code: r.Error.Code, Message: r.Error.Message})
}
