package integration

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// longCommand runs for ten minutes at real-time pace, cheaply, writing name: a job that holds
// its slot until it is cancelled or times out.
func longCommand(name string) string {
	return "ffmpeg -re -f lavfi -i testsrc=duration=600:size=32x32:rate=5 -c:v mpeg4 " + name
}

// waitProcesses waits until an FFmpeg process whose command line holds marker runs (want), or
// until every process with marker, the sandbox's included, is gone (!want).
func waitProcesses(t *testing.T, marker string, want bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	present := func() bool {
		if want {
			return len(processesWith(marker, "ffmpeg")) > 0
		}
		return len(processesWith(marker)) > 0
	}
	for present() != want {
		if time.Now().After(deadline) {
			t.Fatalf("processes with %q: present=%v after 30 s, want %v (pids %v)", marker, !want, want, processesWith(marker))
		}
		time.Sleep(100 * time.Millisecond) // the poll interval of a wait on the processes
	}
}

// TestCancel cancels a job waiting for the only slot, then the running job that holds it: the
// first never runs, the second's FFmpeg process is killed.
func TestCancel(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		srv := startServer(t, serverOpts{Unthrottled: true, Backend: b, Env: map[string]string{"MEDIAJOBS_SLOTS": "1"}})
		c := newClient(t, srv, createAccount(t, srv, "pro").APIKey)

		marker := "long_" + randomHex(6) + ".mp4"
		running := c.submit(ffmpegJob(longCommand(marker), nil, nil))
		c.waitFor(running, "running", func(j jobView) bool { return j.Status == "running" })
		waitProcesses(t, marker, true)
		t.Logf("job %s runs FFmpeg as pids %v", running, processesWith(marker))

		waiting := c.submit(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=5 -frames:v 1 never.png", nil, nil))
		if j := c.job(waiting); j.Status != "waiting" {
			t.Fatalf("second job is %s with the only slot taken, want waiting", j.Status)
		}
		var v jobView
		c.do(http.MethodPost, "/jobs/"+waiting+"/cancel", nil, nil).decode(t, http.StatusOK, &v)
		if v.Status != "cancelled" {
			t.Fatalf("cancel of a waiting job answered %s", v.Status)
		}
		if e := c.do(http.MethodPost, "/jobs/"+waiting+"/cancel", nil, nil).errorOf(t, http.StatusConflict); e.Code != "CONFLICT" {
			t.Errorf("second cancel: %+v, want CONFLICT", e)
		}

		c.do(http.MethodPost, "/jobs/"+running+"/cancel", nil, nil).decode(t, http.StatusOK, &v)
		if v.Status != "cancelled" {
			t.Fatalf("cancel of a running job answered %s", v.Status)
		}
		t.Logf("cancelled job %s", running)
		waitProcesses(t, marker, false)

		// The slot is free again: a new job runs, and the cancelled one never did.
		c.complete(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=5 -frames:v 1 after.png", nil, nil))
		if j := c.job(waiting); j.Status != "cancelled" || j.StartedAt != nil {
			t.Errorf("the cancelled waiting job is %s (startedAt %v), want cancelled and never started", j.Status, j.StartedAt)
		}
		if j := c.job(running); j.Status != "cancelled" || j.Output != nil {
			t.Errorf("the cancelled running job is %s with output %v, want cancelled", j.Status, j.Output)
		}
	})
}

// TestFailures covers the failure paths of a run: FFmpeg's own error, retry of it, and the time
// limit.
func TestFailures(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		srv := startServer(t, serverOpts{Unthrottled: true, Backend: b})
		c := newClient(t, srv, createAccount(t, srv, "pro").APIKey)

		t.Run("ffmpeg error and retry", func(t *testing.T) {
			t.Parallel()
			// libx264 refuses an odd width in 4:2:0.
			id := c.submit(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=33x33:rate=5 -c:v libx264 -pix_fmt yuv420p odd.mp4", nil, nil))
			j := c.waitTerminal(id)
			if j.Status != "failed" || j.Error == nil || j.Error.Code != "RUNNER_ERROR" {
				t.Fatalf("job %s: %s %s, want failed RUNNER_ERROR", id, j.Status, errorText(j))
			}
			if d := j.Error.Detail; d == nil || *d == "" || len(*d) > 2048 || !strings.Contains(*d, "divisible by 2") {
				t.Errorf("error.detail = %q, want FFmpeg's stderr tail (≤ 2 KB) naming the odd size", deref(d))
			}

			var r created
			c.do(http.MethodPost, "/jobs/"+id+"/retry", nil, nil).decode(t, http.StatusCreated, &r)
			if r.ID == id || r.RetryOf != id || r.Status != "waiting" {
				t.Fatalf("retry answered %+v, want a new waiting job with retryOf %s", r, id)
			}
			retried := c.waitTerminal(r.ID)
			if retried.RetryOf != id || retried.Status != "failed" {
				t.Errorf("retried job: retryOf %q, status %s; want %s, failed again", retried.RetryOf, retried.Status, id)
			}
			if old := c.job(id); old.Status != "failed" {
				t.Errorf("the retried job changed to %s", old.Status)
			}
		})

		t.Run("retry of a complete job", func(t *testing.T) {
			t.Parallel()
			j := c.complete(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=5 -frames:v 1 ok.png", nil, nil))
			if e := c.do(http.MethodPost, "/jobs/"+j.ID+"/retry", nil, nil).errorOf(t, http.StatusConflict); e.Code != "CONFLICT" {
				t.Errorf("retry of a complete job: %+v, want CONFLICT", e)
			}
		})

		t.Run("timeout", func(t *testing.T) {
			t.Parallel()
			marker := "timeout_" + randomHex(6) + ".mp4"
			id := c.submit(ffmpegJob(longCommand(marker), nil, map[string]any{"timeout": 1}))
			j := c.waitTerminal(id)
			if j.Status != "failed" || j.Error == nil || j.Error.Code != "RUNNER_TIMEOUT" || j.Error.Retryable {
				t.Fatalf("job %s: %s %s, want failed RUNNER_TIMEOUT, not retryable", id, j.Status, errorText(j))
			}
			if j.Cost != nil && j.Cost.Amount != 0 {
				t.Errorf("a timed-out job was charged %+v; RUNNER_TIMEOUT is not charged", *j.Cost)
			}
			waitProcesses(t, marker, false)
		})
	})
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
