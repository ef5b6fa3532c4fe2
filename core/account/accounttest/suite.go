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
	"github.com/mediajobs/mediajobs/core/porttest"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Features says what an account.Store adapter can do. Every adapter (memory, SQLite, PostgreSQL)
// does all the suite asks, so it has no field yet: a new adapter passes every test, and a field
// is added here only when a real adapter cannot do something the others can.
type Features struct{}

// Constructor returns an empty store of its own, cleaned up by the adapter's test.
type Constructor func(t *testing.T) account.Store

// TestStore runs the shared account.Store suite: each test below, in parallel, against stores that
// newStore makes. An adapter's own test calls it once per backend.
func TestStore(t *testing.T, f Features, newStore Constructor) {
	t.Helper()
	tests := []func(t *testing.T, f Features, newStore Constructor){
		TestAccountRoundTripAndPlan,
		TestListAccountsByPlanPaged,
		TestMissingAndDuplicate,
		TestKeyLookupByHash,
		TestRevoke,
		TestListKeysAndTouch,
		TestSessions,
		TestDeleteExpiredSessions,
	}
	porttest.Run(t, f, newStore, tests...)
}

// now is the time the suite's accounts, keys and sessions are made at. Stores keep UTC
// microseconds; it is already that.
var now = time.Date(2026, 11, 22, 10, 0, 0, 123456000, time.UTC)

type testBundle struct {
	s   account.Store
	ctx context.Context
	acc account.Account
}

// setup is a new store holding one free account.
func setup(t *testing.T, newStore Constructor) testBundle {
	t.Helper()
	b := testBundle{s: newStore(t), ctx: context.Background(),
		acc: account.Account{ID: job.NewID("acc"), Plan: account.PlanFree, CreatedAt: now}}
	if err := b.s.CreateAccount(b.ctx, b.acc); err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}
	return b
}

func newKey(t *testing.T, b testBundle, accountID string) (string, account.Key) {
	t.Helper()
	secret, k := account.NewKey(accountID, job.NewID("key"), now)
	if err := b.s.CreateKey(b.ctx, k); err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	return secret, k
}

// TestAccountRoundTripAndPlan: a created account reads back as written, and SetPlan changes its
// plan.
func TestAccountRoundTripAndPlan(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	b := setup(t, newStore)
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
}

// TestListAccountsByPlanPaged: ListAccounts pages through the accounts of one plan by ID, or lists
// them all.
func TestListAccountsByPlanPaged(t *testing.T, f Features, newStore Constructor) {
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
}

// TestMissingAndDuplicate: a missing account is problem.ErrNotFound; a taken account ID, key ID or
// key hash is problem.ErrConflict; a key of a missing account is not found.
func TestMissingAndDuplicate(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	b := setup(t, newStore)
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
}

// TestKeyLookupByHash: AccountByKeyHash finds a key's account by the hash of its secret, and
// nothing by another hash.
func TestKeyLookupByHash(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	b := setup(t, newStore)
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
}

// TestRevoke: RevokeKey refuses an unknown key or another account's, is idempotent, and ends the
// lookup of that key alone.
func TestRevoke(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	b := setup(t, newStore)
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
}

// TestListKeysAndTouch: ListKeys lists an account's keys, newest first, revoked ones with when, and
// when each was last used; TouchKey moves that forward, never back.
func TestListKeysAndTouch(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	b := setup(t, newStore)
	other := account.Account{ID: job.NewID("acc"), Plan: account.PlanFree, CreatedAt: now}
	if err := b.s.CreateAccount(b.ctx, other); err != nil {
		t.Fatal(err)
	}
	_, old := newKey(t, b, b.acc.ID)
	_, theirs := newKey(t, b, other.ID)
	_, young := account.NewKey(b.acc.ID, job.NewID("key"), now.Add(time.Second))
	if err := b.s.CreateKey(b.ctx, young); err != nil {
		t.Fatal(err)
	}
	if err := b.s.RevokeKey(b.ctx, b.acc.ID, old.ID, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	used := now.Add(2 * time.Minute)
	if err := b.s.TouchKey(b.ctx, young.ID, used); err != nil {
		t.Fatalf("TouchKey: %v", err)
	}
	// An earlier time, as a slower replica may send, does not move it back.
	if err := b.s.TouchKey(b.ctx, young.ID, now); err != nil {
		t.Fatalf("TouchKey earlier: %v", err)
	}
	if err := b.s.TouchKey(b.ctx, "key_missing", now); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("TouchKey of an unknown key: got %v, want ErrNotFound", err)
	}
	got, err := b.s.ListKeys(b.ctx, b.acc.ID)
	if err != nil {
		t.Fatalf("ListKeys: %v", err)
	}
	revoked := now.Add(time.Hour)
	old.RevokedAt = &revoked
	young.LastUsedAt = &used
	if d := cmp.Diff([]account.Key{young, old}, got); d != "" {
		t.Errorf("ListKeys, newest first (-want +got):\n%s", d)
	}
	_, k, err := b.s.AccountByKeyHash(b.ctx, young.Hash)
	if err != nil || k.LastUsedAt == nil || !k.LastUsedAt.Equal(used) {
		t.Errorf("AccountByKeyHash after TouchKey: last used %v, %v; want %v", k.LastUsedAt, err, used)
	}
	if got, err := b.s.ListKeys(b.ctx, other.ID); err != nil || len(got) != 1 || got[0].ID != theirs.ID {
		t.Errorf("ListKeys of the other account: %v, %v; want only %s", got, err, theirs.ID)
	}
	if got, err := b.s.ListKeys(b.ctx, "acc_missing"); err != nil || len(got) != 0 {
		t.Errorf("ListKeys of an unknown account: %v, %v; want none", got, err)
	}
}

