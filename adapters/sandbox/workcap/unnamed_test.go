package workcap

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// TestUnnamedFilesCount: a file the run holds with no name — unlinked while open, made with
// O_TMPFILE, unlinked while mapped after its descriptor was closed, or a staged file unlinked
// where its other link keeps it alive — counts against the
// byte cap once Follow names the run's PID namespace. A copy of this test binary holds each, in
// a PID namespace of its own as a sandbox's program is; the file is sparse, long but small on
// disk, and counts by its length. A mapped file the process does not own (a library the host
// replaced while the run had it mapped) is not the run's; giving it away needs root, and
// without root map_files cannot be read, and a mapping counts at its length.
func TestUnnamedFilesCount(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	tests := []struct {
		hold    string
		counted bool
	}{
		{"unlinked", true},
		{"tmpfile", true},
		{"mapped", true},
		{"mapped-foreign", os.Geteuid() != 0},
		{"thread", true},
		{"leaderexit", true},
		{"staged", true},
	}
	for _, tt := range tests {
		t.Run(tt.hold, func(t *testing.T) {
			t.Parallel()
			var prepare func(dir string)
			if tt.hold == "staged" {
				// Staged as a warm sandbox stages: a second link of a file of the job's own.
				prepare = func(dir string) {
					job := filepath.Join(t.TempDir(), "in.bin")
					if err := os.WriteFile(job, make([]byte, 1<<20), 0o644); err != nil {
						t.Fatal(err)
					}
					if err := os.Link(job, filepath.Join(dir, "in.bin")); err != nil {
						t.Fatal(err)
					}
				}
			}
			b := setup(t, Caps{Bytes: limit}, false, prepare)
			pid := startHolder(t, b.dir, tt.hold)
			if bytes, _ := measure(b.w); bytes >= limit {
				t.Fatalf("before Follow the run had added %d bytes; the directory is empty", bytes)
			}
			if err := b.w.Follow(pid); err != nil {
				t.Fatal(err)
			}
			bytes, _ := measure(b.w)
			exc, _ := b.w.Close()
			switch {
			case tt.counted && (bytes < heldSize || !b.isStopped() || exc == nil || exc.Limit != JobBytes || exc.Seen < heldSize):
				t.Errorf("after Follow: %d bytes added, stopped %v, Exceeded %+v; want the %d held with no name counted and the run stopped", bytes, b.isStopped(), exc, heldSize)
			case !tt.counted && bytes != 0:
				t.Errorf("after Follow: %d bytes added, want none: the file is not the run's", bytes)
			}
		})
	}
}

// TestUnnamedFilesOfACgroup: a process in a cgroup of its own (a sandbox's job cgroup, a
// container's) is found through that cgroup's member list instead of every process's
// namespace, and what it holds with no name counts the same. It needs a cgroup this process
// may make: without one (not root, no writable cgroup tree) it checks that the list is none.
func TestUnnamedFilesOfACgroup(t *testing.T) {
	t.Parallel()
	b := setup(t, Caps{Bytes: 1 << 20}, false, nil)
	procs, err := newCgroup(t) // before the holder, so that it is removed after the holder ends
	pid := startHolder(t, b.dir, "unlinked")
	if err == nil {
		err = os.WriteFile(procs, []byte(strconv.Itoa(pid)), 0o644)
	}
	if err != nil {
		procs = ""
		t.Logf("no cgroup of its own could be made (%v): the holder shares this process's", err)
	}
	if got := ownCgroupProcs(pid); got != procs {
		t.Fatalf("ownCgroupProcs = %q, want %q", got, procs)
	}
	if err := b.w.Follow(pid); err != nil {
		t.Fatal(err)
	}
	if bytes, _ := measure(b.w); bytes < heldSize || b.w.procs != procs {
		t.Errorf("after Follow: %d bytes added through %q, want the %d held with no name, through %q", bytes, b.w.procs, heldSize, procs)
	}
	_, _ = b.w.Close()
}

// newCgroup makes a cgroup below this process's (of the memory hierarchy where cgroups are v1),
// removed at the test's end, and returns its cgroup.procs.
func newCgroup(t *testing.T) (string, error) {
	mine, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	dir := ""
	for line := range strings.Lines(string(mine)) {
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		switch {
		case len(f) == 3 && f[1] == "memory":
			dir = filepath.Join("/sys/fs/cgroup/memory", f[2])
		case len(f) == 3 && f[0] == "0" && f[1] == "" && dir == "":
			dir = filepath.Join("/sys/fs/cgroup", f[2])
		}
	}
	if dir == "" {
		return "", errors.New("no cgroup")
	}
	dir, err = os.MkdirTemp(dir, "workcap-test-")
	if err != nil {
		return "", err
	}
	t.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second)
		for os.Remove(dir) != nil && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond) // a process that exited leaves its cgroup a moment later
		}
	})
	return filepath.Join(dir, "cgroup.procs"), nil
}

func TestFollowMissingProcess(t *testing.T) {
	t.Parallel()
	b := setup(t, Caps{}, false, nil)
	defer b.w.Close()
	if err := b.w.Follow(1 << 30); err == nil {
		t.Error("Follow of a process that does not exist: no error")
	}
	if err := b.w.Follow(os.Getpid()); err == nil {
		t.Error("Follow of a process in this one's PID namespace: no error")
	}
}

// heldSize is the length of the file a holder keeps with no name.
const heldSize = 64 << 20

// holdEnv names, in a holder's environment, how it holds its file; holdDirEnv where.
const holdEnv, holdDirEnv = "WORKCAP_TEST_HOLD", "WORKCAP_TEST_HOLD_DIR"

