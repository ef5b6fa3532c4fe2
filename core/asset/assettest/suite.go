package assettest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/asset"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/porttest"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Features says what an asset.Store adapter can do. Every adapter (memory, SQLite, PostgreSQL)
// does all the suite asks, so it has no field yet: a new adapter passes every test, and a field
// is added here only when a real adapter cannot do something the others can.
type Features struct{}

// Constructor returns an empty store of its own, cleaned up by the adapter's test.
type Constructor func(t *testing.T) asset.Store

// TestStore runs the shared asset.Store suite: each test below, in parallel, against stores that
// newStore makes. An adapter's own test calls it once per backend.
func TestStore(t *testing.T, f Features, newStore Constructor) {
	t.Helper()
	tests := []func(t *testing.T, f Features, newStore Constructor){
		TestRoundTrip,
		TestMissingAndDuplicate,
		TestFindBySHA256,
	}
	porttest.Run(t, f, newStore, tests...)
}

// now is the time the suite's assets are made at. Stores keep UTC microseconds; it is already
// that.
var now = time.Date(2026, 11, 22, 10, 0, 0, 654321000, time.UTC)

// TestRoundTrip: a created asset reads back as written, a size past 4 GiB and a name with quotes
// and accents included.
func TestRoundTrip(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	tests := []asset.Asset{
		{ID: job.NewID("ast"), AccountID: "acc_1", Name: "talk.mp4", ContentType: "video/mp4", Size: 5 << 30, CreatedAt: now},
		{ID: job.NewID("ast"), AccountID: "acc_1", Name: "l'été \"quoted\".srt", ContentType: "application/x-subrip", Size: 0, CreatedAt: now},
	}
	for _, want := range tests {
		if err := s.CreateAsset(ctx, want); err != nil {
			t.Fatalf("CreateAsset(%s): %v", want.Name, err)
		}
		got, err := s.GetAsset(ctx, want.ID)
		if err != nil {
			t.Fatalf("GetAsset(%s): %v", want.Name, err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("GetAsset(%s) (-want +got):\n%s", want.Name, d)
		}
	}
}

// TestMissingAndDuplicate: an asset whose ID is taken is refused with problem.ErrConflict, and a
// missing one is problem.ErrNotFound.
func TestMissingAndDuplicate(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	a := asset.Asset{ID: job.NewID("ast"), AccountID: "acc_1", Name: "a.wav", ContentType: "audio/wav", Size: 44, CreatedAt: now}
	if err := s.CreateAsset(ctx, a); err != nil {
		t.Fatal(err)
	}
	dup := a
	dup.Name = "other.wav"
	if err := s.CreateAsset(ctx, dup); !errors.Is(err, problem.ErrConflict) {
		t.Errorf("CreateAsset with a taken ID: got %v, want ErrConflict", err)
	}
	if _, err := s.GetAsset(ctx, "ast_missing"); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("GetAsset of a missing asset: got %v, want ErrNotFound", err)
	}
}

// TestFindBySHA256: FindAssetsBySHA256 finds an account's uploads of a hash, newest first, and no
// other account's, other hash's or unhashed upload.
func TestFindBySHA256(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	const (
		sum   = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
		other = "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"
	)
	older := asset.Asset{ID: job.NewID("ast"), AccountID: "acc_1", Name: "a.mp4", ContentType: "video/mp4", Size: 4, SHA256: sum, CreatedAt: now}
	newer := asset.Asset{ID: job.NewID("ast"), AccountID: "acc_1", Name: "b.mp4", ContentType: "video/mp4", Size: 4, SHA256: sum, CreatedAt: now.Add(time.Second)}
	for _, a := range []asset.Asset{
		older, newer,
		{ID: job.NewID("ast"), AccountID: "acc_2", Name: "a.mp4", ContentType: "video/mp4", Size: 4, SHA256: sum, CreatedAt: now},
		{ID: job.NewID("ast"), AccountID: "acc_1", Name: "c.mp4", ContentType: "video/mp4", Size: 4, SHA256: other, CreatedAt: now},
		{ID: job.NewID("ast"), AccountID: "acc_1", Name: "unhashed.mp4", ContentType: "video/mp4", Size: 4, CreatedAt: now},
	} {
		if err := s.CreateAsset(ctx, a); err != nil {
			t.Fatalf("CreateAsset(%s): %v", a.Name, err)
		}
	}
	tests := []struct {
		name, account, sum string
		want               []asset.Asset
	}{
		{name: "the account's, newest first", account: "acc_1", sum: sum, want: []asset.Asset{newer, older}},
		{name: "no other account's", account: "acc_3", sum: sum, want: []asset.Asset{}},
		{name: "no match", account: "acc_1", sum: "0000000000000000000000000000000000000000000000000000000000000000", want: []asset.Asset{}},
		{name: "an empty hash finds no unhashed upload", account: "acc_1", sum: "", want: []asset.Asset{}},
	}
	for _, tt := range tests {
		got, err := s.FindAssetsBySHA256(ctx, tt.account, tt.sum)
		if err != nil {
			t.Fatalf("%s: FindAssetsBySHA256: %v", tt.name, err)
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%s: FindAssetsBySHA256(%s, %q) (-want +got):\n%s", tt.name, tt.account, tt.sum, d)
		}
	}
}
