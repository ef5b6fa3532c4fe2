package workcap

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// modes runs each test with inotify and with the polling fallback, which must behave alike.
var modes = []struct {
	name    string
	inotify bool
}{{"inotify", true}, {"poll", false}}

type testBundle struct {
	dir     string
	w       *Watcher
	stopped chan struct{}
}

func setup(t *testing.T, caps Caps, inotify bool, prepare func(dir string)) testBundle {
	t.Helper()
	b := testBundle{dir: t.TempDir(), stopped: make(chan struct{})}
	if prepare != nil {
		prepare(b.dir)
	}
	w, err := watch(b.dir, caps, func() { close(b.stopped) }, inotify)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	b.w = w
	return b
}

func (b testBundle) isStopped() bool {
	select {
	case <-b.stopped:
		return true
	default:
		return false
	}
}

// waitStopped waits for the stop callback, failing after a deadline far above any real delay.
func (b testBundle) waitStopped(t *testing.T) {
	t.Helper()
	select {
	case <-b.stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("stop was not called")
	}
}

func TestBytesCap(t *testing.T) {
	t.Parallel()
	const limit = 8 << 20
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, Caps{Bytes: limit}, m.inotify, nil)
			f, err := os.Create(filepath.Join(b.dir, "out.bin"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			chunk := bytes.Repeat([]byte{1}, 32<<10)
			var written int64
			for !b.isStopped() && written < 64*limit {
				n, err := f.Write(chunk)
				if err != nil {
					t.Fatal(err)
				}
				written += int64(n)
			}
			b.waitStopped(t)

			exc, err := b.w.Close()
			if err != nil {
				t.Fatal(err)
			}
			if exc == nil || exc.Limit != JobBytes || exc.Max != limit || exc.Seen <= limit {
				t.Fatalf("Exceeded = %+v, want job_bytes past %d", exc, limit)
			}
			t.Logf("%s: stopped %d bytes past the %d cap (a writer that checks between 32 KiB writes)", m.name, written-limit, limit)
		})
	}
}

func TestFilesCap(t *testing.T) {
	t.Parallel()
	const limit = 100
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, Caps{Files: limit}, m.inotify, nil)
			made := 0
			for ; !b.isStopped() && made < 100*limit; made++ {
				if err := os.WriteFile(filepath.Join(b.dir, fmt.Sprintf("f%05d", made)), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			b.waitStopped(t)

			exc, err := b.w.Close()
			if err != nil {
				t.Fatal(err)
			}
			if exc == nil || exc.Limit != JobFiles || exc.Max != limit || exc.Seen <= limit {
				t.Fatalf("Exceeded = %+v, want job_files past %d", exc, limit)
			}
			t.Logf("%s: stopped %d files past the %d cap", m.name, made-limit, limit)
		})
	}
}

// TestWithinCaps: what was there at the start is not the run's, deletions give room back, and
// nested directories are followed.
func TestWithinCaps(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			staged := func(dir string) {
				if err := os.WriteFile(filepath.Join(dir, "input.bin"), make([]byte, 4<<20), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			b := setup(t, Caps{Bytes: 1 << 20, Files: 4}, m.inotify, staged)
			nested := filepath.Join(b.dir, "a", "b")
			if err := os.MkdirAll(nested, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(nested, "tmp.bin"), make([]byte, 900<<10), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(nested, "tmp.bin")); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(nested, "out.bin"), make([]byte, 900<<10), 0o600); err != nil {
				t.Fatal(err)
			}

			exc, err := b.w.Close()
			if err != nil || exc != nil {
				t.Fatalf("Close = %+v, %v; want nil, nil", exc, err)
			}
			if b.isStopped() {
				t.Error("stop was called for a run within its caps")
			}
			bytes, files := b.w.Usage()
			if files != 3 || bytes < 900<<10 || bytes > 1<<20 {
				t.Errorf("Usage = %d bytes, %d files; want about 900 KiB and 3 (a, a/b, a/b/out.bin)", bytes, files)
			}
		})
	}
}

func TestNestedDirectoriesCount(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, Caps{Bytes: 1 << 20}, m.inotify, nil)
			// A tree made faster than watches can be added: the walk of each new directory
			// must find what its watch missed.
			deep := filepath.Join(b.dir, "x", "y", "z")
			if err := os.MkdirAll(deep, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(deep, "big.bin"), make([]byte, 2<<20), 0o600); err != nil {
				t.Fatal(err)
			}
			b.waitStopped(t)
			exc, _ := b.w.Close()
			if exc == nil || exc.Limit != JobBytes {
				t.Fatalf("Exceeded = %+v, want job_bytes", exc)
			}
		})
	}
}

