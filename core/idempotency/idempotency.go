package idempotency

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/problem"
)

// State is where a key's request stands.
type State string

const (
	// Pending: a request holds the key and is doing its work.
	Pending State = "pending"
	// Done: the request finished; its response is kept for repeats.
	Done State = "done"
)

// Record is one key of one account.
type Record struct {
	AccountID string
	Key       string
	// Operation names what the key was first used for ("POST /jobs"): a key is one request.
	Operation string
	// Fingerprint identifies the request's body; set when the record is done, and before
	// when the caller knows it up front.
	Fingerprint string
	State       State
	// Owner is the random token of the request holding a pending record: only it completes
	// or releases the record.
	Owner string
	// Response is the first response, opaque to the core (the entry point encodes it).
	Response  []byte
	CreatedAt time.Time
	// ExpiresAt is when the key may be used afresh: CreatedAt plus the guard's TTL.
	ExpiresAt time.Time
	// LeaseUntil bounds how long a pending record belongs to its owner: a record still
	// pending after it belongs to a request that died (a crash), and a repeat may take it over.
	LeaseUntil time.Time
}

// live tells whether r still holds its key at now.
func (r Record) live(now time.Time) bool {
	if !now.Before(r.ExpiresAt) {
		return false
	}
	return r.State == Done || now.Before(r.LeaseUntil)
}

// Store keeps the keys, durably. Times are stored to the microsecond, in UTC.
type Store interface {
	// ReserveKey saves rec, pending, unless the account holds a live record under rec.Key
	// (not expired and, when pending, within its lease): then it returns that record and
	// false. A record that is no longer live is replaced. Concurrent calls with one key
	// reserve it once.
	ReserveKey(ctx context.Context, rec Record, now time.Time) (Record, bool, error)
	// CompleteKey marks the pending record of (accountID, key) held by owner done, with
	// the request's fingerprint and response. problem.ErrNotFound when owner no longer holds it.
	CompleteKey(ctx context.Context, accountID, key, owner, fingerprint string, response []byte) error
	// RenewKey extends the lease of the pending record of (accountID, key) held by owner to
	// until. problem.ErrNotFound when owner no longer holds it (done, released, or taken over).
	RenewKey(ctx context.Context, accountID, key, owner string, until time.Time) error
	// ReleaseKey deletes the pending record of (accountID, key) held by owner, so that a
	// repeat runs afresh; releasing a record one no longer holds is not an error.
	ReleaseKey(ctx context.Context, accountID, key, owner string) error
	// GetKey returns the record of (accountID, key), or problem.ErrNotFound.
	GetKey(ctx context.Context, accountID, key string) (Record, error)
	// PurgeKeys deletes the records expired at now and says how many.
	PurgeKeys(ctx context.Context, now time.Time) (int64, error)
}

// Defaults of a Guard.
const (
	// DefaultTTL is how long a key answers with its first response: the day Stripe-style
	// clients expect.
	DefaultTTL = 24 * time.Hour
	// DefaultLease bounds how long a pending key outlives the last sign of life of the request
	// that holds it: the holder renews it every third of it for as long as it works (an upload
	// streams a large file for minutes), so a repeat waits out a crashed replica's key in
	// about this long, not in the request's whole possible length.
	DefaultLease = 30 * time.Second
	// DefaultWait is how long a repeat waits for the first request to finish before it is
	// told to retry.
	DefaultWait = 30 * time.Second
	// MaxKeyLength bounds a key.
	MaxKeyLength = 255
)

// GuardPorts are what a Guard needs.
type GuardPorts struct {
	Store Store
	Clock clock.Clock
	// TTL, Lease and Wait override the defaults when positive.
	TTL, Lease, Wait time.Duration
}

// Guard applies the rules of idempotent requests. Both REST and anything else that accepts a
// key go through it.
type Guard struct {
	store            Store
	clock            clock.Clock
	ttl, lease, wait time.Duration
}

// NewGuard returns a Guard; a missing port is refused.
func NewGuard(p GuardPorts) (*Guard, error) {
	if p.Store == nil || p.Clock == nil {
		return nil, errors.New("idempotency: NewGuard needs a store and a clock")
	}
	g := &Guard{store: p.Store, clock: p.Clock, ttl: DefaultTTL, lease: DefaultLease, wait: DefaultWait}
	if p.TTL > 0 {
		g.ttl = p.TTL
	}
	if p.Lease > 0 {
		g.lease = p.Lease
	}
	if p.Wait > 0 {
		g.wait = p.Wait
	}
	return g, nil
}

// TTL is how long a key answers with its first response.
func (g *Guard) TTL() time.Duration { return g.ttl }

// Call is one request that carries a key.
type Call struct {
	AccountID string
	Key       string
	Operation string
	// Fingerprint of the request body, when known before the work (JSON bodies). Empty for a
	// body only known as it streams (an upload): the caller then checks a prior record with
	// Match once it has read its body.
	Fingerprint string
}

// Ticket is a held key: the caller does the work, then Completes with the response or
// Releases when the request was refused, so that a corrected repeat may run.
type Ticket struct {
	g    *Guard
	rec  Record
	done chan struct{} // closed when the ticket stops renewing its lease
	stop sync.Once
}

