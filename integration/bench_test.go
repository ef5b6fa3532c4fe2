package integration

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/dockersandbox"
	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/adapters/testservices"
)

// BenchmarkSubmitJobs measures accepted POST /jobs per second against the real binary on the
// embedded default (SQLite), with the validator and the store in the path, from 32 keep-alive
// clients over loopback. The in-process runner is off (MEDIAJOBS_RUNNER=false), so the figure is
// the API's and the store's alone. Target: ≥ 2,000 jobs/s on 2 cores.
func BenchmarkSubmitJobs(b *testing.B) {
	srv := startServer(b, serverOpts{Unthrottled: true, Backend: sqliteBackend, Env: map[string]string{"MEDIAJOBS_RUNNER": "false"}})
	key := createAccount(b, srv, "pro").APIKey
	body, _ := json.Marshal(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=320x240:rate=25 -c:v libx264 -pix_fmt yuv420p out.mp4", nil, nil))

	// One response is checked against the contract; the load itself skips validation so the
	// client's CPU goes to sending.
	newClient(b, srv, key).submit(json.RawMessage(body))

	const clients = 32
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = clients
	tr.MaxConnsPerHost = clients
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}

	var next, rejected atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				req, _ := http.NewRequest(http.MethodPost, srv.Base+"/jobs", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				resp, err := hc.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				var sink [512]byte
				for {
					if _, err := resp.Body.Read(sink[:]); err != nil {
						break
					}
				}
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					rejected.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if n := rejected.Load(); n > 0 {
		b.Fatalf("%d of %d submissions were not accepted", n, b.N)
	}
	rate := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(rate, "jobs/s")
	b.Logf("POST /jobs: %d accepted in %v by %d clients = %.0f jobs/s (SQLite, validator on, runner off, GOMAXPROCS %d; target ≥ 2000)",
		b.N, elapsed.Round(time.Millisecond), clients, rate, runtime.GOMAXPROCS(0))
}

// BenchmarkJobOverhead measures a short job end to end, from POST /jobs to `complete` seen by
// a client waiting on it with GET /jobs/{id}?wait=, against the same FFmpeg command run bare
// with exec. It reports the median overhead and the ratio (target: median overhead ≤ 50 ms),
// and the parts of the overhead it can see: the wait before the runner starts, a no-op sandbox
// start and an ffprobe in the sandbox (the runner probes every output).
func BenchmarkJobOverhead(b *testing.B) {
	const command = "ffmpeg -f lavfi -i testsrc=duration=0.2:size=64x64 -frames:v 1 out.png"
	args := []string{"-f", "lavfi", "-i", "testsrc=duration=0.2:size=64x64", "-frames:v", "1", "out.png"}

	srv := startServer(b, serverOpts{Unthrottled: true, Backend: sqliteBackend})
	c := newClient(b, srv, createAccount(b, srv, "pro").APIKey)
	body := ffmpegJob(command, nil, nil)
	c.complete(body) // warm caches: the binary, FFmpeg's libraries, the store
	c = c.unchecked()

	var queued, ran []time.Duration
	bare, e2e := bareBeside(b, c, body, args, b.N, func(j jobView) {
		if j.StartedAt != nil && j.CompletedAt != nil {
			queued = append(queued, time.Duration(*j.StartedAt-j.CreatedAt)*time.Millisecond)
			ran = append(ran, time.Duration(*j.CompletedAt-*j.StartedAt)*time.Millisecond)
		}
	})

	mb, me := median(bare), median(e2e)
	over := me - mb
	b.ReportMetric(float64(over.Microseconds())/1000, "overhead-ms")
	b.ReportMetric(float64(me)/float64(mb), "ratio")
	b.ReportMetric(float64(mb.Microseconds())/1000, "bare-ms")
	b.ReportMetric(float64(me.Microseconds())/1000, "e2e-ms")
	sbStart, probe := sandboxCosts(b)
	b.Logf("short job over %d runs: bare FFmpeg median %v, end to end median %v: overhead %v, ratio %.2f (target overhead ≤ 50 ms)",
		b.N, mb.Round(time.Millisecond), me.Round(time.Millisecond), over.Round(time.Millisecond), float64(me)/float64(mb))
	b.Logf("where it goes: createdAt→startedAt median %v, startedAt→completedAt median %v; a no-op sandbox start %v; one ffprobe in the sandbox %v",
		median(queued), median(ran), sbStart.Round(time.Millisecond), probe.Round(time.Millisecond))
}

// bareBeside runs rounds of the FFmpeg command bare (args, with exec) and the same command as a
// job (body) followed to its end with GET /jobs/{id}?wait= (a long poll), and returns the two
// lists of durations; done hears each completed job.
func bareBeside(b *testing.B, c *client, body map[string]any, args []string, rounds int, done func(jobView)) (bare, e2e []time.Duration) {
	b.Helper()
	b.ResetTimer()
	for range rounds {
		t0 := time.Now()
		if err := ffmpegBare(context.Background(), b.TempDir(), args...); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(t0))

		t0 = time.Now()
		j := c.waitTerminal(c.submit(body))
		e2e = append(e2e, time.Since(t0))
		if j.Status != "complete" {
			b.Fatalf("job %s: %s %s", j.ID, j.Status, errorText(j))
		}
		if done != nil {
			done(j)
		}
	}
	b.StopTimer()
	return bare, e2e
}

