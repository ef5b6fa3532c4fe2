// Package metrics is the Prometheus adapter: it implements the core's service.Observer and the
// hooks of the HTTP API and the webhook deliverer, and serves /metrics. Every metric is named
// mediajobs_*; docs/metrics.md lists them and deploy/grafana/ has a dashboard that reads them.
package metrics

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
	"github.com/mediajobs/mediajobs/validator"
)

// Metrics holds the service's metrics in a registry of its own (so that tests and several
// servers in one process never collide on the global one).
type Metrics struct {
	reg *prometheus.Registry

	submitted   *prometheus.CounterVec
	rejected    *prometheus.CounterVec
	validator   *prometheus.CounterVec
	finished    *prometheus.CounterVec
	dispatch    *prometheus.HistogramVec
	runSeconds  *prometheus.HistogramVec
	credits     *prometheus.CounterVec
	deliveries  *prometheus.CounterVec
	deliveryDur *prometheus.HistogramVec
	requests    *prometheus.CounterVec
	requestDur  *prometheus.HistogramVec
}

var _ service.Observer = (*Metrics)(nil)

// QueueDepth counts the waiting jobs of each compute class; it is read at every scrape.
type QueueDepth func(ctx context.Context) (map[job.Class]int, error)

// New registers the metrics, the Go runtime's and the process's. depth, when not nil, feeds
// mediajobs_queue_depth.
func New(depth QueueDepth) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{reg: reg}
	f := func(c prometheus.Collector) prometheus.Collector { reg.MustRegister(c); return c }
	m.submitted = f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mediajobs_jobs_submitted_total",
		Help: "Jobs saved in waiting, by job type and compute class."}, []string{"type", "class"})).(*prometheus.CounterVec)
	m.rejected = f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mediajobs_submits_rejected_total",
		Help: "Job requests the submit gate refused, by error code."}, []string{"code"})).(*prometheus.CounterVec)
	m.validator = f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mediajobs_validator_rejections_total",
		Help: "FFmpeg commands the validator refused, by layer (syntax, flags, inputs, formats, filters, paths, limits, outputs) and where (submit, validate)."},
		[]string{"layer", "source"})).(*prometheus.CounterVec)
	m.finished = f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mediajobs_jobs_finished_total",
		Help: "Jobs that reached a terminal status, by job type, status and error code (empty unless failed)."},
		[]string{"type", "status", "code"})).(*prometheus.CounterVec)
	m.dispatch = f(prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mediajobs_dispatch_latency_seconds",
		Help:    "Time from a job's submit to its claim by a runner, by compute class.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900}}, []string{"class"})).(*prometheus.HistogramVec)
	m.runSeconds = f(prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mediajobs_job_run_seconds",
		Help:    "Measured compute (execution, transfers excluded) of finished jobs, by job type, class and status.",
		Buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 900}}, []string{"type", "class", "status"})).(*prometheus.HistogramVec)
	m.credits = f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mediajobs_credits_charged_total",
		Help: "Credits charged for finished jobs, by compute class."}, []string{"class"})).(*prometheus.CounterVec)
	m.deliveries = f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mediajobs_webhook_deliveries_total",
		Help: "Webhook delivery attempts, by outcome (delivered, retrying, failed)."}, []string{"outcome"})).(*prometheus.CounterVec)
	m.deliveryDur = f(prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mediajobs_webhook_delivery_seconds",
		Help:    "Duration of webhook delivery attempts, by outcome.",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}, []string{"outcome"})).(*prometheus.HistogramVec)
	m.requests = f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mediajobs_http_requests_total",
		Help: "HTTP requests of the API, by method, route pattern and status."}, []string{"method", "route", "status"})).(*prometheus.CounterVec)
	m.requestDur = f(prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mediajobs_http_request_seconds",
		Help: "Duration of HTTP requests of the API, by method and route pattern.", Buckets: prometheus.DefBuckets},
		[]string{"method", "route"})).(*prometheus.HistogramVec)
	if depth != nil {
		reg.MustRegister(&depthCollector{fn: depth, desc: prometheus.NewDesc("mediajobs_queue_depth",
			"Jobs waiting for a runner, by compute class.", []string{"class"}, nil)})
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// WatchJobWaits feeds mediajobs_job_waits from waiting, read at every scrape: the requests
// held until their job ends (GET /jobs/{id}?wait=, get_job's wait), each an open connection.
func (m *Metrics) WatchJobWaits(waiting func() int) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mediajobs_job_waits",
		Help: "Requests waiting now for their job to end (GET /jobs/{id}?wait=, get_job's wait)."},
		func() float64 { return float64(waiting()) }))
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry is the registry the metrics live in.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// JobSubmitted implements service.Observer.
func (m *Metrics) JobSubmitted(j *job.Job) {
	m.submitted.WithLabelValues(j.Type, string(j.Class)).Inc()
}

// SubmitRejected implements service.Observer.
func (m *Metrics) SubmitRejected(err error) {
	m.rejected.WithLabelValues(string(problem.CodeOf(err))).Inc()
	var v *validator.Error
	if errors.As(err, &v) {
		m.validator.WithLabelValues(v.Layer, "submit").Inc()
	}
}

