package sandbox

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestChownTreeStaysInside: handing a work directory to the sandbox's user never reaches out of
// it, even when a subdirectory is swapped for a link to a host directory between the walk's
// listing and its descent, as a process in a sandbox with the directory bound could do. The
// walk then fails, and the host directory's file keeps its owner. A link the directory already
// holds is handed over itself, not followed. Run as root (CI is), as the worker that chowns is.
func TestChownTreeStaysInside(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatal("needs root, as the worker that hands work directories over does (make test runs as root)")
	}
	const uid, gid = 65534, 65534
	owner := func(path string) uint32 {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Lstat(path, &st); err != nil {
			t.Fatal(err)
		}
		return st.Uid
	}
	base := t.TempDir()
	host := filepath.Join(base, "host")
	if err := os.Mkdir(host, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(host, "secret")
	if err := os.WriteFile(secret, []byte("host file"), 0o600); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(base, "work")
	for _, d := range []string{work, filepath.Join(work, "d")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "d", "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(host, filepath.Join(work, "link")); err != nil {
		t.Fatal(err)
	}

	// The link is handed over itself and not followed.
	if err := ChownTree(work, uid, gid); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{work, filepath.Join(work, "d", "f"), filepath.Join(work, "link")} {
		if got := owner(p); got != uid {
			t.Errorf("%s belongs to %d after the walk; want %d", p, got, uid)
		}
	}
	if got := owner(secret); got != 0 {
		t.Fatalf("the host file behind a link belongs to %d; want 0", got)
	}

	// d is swapped for a link to the host directory once the walk has listed and handed it over.
	err := chownWalk(work, uid, gid, func(name string) {
		if name != "d" {
			return
		}
		if err := os.RemoveAll(filepath.Join(work, "d")); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(host, filepath.Join(work, "d")); err != nil {
			t.Error(err)
		}
	})
	if err == nil {
		t.Error("the walk went on through a directory swapped for a link out of the work directory")
	}
	if got := owner(secret); got != 0 {
		t.Errorf("the walk handed the host file behind the swapped directory to %d", got)
	}
}