// sandboxCosts times, in the real sandbox, `ffmpeg -version` (the cost of starting bubblewrap
// and FFmpeg) and an ffprobe of a small PNG (what the runner does for each output file).
func sandboxCosts(b *testing.B) (start, probe time.Duration) {
	sb, err := sandbox.New(sandbox.Config{})
	if err != nil {
		b.Logf("sandbox: %v", err)
		return 0, 0
	}
	work := filepath.Join(dataDir(b), "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := ffmpegBare(context.Background(), work, "-f", "lavfi", "-i", "testsrc=size=64x64", "-frames:v", "1", "p.png"); err != nil {
		b.Fatal(err)
	}
	var starts, probes []time.Duration
	for range 9 {
		t0 := time.Now()
		if _, err := sb.Run(context.Background(), sandbox.Spec{Dir: work, Program: sandbox.FFmpeg, Args: []string{"-version"}}); err != nil {
			b.Logf("sandbox run: %v", err)
			return 0, 0
		}
		starts = append(starts, time.Since(t0))
		t0 = time.Now()
		if _, err := sb.Run(context.Background(), sandbox.Spec{Dir: work, Program: sandbox.FFprobe,
			Args: []string{"-v", "error", "-print_format", "json", "-show_format", "-show_streams", "p.png"}}); err != nil {
			b.Logf("sandbox run: %v", err)
			return 0, 0
		}
		probes = append(probes, time.Since(t0))
	}
	return median(starts), median(probes)
}

// quantile is the q-quantile of ds (0 ≤ q ≤ 1), the nearest rank's.
// scrapeRuns scrapes the worker's metrics at addr once it has counted runs reported runs.
func scrapeRuns(b *testing.B, addr string, runs int) map[string]float64 {
	b.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		m := scrape(b, "http://"+addr)
		if int(m[`mediajobs_worker_runs_total{class="cpu",outcome="complete",type="ffmpeg"}`]) >= runs || time.Now().After(deadline) {
			return m
		}
		time.Sleep(10 * time.Millisecond) // the poll interval of a wait on the worker's count
	}
}

// meanBetween is the mean of the observations of a histogram's series (name, labels) made
// between two scrapes.
func meanBetween(before, after map[string]float64, name, labels string) time.Duration {
	n := after[name+"_count"+labels] - before[name+"_count"+labels]
	if n <= 0 {
		return 0
	}
	return time.Duration((after[name+"_sum"+labels] - before[name+"_sum"+labels]) / n * float64(time.Second))
}

