package integration

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scrape reads /metrics and returns each sample line's value by its name and labels.
func scrape(t testing.TB, base string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, b)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// TestMetricsAndLogs: a job through the real binary moves the counters of /metrics, and the
// JSON log follows it from the request that submitted it to its end under one request ID and
// one job ID.
func TestMetricsAndLogs(t *testing.T) {
	t.Parallel()
	srv := startServer(t, serverOpts{Backend: sqliteBackend, Unthrottled: true})
	c := newClient(t, srv, createAccount(t, srv, "pro").APIKey)
	before := scrape(t, srv.Base)

	res := c.do(http.MethodPost, "/jobs", ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=5 -frames:v 1 m.png", nil, nil),
		http.Header{"X-Request-Id": {"it-metrics-1"}})
	var cr created
	res.decode(t, http.StatusCreated, &cr)
	if got := res.Header.Get("X-Request-Id"); got != "it-metrics-1" {
		t.Errorf("X-Request-Id answered %q, want the client's", got)
	}
	j := c.waitTerminal(cr.ID)
	if j.Status != "complete" {
		t.Fatalf("job ended %s: %s", j.Status, errorText(j))
	}
	bad := c.do(http.MethodPost, "/jobs", ffmpegJob("ffmpeg -i https://example.com/a.mp4 -filter_script x out.mp4", nil, nil), nil)
	bad.errorOf(t, http.StatusBadRequest)

	var after map[string]float64
	// The charge and the counters land right after the result; give the scrape a moment.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		after = scrape(t, srv.Base)
		if after[`mediajobs_credits_charged_total{class="cpu"}`] >= before[`mediajobs_credits_charged_total{class="cpu"}`]+1 ||
			time.Now().After(deadline) {
			break
		}
	}
	moved := func(name string, by float64) {
		t.Helper()
		if got := after[name] - before[name]; got < by {
			t.Errorf("%s moved by %v, want at least %v (before %v, after %v)", name, got, by, before[name], after[name])
		}
	}
	moved(`mediajobs_jobs_submitted_total{class="cpu",type="ffmpeg"}`, 1)
	moved(`mediajobs_jobs_finished_total{code="",status="complete",type="ffmpeg"}`, 1)
	moved(`mediajobs_dispatch_latency_seconds_count{class="cpu"}`, 1)
	moved(`mediajobs_job_run_seconds_count{class="cpu",status="complete",type="ffmpeg"}`, 1)
	moved(`mediajobs_credits_charged_total{class="cpu"}`, 1)
	moved(`mediajobs_http_requests_total{method="POST",route="/jobs",status="201"}`, 1)
	moved(`mediajobs_http_requests_total{method="POST",route="/jobs",status="400"}`, 1)
	moved(`mediajobs_http_requests_total{method="GET",route="/jobs/{id}",status="200"}`, 1)
	moved(`mediajobs_validator_rejections_total{layer="flags",source="submit"}`, 1)
	moved(`mediajobs_submits_rejected_total{code="VALIDATION_ERROR"}`, 1)
	if _, ok := after[`mediajobs_queue_depth{class="cpu"}`]; !ok {
		t.Errorf("/metrics has no queue depth")
	}

	// The log: JSON lines; the submit names both IDs, the job's end its ID.
	var submitted, finished bool
	for _, line := range strings.Split(srv.log.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["job"] != cr.ID {
			continue
		}
		switch rec["msg"] {
		case "job submitted":
			submitted = rec["request_id"] == "it-metrics-1"
		case "job finished":
			finished = rec["status"] == "complete"
		}
	}
	if !submitted || !finished {
		t.Errorf("log of %s: submitted with the request ID %v, finished %v:\n%s", cr.ID, submitted, finished, tail(srv.log.String(), 3000))
	}
}
