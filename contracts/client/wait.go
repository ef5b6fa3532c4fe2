package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Terminal reports whether a job in status s has ended: complete, failed or cancelled.
func (s Status) Terminal() bool {
	return s == StatusComplete || s == StatusFailed || s == StatusCancelled
}

// Defaults of Wait. Each read of the job asks the server to hold its answer until the job ends
// (GET /jobs/{id}?wait=, a long poll) for DefaultLongPoll, or, with WithProgress, for the
// longest poll interval in whole seconds, so that progress is seen as often as polling would
// see it. A server that answers a running job sooner (one without long polls) is polled: every
// 500 ms at first, backing off to 2 s, the API's pace.
const (
	DefaultLongPoll = 20 * time.Second
	// MaxLongPoll is the longest wait the API holds a read for (GET /jobs/{id}'s wait, 60).
	MaxLongPoll      = 60 * time.Second
	DefaultFirstPoll = 500 * time.Millisecond
	DefaultMaxPoll   = 2 * time.Second
	// maxTransient is how many transport failures or 5xx answers in a row Wait rides out (a
	// restarting server) before it gives up.
	maxTransient = 5
)

// WaitOption changes how Wait polls.
type WaitOption func(*waitConfig)

type waitConfig struct {
	first, max time.Duration
	onPoll     func(Job)
	// sleep waits d or until ctx is done; tests replace it to see the waits without taking them.
	sleep func(ctx context.Context, d time.Duration) error
	// now reads the clock that tells whether the server held an answer; tests replace it.
	now func() time.Time
}

// longPoll is the wait each read asks for, in whole seconds: DefaultLongPoll, or the longest
// poll interval when progress is followed (0, no wait, under a second: that polls).
func (c waitConfig) longPoll() time.Duration {
	if c.onPoll == nil {
		return DefaultLongPoll
	}
	return min(c.max.Truncate(time.Second), MaxLongPoll)
}

// WithPollInterval sets the first interval between two reads of the job and the longest one
// the backoff (x1.5 per read) reaches, where the server answers a running job at once; with
// WithProgress, the longest is also how long a read waits for the job to end.
func WithPollInterval(first, max time.Duration) WaitOption {
	return func(c *waitConfig) {
		if first > 0 {
			c.first = first
		}
		if max >= c.first {
			c.max = max
		}
	}
}

// WithProgress calls fn with the job after every read, the last (terminal) one included: its
// status and, while it runs, its progress (0 to 1).
func WithProgress(fn func(Job)) WaitOption {
	return func(c *waitConfig) { c.onPoll = fn }
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Wait follows the job with GET /jobs/{id}?wait= until it is complete, failed or cancelled, and
// returns it; a failed job is a result, not an error (read job.Error). Each read waits on the
// server for up to DefaultLongPoll (with WithProgress, the longest poll interval in whole
// seconds; under a second, it polls), so the job's end is heard within milliseconds; a server
// that answers a running job sooner is polled, backing off from DefaultFirstPoll to
// DefaultMaxPoll. A 429 RATE_LIMITED answer waits its
// Retry-After and reads on; transport failures and 5xx answers are retried a few times with the
// same backoff. Any other refusal (401, 404) is an *APIError; a done ctx returns ctx.Err().
// Bound the whole wait with ctx, not with the http.Client's Timeout: a Timeout shorter than a
// read's wait cuts every read, and Wait gives up after a few.
func (c *ClientWithResponses) Wait(ctx context.Context, id string, opts ...WaitOption) (*Job, error) {
	cfg := waitConfig{first: DefaultFirstPoll, max: DefaultMaxPoll, sleep: sleepCtx, now: time.Now}
	for _, o := range opts {
		o(&cfg)
	}
	longPoll := cfg.longPoll()
	interval := cfg.first
	transient := 0
	for {
		asked := cfg.now()
		job, wait, err := c.poll(ctx, id, longPoll)
		switch {
		case err == nil:
			transient = 0
			if cfg.onPoll != nil {
				cfg.onPoll(*job)
			}
			if job.Status.Terminal() {
				return job, nil
			}
			if longPoll > 0 && cfg.now().Sub(asked) >= longPoll/2 {
				continue // the server held the answer as asked: ask again at once
			}
			wait = interval
		case wait > 0:
			// Rate limited: the server said how long; it is not a failure of the server.
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case isTransient(err) && transient < maxTransient:
			transient++
			wait = interval
		default:
			return nil, err
		}
		if err := cfg.sleep(ctx, wait); err != nil {
			return nil, err
		}
		interval = min(interval*3/2, cfg.max)
	}
}

// poll reads the job once, asking the server to hold the answer for up to hold while the job
// runs. wait is the Retry-After of a 429 answer (at least a second).
func (c *ClientWithResponses) poll(ctx context.Context, id string, hold time.Duration) (*Job, time.Duration, error) {
	seconds := int64(hold / time.Second)
	resp, err := c.GetJobWithResponse(ctx, id, &GetJobParams{Wait: &seconds})
	if err != nil {
		return nil, 0, &transportError{err: fmt.Errorf("client: GET /jobs/%s: %w", id, err)}
	}
	if err := ResponseError(resp.HTTPResponse, resp.Body); err != nil {
		var apiErr *APIError
		if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusTooManyRequests {
			return nil, max(apiErr.RetryAfter, time.Second), err
		}
		return nil, 0, err
	}
	if resp.JSON200 == nil {
		return nil, 0, fmt.Errorf("client: GET /jobs/%s: answer %d is not a job", id, resp.StatusCode())
	}
	return &resp.JSON200.Data, 0, nil
}

// transportError is a request that got no answer.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// isTransient tells failures worth another try: no answer, or a 5xx one.
func isTransient(err error) bool {
	var te *transportError
	if errors.As(err, &te) {
		return true
	}
	var apiErr *APIError
	return errors.As(err, &apiErr) && apiErr.StatusCode >= 500
}
