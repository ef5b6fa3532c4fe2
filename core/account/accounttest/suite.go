package accounttest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Exercise runs the shared account.Store suite against the store newStore makes. Each call of
// newStore must return an empty store of its own, cleaned up by the adapter's test.
func Exercise(t *testing.T, newStore func(t *testing.T) account.Store) {
	t.Helper()
	// Stores keep UTC microseconds; times here are already that.
	now := time.Date(2026, 11, 22, 10, 0, 0, 123456000, time.UTC)

	type testBundle struct {
		s   account.Store
		ctx context.Context
		acc account.Account
	}
	setup := func(t *testing.T) testBundle {
		t.Helper()
		b := testBundle{s: newStore(t), ctx: context.Background(),
			acc: account.Account{ID: job.NewID("acc"), Plan: account.PlanFree, CreatedAt: now}}
		if err := b.s.CreateAccount(b.ctx, b.acc); err != nil {
			t.Fatalf("CreateAccount: %v", err)
		}
		return b
	}
	newKey := func(t *testing.T, b testBundle, accountID string) (string, account.Key) {
		t.Helper()
		secret, k := account.NewKey(accountID, job.NewID("key"), now)
		if err := b.s.CreateKey(b.ctx, k); err != nil {
			t.Fatalf("CreateKey: %v", err)
		}
		return secret, k
	}

	t.Run("AccountRoundTripAndPlan", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		got, err := b.s.GetAccount(b.ctx, b.acc.ID)
		if err != nil {
			t.Fatalf("GetAccount: %v", err)
		}
		if d := cmp.Diff(b.acc, got); d != "" {
			t.Fatalf("GetAccount (-want +got):\n%s", d)
		}
		if err := b.s.SetPlan(b.ctx, b.acc.ID, account.PlanPro); err != nil {
			t.Fatalf("SetPlan: %v", err)
		}
		got, err = b.s.GetAccount(b.ctx, b.acc.ID)
		if err != nil || got.Plan != account.PlanPro {
			t.Fatalf("after SetPlan: plan %q, %v; want pro", got.Plan, err)
		}
	})

	t.Run("ListAccountsByPlanPaged", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), context.Background()
		var pro []string
		for i := range 5 {
			a := account.Account{ID: fmt.Sprintf("acc_%02d", i), Plan: account.PlanFree, CreatedAt: now}
			if i%2 == 0 {
				a.Plan = account.PlanPro
				pro = append(pro, a.ID)
			}
			if err := s.CreateAccount(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		for after := ""; ; {
			page, err := s.ListAccounts(ctx, account.ListParams{Plan: account.PlanPro, After: after, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range page {
				got = append(got, a.ID)
			}
			if len(page) < 2 {
				break
			}
			after = page[len(page)-1].ID
		}
		if d := cmp.Diff(pro, got); d != "" {
			t.Fatalf("pro accounts (-want +got):\n%s", d)
		}
		all, err := s.ListAccounts(ctx, account.ListParams{Limit: 100})
		if err != nil || len(all) != 5 {
			t.Fatalf("all accounts: %d, %v; want 5", len(all), err)
		}
	})

	t.Run("MissingAndDuplicate", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		if _, err := b.s.GetAccount(b.ctx, "acc_missing"); !errors.Is(err, problem.ErrNotFound) {
			t.Errorf("GetAccount of a missing account: got %v, want ErrNotFound", err)
		}
		if err := b.s.SetPlan(b.ctx, "acc_missing", account.PlanPro); !errors.Is(err, problem.ErrNotFound) {
			t.Errorf("SetPlan of a missing account: got %v, want ErrNotFound", err)
		}
		if err := b.s.CreateAccount(b.ctx, account.Account{ID: b.acc.ID, Plan: account.PlanPro, CreatedAt: now}); !errors.Is(err, problem.ErrConflict) {
			t.Errorf("CreateAccount with a taken ID: got %v, want ErrConflict", err)
		}
		_, k := newKey(t, b, b.acc.ID)
		dupID := k
		dupID.Hash = account.HashSecret("mj_other")
		if err := b.s.CreateKey(b.ctx, dupID); !errors.Is(err, problem.ErrConflict) {
			t.Errorf("CreateKey with a taken ID: got %v, want ErrConflict", err)
		}
		dupHash := k
		dupHash.ID = job.NewID("key")
		if err := b.s.CreateKey(b.ctx, dupHash); !errors.Is(err, problem.ErrConflict) {
			t.Errorf("CreateKey with a taken hash: got %v, want ErrConflict", err)
		}
		_, orphan := account.NewKey("acc_missing", job.NewID("key"), now)
		if err := b.s.CreateKey(b.ctx, orphan); !errors.Is(err, problem.ErrNotFound) {
			t.Errorf("CreateKey for a missing account: got %v, want ErrNotFound", err)
		}
	})

	t.Run("KeyLookupByHash", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		secret, k := newKey(t, b, b.acc.ID)
		gotAcc, gotKey, err := b.s.AccountByKeyHash(b.ctx, account.HashSecret(secret))
		if err != nil {
			t.Fatalf("AccountByKeyHash: %v", err)
		}
		if d := cmp.Diff(b.acc, gotAcc); d != "" {
			t.Errorf("account (-want +got):\n%s", d)
		}
		if d := cmp.Diff(k, gotKey); d != "" {
			t.Errorf("key (-want +got):\n%s", d)
		}
		if _, _, err := b.s.AccountByKeyHash(b.ctx, account.HashSecret("mj_unknown")); !errors.Is(err, problem.ErrNotFound) {
			t.Errorf("unknown hash: got %v, want ErrNotFound", err)
		}
	})

	t.Run("Revoke", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		other := account.Account{ID: job.NewID("acc"), Plan: account.PlanPro, CreatedAt: now}
		if err := b.s.CreateAccount(b.ctx, other); err != nil {
			t.Fatal(err)
		}
		secret, k := newKey(t, b, b.acc.ID)
		keep, _ := newKey(t, b, b.acc.ID)

		tests := []struct {
			name, account, key string
		}{
			{"unknown key", b.acc.ID, "key_missing"},
			{"another account's key", other.ID, k.ID},
		}
		for _, tt := range tests {
			if err := b.s.RevokeKey(b.ctx, tt.account, tt.key, now); !errors.Is(err, problem.ErrNotFound) {
				t.Errorf("RevokeKey of %s: got %v, want ErrNotFound", tt.name, err)
			}
		}
		if _, _, err := b.s.AccountByKeyHash(b.ctx, k.Hash); err != nil {
			t.Fatalf("a refused revoke revoked the key: %v", err)
		}
		if err := b.s.RevokeKey(b.ctx, b.acc.ID, k.ID, now.Add(time.Minute)); err != nil {
			t.Fatalf("RevokeKey: %v", err)
		}
		if err := b.s.RevokeKey(b.ctx, b.acc.ID, k.ID, now.Add(2*time.Minute)); err != nil {
			t.Fatalf("RevokeKey again: got %v, want nil (revoking is idempotent)", err)
		}
		if _, _, err := b.s.AccountByKeyHash(b.ctx, account.HashSecret(secret)); !errors.Is(err, problem.ErrNotFound) {
			t.Fatalf("revoked key: got %v, want ErrNotFound", err)
		}
		if _, _, err := b.s.AccountByKeyHash(b.ctx, account.HashSecret(keep)); err != nil {
			t.Fatalf("revoking one key revoked another: %v", err)
		}
	})
}
