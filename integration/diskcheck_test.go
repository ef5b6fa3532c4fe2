package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

// TestWorkerWarnsOfAnUnjournaledDisk starts `mediajobs worker` on a work directory on an ext4
// without a journal, where every file a job makes costs a scan of the recently freed ones, and
// on one with a journal: the first says so in its log at start, the second does not.
func TestWorkerWarnsOfAnUnjournaledDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Missing(t, "root, to mount a filesystem image on a loop device", nil)
	}
	for _, tc := range []struct {
		name string
		mkfs []string
		warn bool
	}{
		{"journaled", nil, false},
		{"without a journal", []string{"-O", "^has_journal"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := dataDir(t)
			img, work := filepath.Join(root, "fs.img"), filepath.Join(root, "work")
			sh(t, "truncate", "-s", "32M", img)
			sh(t, "mkfs.ext4", append(append([]string{"-q", "-F"}, tc.mkfs...), img)...)
			if err := os.Mkdir(work, 0o711); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("mount", "-o", "loop", img, work).CombinedOutput(); err != nil {
				testenv.Missing(t, "a loop device to mount a filesystem image on", strings.TrimSpace(string(out)))
			}
			t.Cleanup(func() { sh(t, "umount", work) })
			if err := os.Chmod(work, 0o711); err != nil {
				t.Fatal(err)
			}
			log := &lockedBuffer{}
			// No control plane answers: the worker starts, says what it found, and retries its
			// claims until it is stopped.
			// --work-dir is made by the worker, as a new one would be.
			cmd := exec.Command(binary, "worker", "--control", "http://127.0.0.1:9", "--work-dir", filepath.Join(work, "jobs"), "--log-format", "text")
			cmd.Env = append(os.Environ(), "MEDIAJOBS_WORKER_TOKEN="+workerToken)
			cmd.Stdout, cmd.Stderr = log, log
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { _ = cmd.Wait(); close(exited) }()
			defer func() {
				_ = cmd.Process.Signal(syscall.SIGTERM)
				<-exited
			}()
			if !eventually(30*time.Second, func() bool { return strings.Contains(log.String(), "mediajobs worker running") }) {
				t.Fatalf("the worker did not start; its log:\n%s", tail(log.String(), 4000))
			}
			warned := strings.Contains(log.String(), "the work directory is on an ext4 filesystem without a journal")
			if warned != tc.warn {
				t.Errorf("warned of the disk: %v, want %v; the worker's log:\n%s", warned, tc.warn, tail(log.String(), 4000))
			}
		})
	}
}

func sh(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}
