package integration

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

// smallDisk mounts a tmpfs of size bytes for the test (root only) and returns its path.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Missing(t, "root (a full disk is made with a small tmpfs)", nil)
	}
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	for p := filepath.Dir(dir); p != "/"; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err == nil && fi.Mode().Perm()&0o011 != 0o011 {
			_ = os.Chmod(p, fi.Mode().Perm()|0o011)
		}
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0711"); err != nil {
		testenv.Missing(t, "a tmpfs mount", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fill writes to a file until the disk at dir is full and returns its path; called again, it
// tops the disk up with what was freed since (the runner removes a failed job's files).
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return path
			}
			t.Fatal(err)
		}
	}
}

// TestDiskFull: the data directory's disk fills while a job runs. The service stays up and
// says it is not ready; the job fails INTERNAL_ERROR, uncharged, once it can be recorded; the
// log does not flood; and when space returns the service is ready again and runs jobs.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	disk := smallDisk(t, "96m")
	data := filepath.Join(disk, "data")
	if err := os.Mkdir(data, 0o711); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, serverOpts{Backend: sqliteBackend, Unthrottled: true, Data: data})
	c := newClient(t, srv, createAccount(t, srv, "pro").APIKey)
	c.complete(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=64x48:rate=10 -pix_fmt yuv420p warm.mp4", nil, nil))

	// Raw video at real-time pace: it writes ~5 MB a second until the disk is full.
	id := c.submit(ffmpegJob("ffmpeg -re -f lavfi -i testsrc=duration=60:size=320x240:rate=25 -c:v rawvideo raw.avi", nil,
		map[string]any{"timeout": 120}))
	c.waitFor(id, "running", func(j jobView) bool { return j.Status == "running" })
	before := strings.Count(srv.log.String(), "\n")
	filler := fill(t, disk)
	t.Cleanup(func() { _ = os.Remove(filler) }) // before the server stops, should the test fail

	deadline := time.Now().Add(30 * time.Second)
	for {
		// The job's FFmpeg fails on the full disk and its files are removed: the disk stays full.
		fill(t, disk)
		r := c.as("").do(http.MethodGet, "/readyz", nil, nil)
		if r.Status == http.StatusServiceUnavailable {
			if e := r.errorOf(t, http.StatusServiceUnavailable); e.Code != "SERVICE_UNAVAILABLE" || r.Header.Get("Retry-After") == "" {
				t.Fatalf("readyz while full: %+v", e)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz still %d with the disk full", r.Status)
		}
		time.Sleep(200 * time.Millisecond) // the poll interval of a wait on that state
	}
	// A submit now either cannot be stored (503, nothing kept) or is stored and waits.
	if r := c.do(http.MethodPost, "/jobs", ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1 -pix_fmt yuv420p x.mp4", nil, nil), nil); r.Status >= 500 && r.Status != http.StatusServiceUnavailable {
		t.Fatalf("submit on a full disk: %d %s", r.Status, r.Body)
	}
	time.Sleep(5 * time.Second) // let every loop meet the fault for a while
	during := strings.Count(srv.log.String(), "\n") - before
	if during > 40 {
		t.Errorf("%d log lines in ~6 s of a full disk; a failure is to be logged once per interval:\n%s", during, tail(srv.log.String(), 4000))
	}
	if err := os.Remove(filler); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}

	j := c.waitTerminal(id)
	if j.Status != "failed" || j.Error.Code != "INTERNAL_ERROR" || !j.Error.Retryable || j.Cost == nil || j.Cost.Amount != 0 {
		t.Fatalf("the job that met the full disk: %s %s, cost %+v", j.Status, errorText(j), j.Cost)
	}
	if n := charges(t, c)[id]; n != 0 {
		t.Fatalf("the job that met the full disk was charged %d times", n)
	}
	deadline = time.Now().Add(30 * time.Second)
	for c.as("").do(http.MethodGet, "/readyz", nil, nil).Status != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("not ready again 30 s after space returned")
		}
		time.Sleep(200 * time.Millisecond) // the poll interval of a wait on that state
	}
	c.complete(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=64x48:rate=10 -pix_fmt yuv420p after.mp4", nil, nil))
}
