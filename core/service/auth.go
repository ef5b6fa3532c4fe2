package service

import (
	"context"
	"crypto/subtle"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
)

// AuthPorts are what Auth needs.
type AuthPorts struct {
	Accounts account.Store
	Clock    clock.Clock
	// Balances, when the store offers it (the SQL store does), reads a key's account and its
	// balance in one statement; nil: Authenticate reads the account alone.
	Balances KeyBalances
}

// KeyBalances is the optional port of an account store that also keeps the ledger (the SQL store
// is one): a live key's account together with the account's balance, read in one statement.
// Given to Auth, it makes authenticating a submit and the submit gate's balance check cost one
// read between them (account.Account.KeyBalance).
type KeyBalances interface {
	AccountAndBalanceByKeyHash(ctx context.Context, hash string) (account.Account, account.Key, int64, error)
}

// Auth finds who calls, by a bearer API key or a browser session, and manages an account's
// keys and sessions.
type Auth struct {
	accounts account.Store
	clock    clock.Clock
	// balances reads balances with keys; nil: not offered.
	balances KeyBalances

	mu sync.Mutex
	// touched is when this replica last recorded each key's use: a key is written at most
	// once per account.KeyUseInterval, so authenticating stays a read.
	touched map[string]time.Time
}

// NewAuth returns the Auth use case.
func NewAuth(p AuthPorts) (*Auth, error) {
	if err := need("Auth", port{"an account store", p.Accounts}, port{"a clock", p.Clock}); err != nil {
		return nil, err
	}
	return &Auth{accounts: p.Accounts, clock: p.Clock, balances: p.Balances, touched: map[string]time.Time{}}, nil
}

func unauthorizedKey() error {
	return problem.Reject(problem.CodeUnauthorized, "a valid API key is required: Authorization: Bearer <API_KEY>")
}

// Authenticate finds the account of a bearer API key: the principal of the request, with
// KeyBalance set where Balances read the balance with the key. Every failure is the same
// UNAUTHORIZED, so that nothing tells a wrong key from a revoked one.
func (s *Auth) Authenticate(ctx context.Context, secret string) (account.Account, error) {
	a, _, err := s.authenticateKey(ctx, secret)
	return a, err
}

// authenticateKey finds the live key of secret and its account, with KeyBalance where the
// store reads the balance in the same statement.
func (s *Auth) authenticateKey(ctx context.Context, secret string) (account.Account, account.Key, error) {
	if !strings.HasPrefix(secret, account.SecretPrefix) || len(secret) > 128 {
		return account.Account{}, account.Key{}, unauthorizedKey()
	}
	hash := account.HashSecret(secret)
	var (
		a       account.Account
		k       account.Key
		balance int64
		err     error
	)
	if s.balances != nil {
		a, k, balance, err = s.balances.AccountAndBalanceByKeyHash(ctx, hash)
	} else {
		a, k, err = s.accounts.AccountByKeyHash(ctx, hash)
	}
	if errors.Is(err, problem.ErrNotFound) {
		return account.Account{}, account.Key{}, unauthorizedKey()
	}
	if err != nil {
		return account.Account{}, account.Key{}, err
	}
	// The store matched on the hash; compare again in constant time so no store's index
	// behaviour is relied upon.
	if subtle.ConstantTimeCompare([]byte(k.Hash), []byte(hash)) != 1 || k.RevokedAt != nil {
		return account.Account{}, account.Key{}, unauthorizedKey()
	}
	s.touch(ctx, k.ID)
	if s.balances != nil {
		a.KeyBalance = &balance
	}
	return a, k, nil
}

// touch records a key's use when this replica has not recorded it within the interval. A failed
// write is not the request's failure: the next request past the interval tries again.
func (s *Auth) touch(ctx context.Context, keyID string) {
	now := s.clock.Now()
	s.mu.Lock()
	last, ok := s.touched[keyID]
	due := !ok || now.Sub(last) >= account.KeyUseInterval
	if due {
		s.touched[keyID] = now
	}
	s.mu.Unlock()
	if !due {
		return
	}
	if err := s.accounts.TouchKey(ctx, keyID, now.UTC().Truncate(time.Microsecond)); err != nil {
		s.mu.Lock()
		delete(s.touched, keyID)
		s.mu.Unlock()
	}
}

