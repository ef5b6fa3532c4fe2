package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/metrics"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/validator"
)

func TestMetrics(t *testing.T) {
	t.Parallel()
	m := metrics.New(func(context.Context) (map[job.Class]int, error) {
		return map[job.Class]int{job.ClassCPU: 3}, nil
	})
	j := &job.Job{ID: "job_1", Type: "ffmpeg", Class: job.ClassCPU}
	m.JobSubmitted(j)
	m.SubmitRejected(&problem.Problem{Code: problem.CodeValidation, Message: "flag -x is not allowed",
		Cause: &validator.Error{Layer: "flags", Message: "flag -x is not allowed"}})
	m.SubmitRejected(problem.Reject(problem.CodePlanLimit, "GPU jobs need the Pro plan"))
	m.JobDispatched(j, 40*time.Millisecond)
	done := *j
	done.Status, done.ComputeMs, done.Cost = job.StatusComplete, 1500, &job.Cost{Amount: 2}
	m.JobFinished(&done)
	failed := *j
	failed.Status, failed.Error, failed.Cost = job.StatusFailed, &job.Error{Code: problem.CodeRunnerTimeout}, &job.Cost{}
	m.JobFinished(&failed)
	m.ValidatorRejected("paths")
	m.Delivery("delivered", 30*time.Millisecond)
	m.Request("GET", "/jobs/{id}", 200, time.Millisecond)

	body := scrape(t, m)
	for _, want := range []string{
		`mediajobs_jobs_submitted_total{class="cpu",type="ffmpeg"} 1`,
		`mediajobs_submits_rejected_total{code="VALIDATION_ERROR"} 1`,
		`mediajobs_submits_rejected_total{code="PLAN_LIMIT"} 1`,
		`mediajobs_validator_rejections_total{layer="flags",source="submit"} 1`,
		`mediajobs_validator_rejections_total{layer="paths",source="validate"} 1`,
		`mediajobs_jobs_finished_total{code="",status="complete",type="ffmpeg"} 1`,
		`mediajobs_jobs_finished_total{code="RUNNER_TIMEOUT",status="failed",type="ffmpeg"} 1`,
		`mediajobs_dispatch_latency_seconds_count{class="cpu"} 1`,
		`mediajobs_job_run_seconds_sum{class="cpu",status="complete",type="ffmpeg"} 1.5`,
		`mediajobs_credits_charged_total{class="cpu"} 2`,
		`mediajobs_webhook_deliveries_total{outcome="delivered"} 1`,
		`mediajobs_http_requests_total{method="GET",route="/jobs/{id}",status="200"} 1`,
		`mediajobs_queue_depth{class="cpu"} 3`,
		`mediajobs_queue_depth{class="gpu"} 0`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// A store that cannot answer makes the scrape say so rather than report an empty queue.
func TestQueueDepthError(t *testing.T) {
	t.Parallel()
	m := metrics.New(func(context.Context) (map[job.Class]int, error) { return nil, errors.New("store down") })
	if _, err := m.Registry().Gather(); err == nil || !strings.Contains(err.Error(), "store down") {
		t.Errorf("Gather = %v, want the store's error", err)
	}
}

// A method a client invents is counted as "other": 1,000 of them add one series, not 1,000.
func TestRequestMethodsAreAClosedSet(t *testing.T) {
	t.Parallel()
	m := metrics.New(func(context.Context) (map[job.Class]int, error) { return nil, nil })
	for i := range 1000 {
		m.Request(fmt.Sprintf("X%dY", i), "unmatched", 405, time.Millisecond)
	}
	m.Request("DELETE", "/jobs/{id}", 200, time.Millisecond)
	body := scrape(t, m)
	if n := strings.Count(body, "mediajobs_http_requests_total{"); n != 2 {
		t.Errorf("%d series of mediajobs_http_requests_total, want 2 (other and DELETE)", n)
	}
	for _, want := range []string{
		`mediajobs_http_requests_total{method="other",route="unmatched",status="405"} 1000`,
		`mediajobs_http_requests_total{method="DELETE",route="/jobs/{id}",status="200"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// scrape reads m's /metrics once.
func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	return string(body)
}