// TestMain lets this test binary serve as a holder: a process that keeps a file with no name,
// says so, and waits for its standard input to close.
func TestMain(m *testing.M) {
	if how := os.Getenv(holdEnv); how != "" {
		if err := hold(how, os.Getenv(holdDirEnv)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("holding")
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	code := m.Run()
	if threadHolderPath != "" {
		os.RemoveAll(filepath.Dir(threadHolderPath))
	}
	os.Exit(code)
}

// startHolder starts a holder in a PID namespace of its own (and a user namespace, unless this
// process is root), and returns its pid once it holds its file. It ends with the test.
func startHolder(t *testing.T, dir, how string) int {
	t.Helper()
	if how == "mapped-foreign" && os.Geteuid() != 0 {
		how = "mapped" // in its user namespace the holder would be root, and could give nothing away
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), holdEnv+"="+how, holdDirEnv+"="+dir)
	switch how {
	case "thread":
		cmd = exec.Command(threadHolder(t), filepath.Join(dir, "held.bin"), strconv.Itoa(heldSize))
	case "leaderexit":
		cmd = exec.Command(threadHolder(t), filepath.Join(dir, "held.bin"), strconv.Itoa(heldSize), "leaderexit")
	}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	if os.Geteuid() != 0 {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "holding\n" {
		t.Fatalf("the holder said %q: %v", line, err)
	}
	return cmd.Process.Pid
}

// threadHolder builds testdata/threadhold.c, once, and returns its path.
func threadHolder(t *testing.T) string {
	t.Helper()
	threadHolderOnce.Do(func() {
		dir, err := os.MkdirTemp("", "workcap-threadhold-")
		if err != nil {
			threadHolderErr = err
			return
		}
		threadHolderPath = filepath.Join(dir, "threadhold")
		if out, err := exec.Command("gcc", "-O2", "-pthread", "-o", threadHolderPath, "testdata/threadhold.c").CombinedOutput(); err != nil {
			threadHolderErr = fmt.Errorf("gcc: %v: %s", err, out)
		}
	})
	if threadHolderErr != nil {
		t.Fatal(threadHolderErr)
	}
	return threadHolderPath
}

var (
	threadHolderOnce sync.Once
	threadHolderPath string
	threadHolderErr  error
)

// kept holds a holder's files for as long as it runs.
var kept []*os.File

// hold keeps a file of heldSize bytes in dir with no name, as how says, until the process ends.
func hold(how, dir string) error {
	if how == "staged" {
		// A staged file, unlinked here and grown: its other link keeps its link count above 0.
		f, err := os.OpenFile(filepath.Join(dir, "in.bin"), os.O_RDWR, 0)
		if err != nil {
			return err
		}
		kept = append(kept, f)
		if err := os.Remove(f.Name()); err != nil {
			return err
		}
		return f.Truncate(1<<20 + heldSize)
	}
	if how == "tmpfile" {
		fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR, 0o600)
		if err != nil {
			return err
		}
		return unix.Ftruncate(fd, heldSize)
	}
	f, err := os.Create(filepath.Join(dir, "held.bin"))
	if err != nil {
		return err
	}
	kept = append(kept, f) // never closed by a finalizer
	if err := f.Truncate(heldSize); err != nil {
		return err
	}
	if how == "mapped-foreign" {
		if err := f.Chown(65534, 65534); err != nil {
			return err
		}
	}
	if how != "unlinked" {
		if _, err := unix.Mmap(int(f.Fd()), 0, heldSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return os.Remove(filepath.Join(dir, "held.bin"))
}

// measure recounts now, as the periodic recount does, and checks the caps.
func measure(w *Watcher) (bytes, files int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.recountLocked(); err != nil {
		w.failLocked(err)
	}
	w.checkLocked()
	return w.addedLocked()
}

// TestMapsParse: the mappings are read whole, however long a line is (a path deep in
// directories ran past bufio.Scanner's 64 KiB and ended the read), and offsets near 2^64 count
// at most maxHeld, never wrapping the sum below zero. The /proc directory is a fake one: with
// no map_files, each mapping of an unnamed file on dev counts at its end in the file.
func TestMapsParse(t *testing.T) {
	t.Parallel()
	const dev = 0x801 // 8:1
	base := t.TempDir()
	long := "/" + strings.Repeat("d", 100<<10)
	maps := "00010000-00011000 r--p 00000000 08:01 11 " + long + "\n" +
		"00020000-04020000 rw-s 00000000 08:01 12 /work/held.bin (deleted)\n" +
		"05000000-05001000 rw-s 00000000 08:02 13 /tmp/other.bin (deleted)\n" +
		"06000000-06001000 rw-s fffffffffffff000 08:01 14 /work/a (deleted)\n" +
		"07000000-07001000 rw-s 7ffffffffffff000 08:01 15 /work/b (deleted)\n"
	if err := os.WriteFile(filepath.Join(base, "maps"), []byte(maps), 0o644); err != nil {
		t.Fatal(err)
	}
	u := &unnamed{dev: dev, held: map[uint64]int64{}}
	u.addMapped(base)
	held := u.held
	want := map[uint64]int64{12: 64 << 20, 14: maxHeld + 0x1000, 15: maxHeld + 0x1000}
	if diff := cmp.Diff(want, held); diff != "" {
		t.Errorf("held (-want +got):\n%s", diff)
	}
	if sum := total(held); sum != 64<<20+2*maxHeld { // each at most maxHeld
		t.Errorf("total = %d", sum)
	}
	many := map[uint64]int64{}
	for i := range uint64(65536) { // the most mappings a process may have
		many[i] = math.MaxInt64
	}
	if sum := total(many); sum <= 0 {
		t.Errorf("total of 65,536 files of 2^63 bytes = %d: it wrapped", sum)
	}
}