// A sparse file holds little disk but is read in full when uploaded: its length counts.
func TestSparseFileCountsByLength(t *testing.T) {
	t.Parallel()
	b := setup(t, Caps{Bytes: 1 << 20}, true, nil)
	f, err := os.Create(filepath.Join(b.dir, "sparse.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b.waitStopped(t)
	exc, _ := b.w.Close()
	if exc == nil || exc.Seen < 1<<30 {
		t.Fatalf("Exceeded = %+v, want job_bytes with 1 GiB seen", exc)
	}
}

// A burst that ends before any event is read is still caught by the measure at Close.
func TestCloseMeasuresOnceMore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := watch(dir, Caps{Files: 2}, func() {}, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	exc, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&Exceeded{Limit: JobFiles, Max: 2, Seen: 3}, exc); diff != "" {
		t.Errorf("Exceeded (-want +got):\n%s", diff)
	}
}

func TestPassedBytes(t *testing.T) {
	t.Parallel()
	w, err := Watch(t.TempDir(), Caps{Bytes: 100}, func() {})
	if err != nil {
		t.Fatal(err)
	}
	w.PassedBytes()
	exc, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&Exceeded{Limit: JobBytes, Max: 100, Seen: 100}, exc); diff != "" {
		t.Errorf("Exceeded (-want +got):\n%s", diff)
	}
}

func TestExceededMessageNamesTheLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		exc  Exceeded
		want []string
	}{
		{Exceeded{Limit: JobBytes, Max: 4 << 30}, []string{"job_bytes=4294967296", "bytes"}},
		{Exceeded{Limit: JobFiles, Max: 1000}, []string{"job_files=1000", "files"}},
		{Exceeded{Limit: Memory, Max: 256 << 20}, []string{"memory=268435456", "memory limit"}},
	}
	for _, tt := range tests {
		msg := tt.exc.Message()
		for _, w := range tt.want {
			if !strings.Contains(msg, w) {
				t.Errorf("Message() = %q, want it to contain %q", msg, w)
			}
		}
	}
}

func TestWatchMissingDir(t *testing.T) {
	t.Parallel()
	if _, err := Watch(filepath.Join(t.TempDir(), "missing"), Caps{Files: 1}, func() {}); err == nil {
		t.Fatal("Watch of a missing directory succeeded")
	}
}

// TestStagedFilesCountByInode: the staged files are the base, by inode. Staged as a warm
// sandbox stages them, a second link to a file of the job's directory: one grown counts what
// it grew by; one removed gives nothing back (its disk stays used: removing a 4 MiB input once
// let a run write 4 MiB past its cap); a new link to one is an entry the run made, of no bytes.
// (Where the staged file is the only link, removing it frees its disk, and a file that takes
// its inode counts only what it grows past it: the disk is what the cap holds.)
func TestStagedFilesCountByInode(t *testing.T) {
	t.Parallel()
	const staged = 4 << 20
	stage := func(dir string) {
		job := filepath.Join(t.TempDir(), "in.bin") // the job's own directory (Spec.Dir)
		if err := os.WriteFile(job, make([]byte, staged), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(job, filepath.Join(dir, "in.bin")); err != nil {
			t.Fatal(err)
		}
	}
	write := func(t *testing.T, path string, n int, flag int) {
		f, err := os.OpenFile(path, flag|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(make([]byte, n)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name       string
		run        func(t *testing.T, dir string)
		bytes      int64
		files      int64
		exceededBy string
	}{
		{"removed, then as much written", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "in.bin")); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, "out.bin"), 2<<20, os.O_CREATE)
		}, 2 << 20, 1, JobBytes},
		{"grown", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "in.bin"), 512<<10, os.O_APPEND)
		}, 512 << 10, 0, ""},
		{"linked", func(t *testing.T, dir string) {
			if err := os.Link(filepath.Join(dir, "in.bin"), filepath.Join(dir, "again.bin")); err != nil {
				t.Fatal(err)
			}
		}, 0, 1, ""},
		{"replaced by a new file of the same name", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "in.bin")); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, "in.bin"), 2<<20, os.O_CREATE)
		}, 2 << 20, 1, JobBytes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, Caps{Bytes: 1 << 20, Files: 3}, false, stage)
			tt.run(t, b.dir)
			bytes, files := measure(b.w)
			exc, _ := b.w.Close()
			if bytes != tt.bytes || files != tt.files {
				t.Errorf("added %d bytes in %d entries, want %d in %d", bytes, files, tt.bytes, tt.files)
			}
			switch {
			case tt.exceededBy == "" && exc != nil:
				t.Errorf("Exceeded = %+v, want none", exc)
			case tt.exceededBy != "" && (exc == nil || exc.Limit != tt.exceededBy):
				t.Errorf("Exceeded = %+v, want %s", exc, tt.exceededBy)
			}
		})
	}
}
