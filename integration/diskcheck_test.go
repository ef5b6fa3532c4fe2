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
	for _, tc := range []struct {
		name string
		warn bool
	}{
		{"journaled", false},
		{"without a journal", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := filepath.Join(dataDir(t), "disk") // its parents searchable by the sandbox user
			testenv.MountExt4(t, work, !tc.warn)
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
			started := func() bool {
				select {
				case <-exited:
					return true // it stopped: its log says why
				default:
					return strings.Contains(log.String(), "mediajobs worker running")
				}
			}
			if !eventually(30*time.Second, started) || !strings.Contains(log.String(), "mediajobs worker running") {
				t.Fatalf("the worker did not start; its log:\n%s", tail(log.String(), 4000))
			}
			warned := strings.Contains(log.String(), "the work directory is on an ext4 filesystem without a journal")
			if warned != tc.warn {
				t.Errorf("warned of the disk: %v, want %v; the worker's log:\n%s", warned, tc.warn, tail(log.String(), 4000))
			}
		})
	}
}
