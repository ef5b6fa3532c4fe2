package mediajobs

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/adapters/sandbox"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

func TestWorkRoot(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		testenv.Missing(t, "root (the sandbox user differs from the caller only then)", nil)
	}
	sb, err := sandbox.New(sandbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	base := t.TempDir()
	open := filepath.Join(base, "open", "data")
	closed := filepath.Join(base, "closed", "data")
	for _, d := range []string{open, closed} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{filepath.Dir(base), base, filepath.Dir(open)} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Dir(closed), 0o700); err != nil { // like /root
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cfg     Config
		want    string // exact path, or a prefix ending in "*"
		wantErr string
	}{
		{"data reachable", Config{Data: open}, filepath.Join(open, "work"), ""},
		{"data in a private parent", Config{Data: closed}, "/var/tmp/mediajobs-*", ""},
		{"explicit work dir", Config{Data: closed, WorkDir: filepath.Join(open, "jobs")}, filepath.Join(open, "jobs"), ""},
		{"explicit unreachable", Config{Data: open, WorkDir: filepath.Join(closed, "jobs")}, "", "work-dir"},
		{"a worker with neither", Config{}, "", "--work-dir"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := workRoot(sb, tc.cfg.Data, tc.cfg.WorkDir, log)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p, ok := strings.CutSuffix(tc.want, "*"); ok {
				if !strings.HasPrefix(got, p) {
					t.Fatalf("work root %s, want under %s", got, p)
				}
				return
			}
			if got != tc.want {
				t.Fatalf("work root %s, want %s", got, tc.want)
			}
		})
	}
}