// JobDispatched implements service.Observer.
func (m *Metrics) JobDispatched(j *job.Job, waited time.Duration) {
	m.dispatch.WithLabelValues(string(j.Class)).Observe(waited.Seconds())
}

// JobFinished implements service.Observer.
func (m *Metrics) JobFinished(j *job.Job) {
	code := ""
	if j.Error != nil {
		code = string(j.Error.Code)
	}
	m.finished.WithLabelValues(j.Type, string(j.Status), code).Inc()
	if j.ComputeMs > 0 || j.Status == job.StatusComplete {
		m.runSeconds.WithLabelValues(j.Type, string(j.Class), string(j.Status)).Observe(float64(j.ComputeMs) / 1000)
	}
	if j.Cost != nil && j.Cost.Amount > 0 {
		m.credits.WithLabelValues(string(j.Class)).Add(float64(j.Cost.Amount))
	}
}

// ValidatorRejected counts a command POST /ffmpeg/validate refused.
func (m *Metrics) ValidatorRejected(layer string) {
	m.validator.WithLabelValues(layer, "validate").Inc()
}

// Delivery counts one webhook delivery attempt: outcome is delivered, retrying or failed.
func (m *Metrics) Delivery(outcome string, took time.Duration) {
	m.deliveries.WithLabelValues(outcome).Inc()
	m.deliveryDur.WithLabelValues(outcome).Observe(took.Seconds())
}

// Request counts one HTTP request of the API; route is its pattern (/jobs/{id}), so that
// IDs never become labels.
func (m *Metrics) Request(method, route string, status int, took time.Duration) {
	method = methodLabel(method)
	m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.requestDur.WithLabelValues(method, route).Observe(took.Seconds())
}

// methodLabel keeps a label to a closed set: a client chooses the method it sends, and each
// new value would be a new series kept until restart (20,000 invented methods once grew
// /metrics from 107 KB to 24.5 MB).
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return method
	}
	return "other"
}

// depthCollector asks the store at scrape time, so that the gauge is the queue's truth on every
// replica rather than a count one process keeps.
type depthCollector struct {
	fn   QueueDepth
	desc *prometheus.Desc
}

func (c *depthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *depthCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	depth, err := c.fn(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for _, class := range []job.Class{job.ClassCPU, job.ClassGPU} {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(depth[class]), string(class))
	}
}

// Worker holds the metrics of a `mediajobs worker`: its runs by outcome and their duration, and
// its slots, in a registry of its own.
type Worker struct {
	reg  *prometheus.Registry
	runs *prometheus.CounterVec
	took *prometheus.HistogramVec
	// phases are the runs' spans: where a job's time on the worker goes.
	phases *prometheus.HistogramVec
}

// NewWorker registers a worker's metrics; slots is its concurrency and busy tells how many of
// its slots run a job now (read at every scrape).
func NewWorker(class job.Class, slots int, busy func() int) *Worker {
	reg := prometheus.NewRegistry()
	labels := prometheus.Labels{"class": string(class)}
	w := &Worker{reg: reg,
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mediajobs_worker_runs_total", ConstLabels: labels,
			Help: "Runs this worker ended, by job type and outcome (complete, or the failure kind: exit, timeout, fetch, limit, cancelled, handback, lease_lost, ...)."},
			[]string{"type", "outcome"}),
		took: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mediajobs_worker_run_seconds", ConstLabels: labels,
			Help:    "Wall time of this worker's runs, transfers included, by job type and outcome.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 900}}, []string{"type", "outcome"}),
		phases: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mediajobs_worker_run_phase_seconds", ConstLabels: labels,
			Help: "Spans of this worker's runs, by job type and phase: stage (the claim's answer to FFmpeg's release), compute, " +
				"store (the outputs' uploads) and report (its round trip).",
			// From a tenth of a millisecond: a warm job's stage and report take about a millisecond.
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 900}},
			[]string{"type", "phase"}),
	}
	reg.MustRegister(w.runs, w.took, w.phases,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mediajobs_worker_slots", ConstLabels: labels,
			Help: "Jobs this worker runs at once at most (--concurrency)."}, func() float64 { return float64(slots) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mediajobs_worker_slots_busy", ConstLabels: labels,
			Help: "Slots of this worker running a job now."}, func() float64 { return float64(busy()) }),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return w
}

// Ran records one run and the spans of its phases (runner.RunStats.Phases, by name); it fits
// runner.Config.OnRun through a closure.
func (w *Worker) Ran(typ, outcome string, took time.Duration, phases map[string]time.Duration) {
	w.runs.WithLabelValues(typ, outcome).Inc()
	w.took.WithLabelValues(typ, outcome).Observe(took.Seconds())
	for phase, d := range phases {
		w.phases.WithLabelValues(typ, phase).Observe(d.Seconds())
	}
}

// Handler serves the worker's registry in the Prometheus text format.
func (w *Worker) Handler() http.Handler {
	return promhttp.HandlerFor(w.reg, promhttp.HandlerOpts{Registry: w.reg})
}
