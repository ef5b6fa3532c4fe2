// Package account holds accounts, their plans and limits, and API keys: random secrets shown
// once and stored only as hashes. Its Store port is implemented by every store adapter.
package account

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// Plan is Free or Pro.
type Plan string

const (
	PlanFree Plan = "free"
	PlanPro  Plan = "pro"
)

// ParsePlan turns an untrusted string into a Plan.
func ParsePlan(s string) (Plan, error) {
	switch Plan(s) {
	case PlanFree, PlanPro:
		return Plan(s), nil
	}
	return "", fmt.Errorf("plan %q is not one of free, pro", s)
}

// Limits are what a plan allows. They are data: billing.Pricing.Limits gives a plan's.
type Limits struct {
	RequestsPerMinute int           `json:"requestsPerMinute"`
	ExecutionCap      time.Duration `json:"-"`
	GPU               bool          `json:"gpu"`
	// Concurrency is how many jobs of the account run at once; more wait in `waiting`.
	Concurrency int `json:"concurrency"`
	// JobBytes and JobFiles cap what one job may write: bytes in all, and files.
	JobBytes int64 `json:"jobBytes"`
	JobFiles int   `json:"jobFiles"`
	// StallSeconds is how long a running job may make no progress before it fails
	// RUNNER_STALLED.
	StallSeconds int `json:"stallSeconds"`
}

// Account is a customer of the service.
type Account struct {
	ID        string
	Plan      Plan
	CreatedAt time.Time
	// KeyBalance is the account's balance as read together with the key that authenticated
	// this request (one statement, where the store can: service.KeyBalances); nil when it was
	// not read then. A reading, not a reservation: the submit gate uses it rather than read
	// the balance again, and a job's charge is checked again at dispatch. Stores never set it.
	KeyBalance *int64
}

// Key is an API key as stored: its hash, never the secret.
type Key struct {
	ID        string
	AccountID string
	// Hash is the hex SHA-256 of the secret. Keys are 160 random bits, so a fast hash is enough:
	// nothing can be guessed from it, and lookup by hash takes no secret-dependent time.
	Hash      string
	Prefix    string // the first characters of the secret, to tell keys apart in listings
	CreatedAt time.Time
	RevokedAt *time.Time
	// LastUsedAt is when the key last authenticated a request, to within KeyUseInterval: it is
	// recorded at most once per interval per key, so that authentication is not a write.
	LastUsedAt *time.Time
}

// KeyUseInterval is how stale a key's LastUsedAt may be: a key in use is touched at most once
// per interval by each API replica.
const KeyUseInterval = time.Minute

// Session is a browser's sign-in: a random token in a cookie, stored only as its hash, that
// acts for the account with the rights of the key it was opened with. Revoking that key ends
// the session.
type Session struct {
	ID        string
	AccountID string
	KeyID     string
	// Hash is HashSecret of the token; the token itself is never stored.
	Hash      string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// SessionTTL is how long a session lasts after sign-in.
const SessionTTL = 12 * time.Hour

// NewSession opens a session for a key: the token to set in the cookie, and the Session to
// store.
func NewSession(k Key, sessionID string, now time.Time) (token string, s Session) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms.
	token = "mjs_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
	now = now.UTC().Truncate(time.Microsecond)
	return token, Session{ID: sessionID, AccountID: k.AccountID, KeyID: k.ID, Hash: HashSecret(token),
		CreatedAt: now, ExpiresAt: now.Add(SessionTTL)}
}

// CSRFToken is the anti-forgery token of a session token: a state-changing request made with
// the session's cookie must carry it in a header. It is derived, not stored: only a page that
// can read the sign-in answer (same origin) learns it, and a forged cross-site request, which
// sends the cookie blind, cannot compute it.
func CSRFToken(sessionToken string) string {
	sum := sha256.Sum256([]byte("mediajobs csrf\x00" + sessionToken))
	return hex.EncodeToString(sum[:])
}

// SecretPrefix starts every API key secret.
const SecretPrefix = "mj_"

// NewKey makes a key for an account: the secret to show once, and the Key to store.
func NewKey(accountID, keyID string, now time.Time) (secret string, k Key) {
	var b [20]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms.
	secret = SecretPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
	return secret, Key{ID: keyID, AccountID: accountID, Hash: HashSecret(secret), Prefix: secret[:len(SecretPrefix)+6],
		CreatedAt: now.UTC().Truncate(time.Microsecond)}
}

// HashSecret is how a key's secret is stored and looked up.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Store is the port of accounts and keys.
type Store interface {
	CreateAccount(ctx context.Context, a Account) error
	// GetAccount returns the account or problem.ErrNotFound.
	GetAccount(ctx context.Context, id string) (Account, error)
	SetPlan(ctx context.Context, id string, p Plan) error
	// ListAccounts returns accounts by ID, a page at a time: those after p.After, on p.Plan
	// when it is set.
	ListAccounts(ctx context.Context, p ListParams) ([]Account, error)
	CreateKey(ctx context.Context, k Key) error
	// AccountByKeyHash returns the account of a live (unrevoked) key, or problem.ErrNotFound.
	AccountByKeyHash(ctx context.Context, hash string) (Account, Key, error)
	// RevokeKey marks an account's key revoked; an unknown key is problem.ErrNotFound.
	RevokeKey(ctx context.Context, accountID, keyID string, at time.Time) error
	// ListKeys returns every key of an account, revoked ones too, newest first.
	ListKeys(ctx context.Context, accountID string) ([]Key, error)
	// TouchKey records that a key was used at at; a time earlier than the one recorded is
	// kept out. An unknown key is problem.ErrNotFound.
	TouchKey(ctx context.Context, keyID string, at time.Time) error

	// CreateSession saves a session; a missing account or key is problem.ErrNotFound.
	CreateSession(ctx context.Context, s Session) error
	// SessionByHash returns a session and its account while the session's key is live
	// (unrevoked); otherwise, or for an unknown hash, problem.ErrNotFound. Expiry is the
	// caller's to check.
	SessionByHash(ctx context.Context, hash string) (Account, Session, error)
	// DeleteSession removes a session; an unknown hash is not an error.
	DeleteSession(ctx context.Context, hash string) error
	// DeleteExpiredSessions removes the sessions that expired before now, returning how many.
	DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error)
}

// ListParams select a page of accounts.
type ListParams struct {
	Plan  Plan // empty: any
	After string
	Limit int
}
