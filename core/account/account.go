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
}

// Account is a customer of the service.
type Account struct {
	ID        string
	Plan      Plan
	CreatedAt time.Time
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
}

// ListParams select a page of accounts.
type ListParams struct {
	Plan  Plan // empty: any
	After string
	Limit int
}