// CheckKey refuses a key that is empty, too long, or other than visible ASCII (no space).
func CheckKey(key string) error {
	if key == "" || len(key) > MaxKeyLength {
		return problem.Reject(problem.CodeValidation, "Idempotency-Key must be 1 to %d characters", MaxKeyLength)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x21 || key[i] > 0x7e {
			return problem.Reject(problem.CodeValidation, "Idempotency-Key %q has a character other than visible ASCII (a space or control character, or a byte past ASCII) at byte %d", key, i)
		}
	}
	return nil
}

// Begin takes the key for the call, or returns the record of the request that had it first:
// done, with its response to answer again. A repeat whose first request is still running
// waits for it (up to the guard's wait; ctx bounds it too). A key used for another operation
// or (when c.Fingerprint is set) another body is refused with IDEMPOTENCY_KEY_REUSED.
func (g *Guard) Begin(ctx context.Context, c Call) (*Ticket, *Record, error) {
	if err := CheckKey(c.Key); err != nil {
		return nil, nil, err
	}
	owner, err := newOwner()
	if err != nil {
		return nil, nil, err
	}
	deadline := time.Now().Add(g.wait)
	delay := 5 * time.Millisecond
	for {
		now := g.clock.Now().UTC().Truncate(time.Microsecond)
		rec := Record{AccountID: c.AccountID, Key: c.Key, Operation: c.Operation, Fingerprint: c.Fingerprint,
			State: Pending, Owner: owner, CreatedAt: now, ExpiresAt: now.Add(g.ttl), LeaseUntil: now.Add(g.lease)}
		prior, reserved, err := g.store.ReserveKey(ctx, rec, now)
		if err != nil {
			return nil, nil, fmt.Errorf("idempotency: reserve %q: %w", c.Key, err)
		}
		if reserved {
			t := &Ticket{g: g, rec: rec, done: make(chan struct{})}
			go t.renew()
			return t, nil, nil
		}
		if prior.Operation != c.Operation {
			return nil, nil, problem.Reject(problem.CodeIdempotencyKeyReused,
				"Idempotency-Key %q was used for %s; use a new key for %s", c.Key, prior.Operation, c.Operation)
		}
		if prior.State == Done {
			if c.Fingerprint != "" {
				if err := Match(&prior, c.Fingerprint); err != nil {
					return nil, nil, err
				}
			}
			return nil, &prior, nil
		}
		if prior.Fingerprint != "" && c.Fingerprint != "" && prior.Fingerprint != c.Fingerprint {
			return nil, nil, reused(c.Key)
		}
		// The first request is still at work: wait for its answer, then read it again.
		if !time.Now().Add(delay).Before(deadline) {
			return nil, nil, &problem.Problem{Code: problem.CodeConflict, RetryAfter: time.Second,
				Message: problem.Messagef("a request with Idempotency-Key %q is still in progress; retry it later", c.Key)}
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, ctx.Err()
		case <-t.C:
		}
		delay = min(delay*2, 200*time.Millisecond)
	}
}

// Match refuses a request whose body is not the one the key was first used with.
func Match(prior *Record, fingerprint string) error {
	if prior.Fingerprint != fingerprint {
		return reused(prior.Key)
	}
	return nil
}

func reused(key string) error {
	return problem.Reject(problem.CodeIdempotencyKeyReused,
		"Idempotency-Key %q was used with a different request body; use a new key for a different request", key)
}

// renew keeps the lease while the request works, until Complete or Release, or until the key is
// no longer the ticket's.
func (t *Ticket) renew() {
	tick := time.NewTicker(t.g.lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-t.done:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), t.g.lease/3)
		err := t.g.store.RenewKey(ctx, t.rec.AccountID, t.rec.Key, t.rec.Owner, t.g.clock.Now().UTC().Truncate(time.Microsecond).Add(t.g.lease))
		cancel()
		if errors.Is(err, problem.ErrNotFound) {
			return
		}
		// Another error (the store briefly away) is tried again at the next tick; the lease
		// has two more thirds to run.
	}
}

// stopRenewing ends renew; the key's record is then the store's alone.
func (t *Ticket) stopRenewing() { t.stop.Do(func() { close(t.done) }) }

// Complete keeps the response for repeats. fingerprint is the request's, when the call did
// not know it up front (empty keeps the call's).
func (t *Ticket) Complete(ctx context.Context, fingerprint string, response []byte) error {
	t.stopRenewing()
	if fingerprint == "" {
		fingerprint = t.rec.Fingerprint
	}
	if err := t.g.store.CompleteKey(ctx, t.rec.AccountID, t.rec.Key, t.rec.Owner, fingerprint, response); err != nil {
		return fmt.Errorf("idempotency: complete %q: %w", t.rec.Key, err)
	}
	return nil
}

// Release gives the key up after a refused or failed request: nothing was done, so a repeat
// runs afresh. It runs even when ctx is done (the request's client went away).
func (t *Ticket) Release(ctx context.Context) error {
	t.stopRenewing()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := t.g.store.ReleaseKey(ctx, t.rec.AccountID, t.rec.Key, t.rec.Owner); err != nil {
		return fmt.Errorf("idempotency: release %q: %w", t.rec.Key, err)
	}
	return nil
}

// Purge deletes the expired keys.
func (g *Guard) Purge(ctx context.Context) (int64, error) {
	return g.store.PurgeKeys(ctx, g.clock.Now().UTC())
}

func newOwner() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("idempotency: owner token: %w", err)
	}
	return hex.EncodeToString(b), nil
}
