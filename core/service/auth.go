package service

import (
	"context"
	"crypto/subtle"
	"errors"
	"strings"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Auth finds who calls.
type Auth struct {
	accounts account.Store
}

// NewAuth returns the Auth use case.
func NewAuth(accounts account.Store) (*Auth, error) {
	if err := need("Auth", port{"an account store", accounts}); err != nil {
		return nil, err
	}
	return &Auth{accounts: accounts}, nil
}

// Authenticate finds the account of a bearer API key. Every failure is the same UNAUTHORIZED, so
// that nothing tells a wrong key from a revoked one.
func (s *Auth) Authenticate(ctx context.Context, secret string) (account.Account, error) {
	unauthorized := problem.Reject(problem.CodeUnauthorized, "a valid API key is required: Authorization: Bearer <API_KEY>")
	if !strings.HasPrefix(secret, account.SecretPrefix) || len(secret) > 128 {
		return account.Account{}, unauthorized
	}
	hash := account.HashSecret(secret)
	a, k, err := s.accounts.AccountByKeyHash(ctx, hash)
	if errors.Is(err, problem.ErrNotFound) {
		return account.Account{}, unauthorized
	}
	if err != nil {
		return account.Account{}, err
	}
	// The store matched on the hash; compare again in constant time so no store's index
	// behaviour is relied upon.
	if subtle.ConstantTimeCompare([]byte(k.Hash), []byte(hash)) != 1 || k.RevokedAt != nil {
		return account.Account{}, unauthorized
	}
	return a, nil
}