// mean is the mean of ds.
func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// median is the median of xs (the upper one of an even count): durations, or the fleet's rates
// and shares.
func median[T cmp.Ordered](xs []T) T {
	if len(xs) == 0 {
		var zero T
		return zero
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkRunnerOverhead runs the same 1-second job (FFmpeg paced at real time) on a worker of
// each sandbox — bubblewrap started cold for each run, bubblewrap from the worker's pool of
// warm sandboxes (the default), the Docker runner with a fresh container made for each FFmpeg
// step (and each ffprobe of an output), and the Docker runner from its pool of warm containers
// (its default) — one job at a time, and reports for each the median overhead over
// the command run bare: make bench prints them side by side. Goal: ≤ 5 ms warm.
func BenchmarkRunnerOverhead(b *testing.B) {
	const command = "ffmpeg -re -f lavfi -i testsrc=duration=1:size=64x48:rate=10 -c:v mpeg4 out.mp4"
	args := []string{"-re", "-f", "lavfi", "-i", "testsrc=duration=1:size=64x48:rate=10", "-c:v", "mpeg4", "out.mp4"}
	for _, run := range []struct{ name, sandbox, warm string }{
		{"bwrap-cold", "bwrap", "false"}, {"bwrap-warm", "bwrap", "true"}, {"docker-cold", "docker", "false"}, {"docker-warm", "docker", "true"},
	} {
		b.Run(run.name, func(b *testing.B) {
			sb := run.name
			if run.sandbox == "docker" {
				testservices.RequireImage(b, dockersandbox.DefaultImage)
			}
			srv := fleetServer(b, sqliteBackend, productionLease)
			c := newClient(b, srv, createAccount(b, srv, "pro").APIKey)
			metricsAddr := freeAddr(b)
			startWorker(b, srv.Base, 1, "MEDIAJOBS_SANDBOX="+run.sandbox, "MEDIAJOBS_WARM_SANDBOXES="+run.warm, "MEDIAJOBS_METRICS_ADDR="+metricsAddr)
			body := ffmpegJob(command, nil, nil)
			c.complete(body) // warm: the worker's first claim, the image's layers, FFmpeg's libraries
			c = c.unchecked()
			// The worker counts a run once its report is acknowledged, which the client may hear
			// of first: the scrapes wait for the count of reported runs to settle.
			workerBefore, serverBefore := scrapeRuns(b, metricsAddr, 1), scrape(b, srv.Base)

			// A median of rounds: b.N of a 2-second operation is 1. Each round runs the command
			// bare and then as a job, and the overhead is the median of the rounds' differences:
			// a pair shares the machine's state of the moment, which the difference of two
			// medians taken apart does not (on a 2-core VM they moved by 10 ms between runs).
			// Twenty-one rounds: the differences' quartiles lie 5 to 15 ms apart on a 2-core VM,
			// and eleven left their median a few milliseconds uncertain, as much as the goal;
			// twenty-one narrow that by a third, no more. The warm sandbox, whose figure the
			// goal is, gets sixty-one: single runs of twenty-one still moved by ±4 ms around
			// their median on a 2-vCPU Xeon (−8 to 6 ms over five runs), and the median of
			// sixty-one is as steady as three runs' together.
			rounds := 21
			if run.name == "bwrap-warm" {
				rounds = 61
			}
			var queued, ran []time.Duration
			bare, e2e := bareBeside(b, c, body, args, max(b.N, rounds), func(j jobView) {
				if j.StartedAt != nil && j.CompletedAt != nil {
					queued = append(queued, time.Duration(*j.StartedAt-j.CreatedAt)*time.Millisecond)
					ran = append(ran, time.Duration(*j.CompletedAt-*j.StartedAt)*time.Millisecond)
				}
			})
			diffs := make([]time.Duration, len(e2e))
			for i := range e2e {
				diffs[i] = e2e[i] - bare[i]
			}
			over, q1, q3 := median(diffs), quantile(diffs, 0.25), quantile(diffs, 0.75)
			me := median(e2e)
			b.ReportMetric(float64(over.Microseconds())/1000, "overhead-ms")
			b.ReportMetric(float64(me.Microseconds())/1000, "e2e-ms")
			b.Logf("%s worker, 1-second job over %d rounds: bare %v, end to end %v (medians); overhead %v (median of the rounds' differences; quartiles %v to %v); createdAt→startedAt %v, startedAt→completedAt %v",
				sb, len(e2e), median(bare).Round(time.Millisecond), me.Round(time.Millisecond), over.Round(100*time.Microsecond),
				q1.Round(100*time.Microsecond), q3.Round(100*time.Microsecond), median(queued), median(ran))
			workerAfter, serverAfter := scrapeRuns(b, metricsAddr, 1+len(e2e)), scrape(b, srv.Base)
			phase := func(p string) time.Duration {
				return meanBetween(workerBefore, workerAfter, "mediajobs_worker_run_phase_seconds", `{class="cpu",phase="`+p+`",type="ffmpeg"}`)
			}
			route := func(method, path string) time.Duration {
				return meanBetween(serverBefore, serverAfter, "mediajobs_http_request_seconds", `{method="`+method+`",route="`+path+`"}`)
			}
			b.Logf("%s worker, where a job's time goes (means over the rounds): on the worker, stage %v, compute %v (bare: %v), store %v, report %v; in the server, POST /jobs %v, a report %v",
				sb, phase("stage").Round(10*time.Microsecond), phase("compute").Round(100*time.Microsecond), mean(bare).Round(100*time.Microsecond),
				phase("store").Round(10*time.Microsecond), phase("report").Round(10*time.Microsecond),
				route("POST", "/jobs").Round(10*time.Microsecond), route("POST", "/internal/runner/report").Round(10*time.Microsecond))
		})
	}
}