// TestSessions: a session is created once, for a known key, found by its hash with its account,
// ended by its key's revocation or DeleteSession, and no other.
func TestSessions(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	b := setup(t, newStore)
	_, k := newKey(t, b, b.acc.ID)
	_, k2 := newKey(t, b, b.acc.ID)
	token, sess := account.NewSession(k, job.NewID("ses"), now)
	if err := b.s.CreateSession(b.ctx, sess); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	if err := b.s.CreateSession(b.ctx, sess); !errors.Is(err, problem.ErrConflict) {
		t.Errorf("CreateSession twice: got %v, want ErrConflict", err)
	}
	_, orphan := account.NewSession(account.Key{ID: "key_missing", AccountID: b.acc.ID}, job.NewID("ses"), now)
	if err := b.s.CreateSession(b.ctx, orphan); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("CreateSession of an unknown key: got %v, want ErrNotFound", err)
	}
	gotAcc, got, err := b.s.SessionByHash(b.ctx, account.HashSecret(token))
	if err != nil {
		t.Fatalf("SessionByHash: %v", err)
	}
	if d := cmp.Diff(sess, got); d != "" {
		t.Errorf("session (-want +got):\n%s", d)
	}
	if d := cmp.Diff(b.acc, gotAcc); d != "" {
		t.Errorf("session's account (-want +got):\n%s", d)
	}
	if _, _, err := b.s.SessionByHash(b.ctx, account.HashSecret("mjs_unknown")); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("unknown session: got %v, want ErrNotFound", err)
	}

	// Another session, of another key, outlives the revocation of the first key.
	token2, sess2 := account.NewSession(k2, job.NewID("ses"), now)
	if err := b.s.CreateSession(b.ctx, sess2); err != nil {
		t.Fatal(err)
	}
	if err := b.s.RevokeKey(b.ctx, b.acc.ID, k.ID, now); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.s.SessionByHash(b.ctx, account.HashSecret(token)); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("session of a revoked key: got %v, want ErrNotFound", err)
	}
	if _, _, err := b.s.SessionByHash(b.ctx, account.HashSecret(token2)); err != nil {
		t.Errorf("session of a live key after another key's revocation: %v", err)
	}
	if err := b.s.DeleteSession(b.ctx, sess2.Hash); err != nil {
		t.Fatalf("DeleteSession: %v", err)
	}
	if err := b.s.DeleteSession(b.ctx, sess2.Hash); err != nil {
		t.Errorf("DeleteSession twice: %v, want nil", err)
	}
	if _, _, err := b.s.SessionByHash(b.ctx, sess2.Hash); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("deleted session: got %v, want ErrNotFound", err)
	}
}

// TestDeleteExpiredSessions: DeleteExpiredSessions deletes the sessions past their expiry, counts
// them, and keeps the others.
func TestDeleteExpiredSessions(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	b := setup(t, newStore)
	_, k := newKey(t, b, b.acc.ID)
	_, old := account.NewSession(k, job.NewID("ses"), now)
	_, fresh := account.NewSession(k, job.NewID("ses"), now.Add(time.Hour))
	for _, s := range []account.Session{old, fresh} {
		if err := b.s.CreateSession(b.ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	n, err := b.s.DeleteExpiredSessions(b.ctx, old.ExpiresAt.Add(time.Second))
	if err != nil || n != 1 {
		t.Fatalf("DeleteExpiredSessions: %d, %v; want 1", n, err)
	}
	if _, _, err := b.s.SessionByHash(b.ctx, old.Hash); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("expired session: got %v, want ErrNotFound", err)
	}
	if _, _, err := b.s.SessionByHash(b.ctx, fresh.Hash); err != nil {
		t.Errorf("live session: %v", err)
	}
}
