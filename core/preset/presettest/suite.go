package presettest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/preset"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Constructor returns an empty store of its own on each call.
type Constructor func(t *testing.T) preset.Store

// TestStore runs every test of the suite.
func TestStore(t *testing.T, open Constructor) {
	t.Helper()
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, Constructor)
	}{
		{"CreateAndGet", TestCreateAndGet},
		{"CreateTakenName", TestCreateTakenName},
		{"ListByAccount", TestListByAccount},
		{"UpdateBumpsVersion", TestUpdateBumpsVersion},
		{"UpdateStaleVersion", TestUpdateStaleVersion},
		{"Delete", TestDelete},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open)
		})
	}
}

var now = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

func sample(account, name string) *preset.Preset {
	lo, hi := 144.0, 2160.0
	return &preset.Preset{
		AccountID: account, Name: name, Description: "a test preset",
		Steps: []string{"ffmpeg -i in.mp4 -vf scale=-2:{{height}} a.mp4", "ffmpeg -i a.mp4 -c copy b.mkv"},
		Keep:  []string{"a.mp4"},
		Variables: map[string]preset.Variable{
			"height": {Type: preset.Integer, Min: &lo, Max: &hi, Default: json.RawMessage("720"), Description: "height"},
			"codec":  {Type: preset.Enum, Values: []string{"libx264", "libx265"}},
			"text":   {Type: preset.String, MaxLength: 100},
		},
		Inputs:    []string{"in.mp4"},
		CreatedAt: now, UpdatedAt: now,
	}
}

func diff(t *testing.T, want, got *preset.Preset) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("preset differs (-want +got):\n%s", d)
	}
}

// TestCreateAndGet: a preset reads back as saved, at version 1, for its account only.
func TestCreateAndGet(t *testing.T, open Constructor) {
	ctx, s := context.Background(), open(t)
	p := sample("acct_1", "web")
	if err := s.CreatePreset(ctx, p); err != nil {
		t.Fatal(err)
	}
	if p.Version != 1 {
		t.Errorf("version %d after Create, want 1", p.Version)
	}
	got, err := s.GetPreset(ctx, "acct_1", "web")
	if err != nil {
		t.Fatal(err)
	}
	diff(t, p, got)
	if _, err := s.GetPreset(ctx, "acct_2", "web"); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("another account's Get: %v, want ErrNotFound", err)
	}
}

// TestCreateTakenName: a name is the account's once; another account may take it.
func TestCreateTakenName(t *testing.T, open Constructor) {
	ctx, s := context.Background(), open(t)
	if err := s.CreatePreset(ctx, sample("acct_1", "web")); err != nil {
		t.Fatal(err)
	}
	if err := s.CreatePreset(ctx, sample("acct_1", "web")); !errors.Is(err, problem.ErrConflict) {
		t.Errorf("second Create: %v, want ErrConflict", err)
	}
	if err := s.CreatePreset(ctx, sample("acct_2", "web")); err != nil {
		t.Errorf("another account's Create: %v", err)
	}
}

// TestListByAccount: an account lists its own presets by name.
func TestListByAccount(t *testing.T, open Constructor) {
	ctx, s := context.Background(), open(t)
	for _, k := range [][2]string{{"acct_1", "b"}, {"acct_2", "x"}, {"acct_1", "a"}} {
		if err := s.CreatePreset(ctx, sample(k[0], k[1])); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ListPresets(ctx, "acct_1")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range got {
		names = append(names, p.Name)
	}
	if d := cmp.Diff([]string{"a", "b"}, names); d != "" {
		t.Errorf("names (-want +got):\n%s", d)
	}
	if got, err := s.ListPresets(ctx, "acct_3"); err != nil || got == nil || len(got) != 0 {
		t.Errorf("an account without presets: %v, %v; want an empty list", got, err)
	}
}

// TestUpdateBumpsVersion: each update stores the new definition one version up, keeping
// the creation time.
func TestUpdateBumpsVersion(t *testing.T, open Constructor) {
	ctx, s := context.Background(), open(t)
	if err := s.CreatePreset(ctx, sample("acct_1", "web")); err != nil {
		t.Fatal(err)
	}
	for v := 1; v <= 2; v++ {
		p := sample("acct_1", "web")
		p.Steps, p.Keep, p.Command = nil, nil, "ffmpeg -i in.mp4 -crf {{crf}} out.mp4"
		p.UpdatedAt = now.Add(time.Duration(v) * time.Hour)
		p.CreatedAt = time.Time{}
		if err := s.UpdatePreset(ctx, p, v); err != nil {
			t.Fatal(err)
		}
		if p.Version != v+1 || !p.CreatedAt.Equal(now) {
			t.Errorf("after Update at %d: version %d created %v, want %d and %v", v, p.Version, p.CreatedAt, v+1, now)
		}
		got, err := s.GetPreset(ctx, "acct_1", "web")
		if err != nil {
			t.Fatal(err)
		}
		diff(t, p, got)
	}
	if err := s.UpdatePreset(ctx, sample("acct_1", "none"), 1); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("Update of a missing preset: %v, want ErrNotFound", err)
	}
}

// TestUpdateStaleVersion: an update from a version other than the stored one changes nothing.
func TestUpdateStaleVersion(t *testing.T, open Constructor) {
	ctx, s := context.Background(), open(t)
	if err := s.CreatePreset(ctx, sample("acct_1", "web")); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdatePreset(ctx, sample("acct_1", "web"), 1); err != nil {
		t.Fatal(err)
	}
	stale := sample("acct_1", "web")
	stale.Description = "stale"
	if err := s.UpdatePreset(ctx, stale, 1); !errors.Is(err, problem.ErrConflict) {
		t.Fatalf("stale Update: %v, want ErrConflict", err)
	}
	got, err := s.GetPreset(ctx, "acct_1", "web")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 2 || got.Description == "stale" {
		t.Errorf("after a stale update: version %d, description %q", got.Version, got.Description)
	}
}

// TestDelete: a deleted preset is gone, its name free again; another account's is untouched.
func TestDelete(t *testing.T, open Constructor) {
	ctx, s := context.Background(), open(t)
	for _, a := range []string{"acct_1", "acct_2"} {
		if err := s.CreatePreset(ctx, sample(a, "web")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeletePreset(ctx, "acct_1", "web"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetPreset(ctx, "acct_1", "web"); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("Get after Delete: %v, want ErrNotFound", err)
	}
	if err := s.DeletePreset(ctx, "acct_1", "web"); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("second Delete: %v, want ErrNotFound", err)
	}
	if _, err := s.GetPreset(ctx, "acct_2", "web"); err != nil {
		t.Errorf("another account's preset: %v", err)
	}
	if err := s.CreatePreset(ctx, sample("acct_1", "web")); err != nil {
		t.Errorf("Create after Delete: %v", err)
	}
}