// SignedIn is an open session: Token goes in the cookie, CSRFToken to the page.
type SignedIn struct {
	Token     string
	CSRFToken string
	Session   account.Session
	Account   account.Account
}

// SignIn opens a browser session with an API key. A wrong or revoked key is UNAUTHORIZED. It
// also removes the sessions that have expired: sign-ins are rare, and this keeps the table to
// the live ones without a sweeper of its own.
func (s *Auth) SignIn(ctx context.Context, secret string) (SignedIn, error) {
	a, k, err := s.authenticateKey(ctx, secret)
	if err != nil {
		return SignedIn{}, err
	}
	now := s.clock.Now()
	if _, err := s.accounts.DeleteExpiredSessions(ctx, now); err != nil {
		return SignedIn{}, err
	}
	token, sess := account.NewSession(k, job.NewID("ses"), now)
	if err := s.accounts.CreateSession(ctx, sess); err != nil {
		return SignedIn{}, err
	}
	return SignedIn{Token: token, CSRFToken: account.CSRFToken(token), Session: sess, Account: a}, nil
}

func unauthorizedSession() error {
	return problem.Reject(problem.CodeUnauthorized, "the session has ended or is not valid; sign in again")
}

// Session finds the account of a session token. An unknown, expired or ended session, or one
// whose key was revoked, is UNAUTHORIZED.
func (s *Auth) Session(ctx context.Context, token string) (account.Account, account.Session, error) {
	if !strings.HasPrefix(token, "mjs_") || len(token) > 128 {
		return account.Account{}, account.Session{}, unauthorizedSession()
	}
	hash := account.HashSecret(token)
	a, sess, err := s.accounts.SessionByHash(ctx, hash)
	if errors.Is(err, problem.ErrNotFound) {
		return account.Account{}, account.Session{}, unauthorizedSession()
	}
	if err != nil {
		return account.Account{}, account.Session{}, err
	}
	if subtle.ConstantTimeCompare([]byte(sess.Hash), []byte(hash)) != 1 || !s.clock.Now().Before(sess.ExpiresAt) {
		return account.Account{}, account.Session{}, unauthorizedSession()
	}
	s.touch(ctx, sess.KeyID)
	return a, sess, nil
}

// SignOut ends a session. An unknown token is not an error: the session is gone either way.
func (s *Auth) SignOut(ctx context.Context, token string) error {
	if token == "" {
		return nil
	}
	return s.accounts.DeleteSession(ctx, account.HashSecret(token))
}

// Keys lists the caller's API keys, revoked ones too, newest first.
func (s *Auth) Keys(ctx context.Context, caller account.Account) ([]account.Key, error) {
	return s.accounts.ListKeys(ctx, caller.ID)
}

// CreateKey makes another API key for the caller: the secret, shown once, and the key.
func (s *Auth) CreateKey(ctx context.Context, caller account.Account) (string, account.Key, error) {
	secret, k := account.NewKey(caller.ID, job.NewID("key"), s.clock.Now())
	if err := s.accounts.CreateKey(ctx, k); err != nil {
		return "", account.Key{}, err
	}
	return secret, k, nil
}

// RevokeKey revokes one of the caller's keys and returns it. The key stops authenticating at
// once, and so do the sessions opened with it. Another account's key is NOT_FOUND, as is an
// unknown one; revoking twice keeps the first time.
func (s *Auth) RevokeKey(ctx context.Context, caller account.Account, keyID string) (account.Key, error) {
	notFound := problem.Reject(problem.CodeNotFound, "API key %q not found", keyID)
	if err := s.accounts.RevokeKey(ctx, caller.ID, keyID, s.clock.Now().UTC().Truncate(time.Microsecond)); err != nil {
		if errors.Is(err, problem.ErrNotFound) {
			return account.Key{}, notFound
		}
		return account.Key{}, err
	}
	keys, err := s.accounts.ListKeys(ctx, caller.ID)
	if err != nil {
		return account.Key{}, err
	}
	for _, k := range keys {
		if k.ID == keyID {
			return k, nil
		}
	}
	return account.Key{}, notFound
}
