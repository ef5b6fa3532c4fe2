package workdir_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mediajobs/mediajobs/adapters/workdir"
)

func inode(t *testing.T, dir string) uint64 {
	t.Helper()
	st, err := os.Lstat(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Ino
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestKeepsAnEmptiedDirectory: a directory given back comes back empty, 0700, under a new name
// with the caller's prefix, and is the same directory (no new inode).
func TestKeepsAnEmptiedDirectory(t *testing.T) {
	root := t.TempDir()
	d := workdir.New(root, 1)
	t.Cleanup(func() { d.Close() })
	first, err := d.Make("job1-")
	if err != nil {
		t.Fatal(err)
	}
	// What a job leaves: files, a tree, a symlink out, a changed mode.
	if err := os.WriteFile(filepath.Join(first, "out.mp4"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(first, "a", "b"), 0o700); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "keep")
	if err := os.WriteFile(outside, []byte("host"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(first, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(first, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	ino := inode(t, first)
	if err := d.Remove(first); err != nil {
		t.Fatal(err)
	}
	second, err := d.Make("job2-")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(first); !os.IsNotExist(err) {
		t.Errorf("%s is still there under its old name after the next Make: %v", first, err)
	}
	if !strings.HasPrefix(filepath.Base(second), "job2-") || filepath.Dir(second) != root {
		t.Errorf("Make gave %s, want a job2- directory under %s", second, root)
	}
	if got := inode(t, second); got != ino {
		t.Errorf("the second directory is inode %d, want the kept %d", got, ino)
	}
	if names := entries(t, second); len(names) != 0 {
		t.Errorf("the kept directory holds %v", names)
	}
	st, _ := os.Lstat(second)
	if st.Mode() != os.ModeDir|0o700 {
		t.Errorf("the kept directory's mode is %v, want drwx------", st.Mode())
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "host" {
		t.Errorf("emptying followed the symlink: %q, %v", b, err)
	}
	if names := entries(t, root); len(names) != 1 {
		t.Errorf("the root holds %v, want the one directory", names)
	}
}

// TestRemovesWhatItCannotKeep: beyond keep, after Close, with an extended attribute set, or when
// it is not one of its own, a directory given back is removed.
func TestRemovesWhatItCannotKeep(t *testing.T) {
	for _, tc := range []struct {
		name  string
		keep  int
		setup func(t *testing.T, d *workdir.Dirs, dir string) string
	}{
		{"keep 0", 0, nil},
		{"after Close", 2, func(t *testing.T, d *workdir.Dirs, dir string) string { d.Close(); return dir }},
		{"beyond keep", 1, func(t *testing.T, d *workdir.Dirs, dir string) string {
			other, err := d.Make("other-")
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Remove(other); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(other); err != nil {
				t.Fatalf("the first given back was not kept: %v", err)
			}
			return dir
		}},
		{"an attribute a job set", 2, func(t *testing.T, d *workdir.Dirs, dir string) string {
			if err := unix.Setxattr(dir, "user.mark", []byte("x"), 0); err != nil {
				t.Fatal(err)
			}
			return dir
		}},
		{"an inode flag a job set", 2, func(t *testing.T, d *workdir.Dirs, dir string) string {
			// chattr +S (FS_SYNC_FL, 0x8): every write of the next job's files would be synchronous.
			fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
			if err != nil {
				t.Fatal(err)
			}
			if err := unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags|0x8)); err != nil {
				t.Fatal(err)
			}
			return dir
		}},
		{"not a directory of its root", 2, func(t *testing.T, d *workdir.Dirs, dir string) string {
			inner := filepath.Join(dir, "inner")
			if err := os.Mkdir(inner, 0o700); err != nil {
				t.Fatal(err)
			}
			return inner
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			d := workdir.New(root, tc.keep)
			t.Cleanup(func() { d.Close() })
			dir, err := d.Make("job-")
			if err != nil {
				t.Fatal(err)
			}
			if tc.setup != nil {
				dir = tc.setup(t, d, dir)
			}
			if err := d.Remove(dir); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(dir); !os.IsNotExist(err) {
				t.Errorf("%s was kept: %v", dir, err)
			}
		})
	}
}

// TestCloseRemovesTheKept: nothing is left under the root after Close.
func TestCloseRemovesTheKept(t *testing.T) {
	root := t.TempDir()
	d := workdir.New(root, 4)
	var dirs []string
	for range 4 {
		dir, err := d.Make("job-")
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	for _, dir := range dirs {
		if err := d.Remove(dir); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(entries(t, root)); n != 4 {
		t.Fatalf("%d kept, want 4", n)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if names := entries(t, root); len(names) != 0 {
		t.Errorf("left after Close: %v", names)
	}
}

// TestConcurrentUseGivesEachItsOwn: directories made at once are distinct and empty.
func TestConcurrentUseGivesEachItsOwn(t *testing.T) {
	root := t.TempDir()
	d := workdir.New(root, 3)
	t.Cleanup(func() { d.Close() })
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for i := range 50 {
				dir, err := d.Make("job-")
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[dir] {
					t.Errorf("%s handed out twice at once", dir)
				}
				seen[dir] = true
				mu.Unlock()
				if names := entries(t, dir); len(names) != 0 {
					t.Errorf("%s handed out holding %v", dir, names)
				}
				if err := os.WriteFile(filepath.Join(dir, "f"), []byte{byte(g), byte(i)}, 0o600); err != nil {
					t.Error(err)
				}
				mu.Lock()
				delete(seen, dir)
				mu.Unlock()
				if err := d.Remove(dir); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if n := len(entries(t, root)); n > 3 {
		t.Errorf("%d directories under the root, want at most the 3 kept", n)
	}
}
