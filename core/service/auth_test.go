package service_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
)

// A key's use is recorded at most once per KeyUseInterval: authenticating is a read, and the
// write that keeps "last used" true comes once a minute per key.
func TestKeyLastUsedIsThrottled(t *testing.T) {
	t.Parallel()
	h := setup(t)
	a := h.open(t, account.PlanFree, 10)
	secret, k := account.NewKey(a.ID, "key_1", h.clock.Now())
	if err := h.accounts.CreateKey(h.ctx, k); err != nil {
		t.Fatal(err)
	}
	lastUsed := func() *time.Time {
		t.Helper()
		keys, err := h.auth.Keys(h.ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range keys {
			if got.ID == k.ID {
				return got.LastUsedAt
			}
		}
		t.Fatalf("Keys: %v lacks %s", keys, k.ID)
		return nil
	}
	if lastUsed() != nil {
		t.Fatal("a new key has a last use")
	}
	first := h.clock.Now()
	if _, err := h.auth.Authenticate(h.ctx, secret); err != nil {
		t.Fatal(err)
	}
	if got := lastUsed(); got == nil || !got.Equal(first.UTC().Truncate(time.Microsecond)) {
		t.Fatalf("after the first use: last used %v, want %v", got, first)
	}
	h.clock.Advance(account.KeyUseInterval - time.Second)
	if _, err := h.auth.Authenticate(h.ctx, secret); err != nil {
		t.Fatal(err)
	}
	if got := lastUsed(); !got.Equal(first.UTC().Truncate(time.Microsecond)) {
		t.Fatalf("within the interval: last used moved to %v", got)
	}
	h.clock.Advance(time.Second)
	if _, err := h.auth.Authenticate(h.ctx, secret); err != nil {
		t.Fatal(err)
	}
	if got := lastUsed(); !got.Equal(h.clock.Now().UTC().Truncate(time.Microsecond)) {
		t.Fatalf("after the interval: last used %v, want %v", got, h.clock.Now())
	}
}

func TestSessions(t *testing.T) {
	t.Parallel()
	h := setup(t)
	a := h.open(t, account.PlanFree, 10)
	secret, k := account.NewKey(a.ID, "key_1", h.clock.Now())
	if err := h.accounts.CreateKey(h.ctx, k); err != nil {
		t.Fatal(err)
	}
	if _, err := h.auth.SignIn(h.ctx, "mj_wrong"); problem.CodeOf(err) != problem.CodeUnauthorized {
		t.Fatalf("SignIn with a wrong key: %v", err)
	}
	in, err := h.auth.SignIn(h.ctx, secret)
	if err != nil {
		t.Fatalf("SignIn: %v", err)
	}
	if in.Account.ID != a.ID || in.CSRFToken != account.CSRFToken(in.Token) || in.CSRFToken == in.Token {
		t.Fatalf("SignIn: %+v", in)
	}
	got, sess, err := h.auth.Session(h.ctx, in.Token)
	if err != nil || got.ID != a.ID || sess.KeyID != k.ID {
		t.Fatalf("Session: %v %v %v", got, sess, err)
	}
	for _, bad := range []string{"", "mjs_wrong", secret, in.Token + "x"} {
		if _, _, err := h.auth.Session(h.ctx, bad); problem.CodeOf(err) != problem.CodeUnauthorized {
			t.Errorf("Session(%q): %v, want UNAUTHORIZED", bad, err)
		}
	}

	t.Run("Expires", func(t *testing.T) {
		in, err := h.auth.SignIn(h.ctx, secret)
		if err != nil {
			t.Fatal(err)
		}
		h.clock.Advance(account.SessionTTL)
		if _, _, err := h.auth.Session(h.ctx, in.Token); problem.CodeOf(err) != problem.CodeUnauthorized {
			t.Fatalf("expired session: %v", err)
		}
	})

	t.Run("SignOut", func(t *testing.T) {
		in, err := h.auth.SignIn(h.ctx, secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.auth.SignOut(h.ctx, in.Token); err != nil {
			t.Fatal(err)
		}
		if _, _, err := h.auth.Session(h.ctx, in.Token); problem.CodeOf(err) != problem.CodeUnauthorized {
			t.Fatalf("session after sign-out: %v", err)
		}
	})

	t.Run("RevokingTheKeyEndsIt", func(t *testing.T) {
		in, err := h.auth.SignIn(h.ctx, secret)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.auth.RevokeKey(h.ctx, a, k.ID); err != nil {
			t.Fatal(err)
		}
		if _, _, err := h.auth.Session(h.ctx, in.Token); problem.CodeOf(err) != problem.CodeUnauthorized {
			t.Fatalf("session of a revoked key: %v", err)
		}
		if _, err := h.auth.SignIn(h.ctx, secret); problem.CodeOf(err) != problem.CodeUnauthorized {
			t.Fatalf("SignIn with a revoked key: %v", err)
		}
	})
}

func TestKeys(t *testing.T) {
	t.Parallel()
	h := setup(t)
	a, other := h.open(t, account.PlanFree, 10), h.open(t, account.PlanFree, 10)
	secret, k, err := h.auth.CreateKey(h.ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := h.auth.Authenticate(h.ctx, secret); err != nil || got.ID != a.ID {
		t.Fatalf("the new key does not authenticate: %v", err)
	}
	if _, err := h.auth.RevokeKey(h.ctx, other, k.ID); problem.CodeOf(err) != problem.CodeNotFound {
		t.Fatalf("revoking another account's key: %v, want NOT_FOUND", err)
	}
	if _, err := h.auth.RevokeKey(h.ctx, a, "key_missing"); problem.CodeOf(err) != problem.CodeNotFound {
		t.Fatalf("revoking an unknown key: %v, want NOT_FOUND", err)
	}
	got, err := h.auth.RevokeKey(h.ctx, a, k.ID)
	if err != nil || got.RevokedAt == nil || got.ID != k.ID {
		t.Fatalf("RevokeKey: %+v, %v", got, err)
	}
	if _, err := h.auth.Authenticate(h.ctx, secret); problem.CodeOf(err) != problem.CodeUnauthorized {
		t.Fatalf("a revoked key authenticates: %v", err)
	}
}

// keyBalanceStore is an account store that reads balances with keys, as the SQL store does.
type keyBalanceStore struct {
	account.Store
	ledger billing.Ledger
	reads  int
}

func (s *keyBalanceStore) AccountAndBalanceByKeyHash(ctx context.Context, hash string) (account.Account, account.Key, int64, error) {
	s.reads++
	a, k, err := s.AccountByKeyHash(ctx, hash)
	if err != nil {
		return a, k, 0, err
	}
	b, err := s.ledger.Balance(ctx, a.ID)
	return a, k, b, err
}

// A store that reads the balance with the key saves the submit gate its own read: the principal
// Authenticate returns holds the balance (KeyBalance), and the gate decides by it. Without the
// optional port the principal holds none, and the gate reads the ledger.
func TestAuthenticatedPrincipalCarriesTheBalance(t *testing.T) {
	t.Parallel()
	h := setup(t)
	poor, poorKey := h.Open(t, "", account.PlanFree, 0)
	_, richKey := h.Open(t, "", account.PlanFree, 10)
	withBalances := &keyBalanceStore{Store: h.accounts, ledger: h.ledger}
	auth, err := service.NewAuth(service.AuthPorts{Accounts: withBalances, Clock: h.clock, Balances: withBalances})
	if err != nil {
		t.Fatal(err)
	}
	submit := func(a account.Account) problem.Code {
		_, err := h.submit.Submit(h.ctx, a, jobtype.Request{Type: "test", Params: json.RawMessage(`{}`)})
		if err == nil {
			return ""
		}
		return problem.CodeOf(err)
	}

	rich, err := auth.Authenticate(h.ctx, richKey)
	if err != nil || rich.KeyBalance == nil || *rich.KeyBalance != 10 || withBalances.reads != 1 {
		t.Fatalf("Authenticate: %+v, %v after %d reads; want a balance of 10 after one", rich, err, withBalances.reads)
	}
	// The gate decides by the reading: a reading of 0 refuses a funded account.
	zero := int64(0)
	broke := rich
	broke.KeyBalance = &zero
	if got := submit(broke); got != problem.CodeInsufficientCredits {
		t.Fatalf("submit on a reading of 0: %q, want %q", got, problem.CodeInsufficientCredits)
	}
	if got := submit(rich); got != "" {
		t.Fatalf("submit on the principal's balance: %q", got)
	}
	if _, err := auth.Authenticate(h.ctx, poorKey+"x"); problem.CodeOf(err) != problem.CodeUnauthorized {
		t.Fatalf("a wrong key: %v", err)
	}

	// Without the port the principal carries no balance.
	p, err := h.auth.Authenticate(h.ctx, poorKey)
	if err != nil || p.KeyBalance != nil || p.ID != poor.ID {
		t.Fatalf("a store without balances: %+v %v", p, err)
	}
	if got := submit(p); got != problem.CodeInsufficientCredits {
		t.Fatalf("submit from an unfunded account: %q", got)
	}
}
