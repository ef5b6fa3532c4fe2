package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestJobWait follows jobs with GET /jobs/{id}?wait= (a long poll) through the real binary, an
// API-only serve and a worker: the answer comes when the job ends, a running job is answered as
// it stands when the wait is up, a bad wait is refused naming it, /metrics counts the waits
// held, and the server's stop answers a held request at once with the job as it stands.
func TestJobWait(t *testing.T) {
	t.Parallel()
	marker := "wait_" + randomHex(6) + ".mp4"
	// Registered first, so it runs after the server and worker have stopped.
	t.Cleanup(func() { waitProcesses(t, marker, false) })
	srv := fleetServer(t, sqliteBackend, nil)
	startWorker(t, srv.Base, 2)
	c := newClient(t, srv, createAccount(t, srv, "pro").APIKey)
	get := func(id, query string, want int) jobView {
		t.Helper()
		var j jobView
		c.do(http.MethodGet, "/jobs/"+id+query, nil, nil).decode(t, want, &j)
		return j
	}

	// One request follows a 2-second job from waiting to its end.
	id := c.submit(ffmpegJob(pacedCommand("paced.mp4", 2), nil, nil))
	if j := get(id, "?wait=60", http.StatusOK); j.Status != "complete" || j.Output == nil {
		t.Fatalf("GET ?wait=60 answered %s %s, want the complete job", j.Status, errorText(j))
	}

	long := c.submit(ffmpegJob(longCommand(marker), nil, map[string]any{"timeout": 300}))
	c.waitFor(long, "running", func(j jobView) bool { return j.Status == "running" })
	if j := get(long, "?wait=1", http.StatusOK); j.Status != "running" {
		t.Errorf("GET ?wait=1 of a running job answered %s, want running", j.Status)
	}
	for _, q := range []string{"?wait=61", "?wait=-1", "?wait=later"} {
		res := c.do(http.MethodGet, "/jobs/"+long+q, nil, nil)
		if res.Status != http.StatusBadRequest || !strings.Contains(string(res.Body), "VALIDATION_ERROR") || !strings.Contains(string(res.Body), "wait") {
			t.Errorf("GET %s: %d %s, want 400 VALIDATION_ERROR naming wait", q, res.Status, res.Body)
		}
	}

	// A request held on the running job is counted, and the server's stop answers it.
	held := make(chan jobView, 1)
	go func() {
		var j jobView
		req, _ := http.NewRequest(http.MethodGet, srv.Base+"/jobs/"+long+"?wait=60", nil)
		req.Header.Set("Authorization", "Bearer "+c.Key)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			var env struct{ Data jobView }
			_ = json.NewDecoder(resp.Body).Decode(&env)
			_ = resp.Body.Close()
			j = env.Data
		}
		held <- j // a request cut off unanswered is a job of no status
	}()
	for deadline := time.Now().Add(time.Minute); scrape(t, srv.Base)["mediajobs_job_waits"] != 1; {
		if time.Now().After(deadline) {
			t.Fatal("mediajobs_job_waits never counted the held request")
		}
		time.Sleep(20 * time.Millisecond) // the poll interval of a wait on /metrics
	}
	srv.stop(t)
	select {
	case j := <-held:
		if j.Status != "running" {
			t.Errorf("the held request answered %q at the server's stop, want the job as it stood (running)", j.Status)
		}
	case <-time.After(time.Minute):
		t.Fatal("the held request had no answer a minute after the server's stop")
	}
}
