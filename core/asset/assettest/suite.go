package assettest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/asset"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Exercise runs the shared asset.Store suite against the store newStore makes. Each call of
// newStore must return an empty store of its own, cleaned up by the adapter's test.
func Exercise(t *testing.T, newStore func(t *testing.T) asset.Store) {
	t.Helper()
	// Stores keep UTC microseconds; times here are already that.
	now := time.Date(2026, 11, 22, 10, 0, 0, 654321000, time.UTC)

	t.Run("RoundTrip", func(t *testing.T) {
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
	})

	t.Run("MissingAndDuplicate", func(t *testing.T) {
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
	})
}
