package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// loadFigures are the results of one load run.
type loadFigures struct {
	accepted, refused, failed int64
	elapsed                   time.Duration
	p50, p99, max             time.Duration
	// burst: 1,000 simultaneous submits.
	burstAccepted, burstFailed int64
	burstMedian, burstLast     time.Duration
	ledgerExact                bool
	// CPU spent per accepted submit in the sustained run, by the server, PostgreSQL (its
	// backends) and the load generator: a measure that stays comparable on a busy machine.
	cpuServer, cpuPostgres, cpuLoad time.Duration
	// baseline is GET /healthz answered per second by the same clients: HTTP alone.
	baseline float64
}

var (
	loadMu      sync.Mutex
	loadResults = map[backend]*loadFigures{}
)

// BenchmarkSubmitLoad drives POST /jobs through the real binary with a Go load generator: 32
// keep-alive clients for a fixed time, then 1,000 simultaneous submits, on SQLite and on
// PostgreSQL; beside it, the baseline: the same clients on GET /healthz (HTTP alone). The runner is off and every plan's request rate raised, so that only the submit
// path is measured. At the end the ledger is checked exact: the account's balance equals the
// sum of its entries, and every accepted job is stored. Goals on 2 cores: ≥ 4,000 accepted/s on
// SQLite and ≥ 2,500/s on PostgreSQL, p99 ≤ 50 ms on both; the burst all accepted within 2 s.
// The run happens once per backend however often the benchmark framework calls it.
func BenchmarkSubmitLoad(b *testing.B) {
	for _, be := range backends {
		b.Run(string(be), func(b *testing.B) {
			loadMu.Lock()
			f, ok := loadResults[be]
			if !ok {
				f = runSubmitLoad(b, be, 5*time.Second)
				loadResults[be] = f
			}
			loadMu.Unlock() // not deferred: the sub-benchmark's end would be too late for the next
			rate := float64(f.accepted) / f.elapsed.Seconds()
			b.ReportMetric(rate, "accepted/s")
			b.ReportMetric(ms(f.p50), "p50-ms")
			b.ReportMetric(ms(f.p99), "p99-ms")
			b.ReportMetric(float64(f.refused+f.failed), "not-accepted")
			b.ReportMetric(ms(f.burstMedian), "burst-median-ms")
			b.ReportMetric(ms(f.burstLast), "burst-last-ms")
			b.ReportMetric(float64(f.burstFailed), "burst-5xx")
			b.ReportMetric(f.baseline, "baseline-healthz/s")
			b.ReportMetric(float64(f.cpuServer.Microseconds()), "server-cpu-µs/op")
			b.ReportMetric(float64(f.cpuPostgres.Microseconds()), "postgres-cpu-µs/op")
			b.ReportMetric(float64(f.cpuLoad.Microseconds()), "loadgen-cpu-µs/op")
			if !ok {
				cpu := fmt.Sprintf("server %v, load generator %v", f.cpuServer, f.cpuLoad)
				if be == postgresBackend {
					cpu += fmt.Sprintf(", PostgreSQL %v", f.cpuPostgres)
				}
				b.Logf("%s: POST /jobs from 32 clients for %v: %d accepted = %.0f/s, p50 %v, p99 %v, max %v, %d refused, %d failed; "+
					"1,000 simultaneous: %d accepted, %d 5xx, median %v, last %v; ledger exact: %v; CPU a submit: %s; "+
					"baseline GET /healthz: %.0f/s",
					be, f.elapsed.Round(time.Millisecond), f.accepted, rate, f.p50, f.p99, f.max, f.refused, f.failed,
					f.burstAccepted, f.burstFailed, f.burstMedian, f.burstLast, f.ledgerExact, cpu, f.baseline)
			}
			if f.failed > 0 || f.burstFailed > 0 || !f.ledgerExact {
				b.Errorf("%s: %d failed, %d failed in the burst, ledger exact %v", be, f.failed, f.burstFailed, f.ledgerExact)
			}
		})
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func runSubmitLoad(b *testing.B, be backend, duration time.Duration) *loadFigures {
	b.Helper()
	ok := false
	defer func() {
		if !ok { // a Fatal inside: release the lock the caller holds
			loadMu.Unlock()
		}
	}()
	srv := startServer(b, serverOpts{Unthrottled: true, Backend: be, Env: map[string]string{"MEDIAJOBS_RUNNER": "false"}})
	acct := createAccount(b, srv, "pro")
	body, _ := json.Marshal(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=320x240:rate=25 -c:v libx264 -pix_fmt yuv420p out.mp4", nil, nil))
	newClient(b, srv, acct.APIKey).submit(json.RawMessage(body)) // one answer checked against the contract

	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost, tr.MaxConnsPerHost = 1100, 1100
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	send := func(method, path string, body []byte) func() (int, time.Duration, error) {
		return func() (int, time.Duration, error) {
			req, _ := http.NewRequest(method, srv.Base+path, bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+acct.APIKey)
			req.Header.Set("Content-Type", "application/json")
			t0 := time.Now()
			resp, err := hc.Do(req)
			if err != nil {
				return 0, 0, err
			}
			var sink [512]byte
			for {
				if _, err := resp.Body.Read(sink[:]); err != nil {
					break
				}
			}
			_ = resp.Body.Close()
			return resp.StatusCode, time.Since(t0), nil
		}
	}
	submit := send(http.MethodPost, "/jobs", body)

	f := &loadFigures{}
	const clients = 32
	// The baseline, side by side: the same clients on GET /healthz, which answers without the
	// store, show what HTTP and the load generator alone allow on this machine.
	base := drive(clients, duration/2, http.StatusOK, send(http.MethodGet, "/healthz", nil))
	f.baseline = float64(base.ok) / base.elapsed.Seconds()

	cpu0 := srv.cpuUsage()
	run := drive(clients, duration, http.StatusCreated, submit)
	f.accepted, f.refused, f.failed, f.elapsed = run.ok, run.refused, run.failed, run.elapsed
	if cpu := srv.cpuUsage(); f.accepted > 0 {
		per := func(a, b time.Duration) time.Duration { return (b - a) / time.Duration(f.accepted) }
		f.cpuServer, f.cpuPostgres, f.cpuLoad = per(cpu0.server, cpu.server), per(cpu0.postgres, cpu.postgres), per(cpu0.self, cpu.self)
	}
	latencies := run.latencies
	f.p50, f.p99, f.max = percentile(latencies, 50), percentile(latencies, 99), percentile(latencies, 100)

	// The burst: 1,000 submits released together.
	const burst = 1000
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		gate     = make(chan struct{})
		burstLat []time.Duration
	)
	for range burst {
		wg.Go(func() {
			<-gate
			code, d, err := submit()
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil || code >= 500:
				f.burstFailed++
			case code == http.StatusCreated:
				f.burstAccepted++
				burstLat = append(burstLat, d)
			}
		})
	}
	close(gate)
	wg.Wait()
	f.burstMedian, f.burstLast = percentile(burstLat, 50), percentile(burstLat, 100)

	f.ledgerExact = ledgerExact(b, srv, acct.APIKey, 1+f.accepted+f.burstAccepted)
	ok = true
	return f
}

// driven is what drive counted.
type driven struct {
	ok, refused, failed int64
	elapsed             time.Duration
	latencies           []time.Duration // of the ok answers
}

// drive has clients keep-alive clients call send in a loop for d: an answer with status want
// is ok, another below 500 refused, a 5xx or a transport error failed.
func drive(clients int, d time.Duration, want int, send func() (int, time.Duration, error)) driven {
	var (
		r    driven
		mu   sync.Mutex
		wg   sync.WaitGroup
		stop atomic.Bool
	)
	start := time.Now()
	for range clients {
		wg.Go(func() {
			var mine []time.Duration
			for !stop.Load() {
				code, d, err := send()
				switch {
				case err != nil || code >= 500:
					atomic.AddInt64(&r.failed, 1)
				case code == want:
					atomic.AddInt64(&r.ok, 1)
					mine = append(mine, d)
				default:
					atomic.AddInt64(&r.refused, 1)
				}
			}
			mu.Lock()
			r.latencies = append(r.latencies, mine...)
			mu.Unlock()
		})
	}
	time.Sleep(d) // the run's length: the clients work until it ends
	stop.Store(true)
	wg.Wait()
	r.elapsed = time.Since(start)
	return r
}

// ledgerExact checks the account: its balance is the sum of its ledger entries, and it has
// exactly want jobs.
func ledgerExact(b *testing.B, srv *server, key string, want int64) bool {
	b.Helper()
	c := newClient(b, srv, key)
	var acc struct {
		Balance struct{ Amount int64 } `json:"balance"`
	}
	c.do(http.MethodGet, "/account", nil, nil).decode(b, http.StatusOK, &acc)
	var sum int64
	for cursor := ""; ; {
		var page struct {
			Data []struct {
				Amount struct{ Amount int64 } `json:"amount"`
			} `json:"data"`
			Pagination struct{ NextCursor *string } `json:"pagination"`
		}
		if r := c.do(http.MethodGet, "/account/ledger?limit=100"+cursorParam(cursor), nil, nil); r.Status != http.StatusOK || json.Unmarshal(r.Body, &page) != nil {
			b.Fatalf("ledger: %d %s", r.Status, r.Body)
		}
		for _, e := range page.Data {
			sum += e.Amount.Amount
		}
		if page.Pagination.NextCursor == nil {
			break
		}
		cursor = *page.Pagination.NextCursor
	}
	var jobs int64
	for cursor := ""; ; {
		var page struct {
			Data       []json.RawMessage `json:"data"`
			Pagination struct{ NextCursor *string }
		}
		if r := c.do(http.MethodGet, "/jobs?limit=100"+cursorParam(cursor), nil, nil); r.Status != http.StatusOK || json.Unmarshal(r.Body, &page) != nil {
			b.Fatalf("jobs: %d %s", r.Status, r.Body)
		}
		jobs += int64(len(page.Data))
		if page.Pagination.NextCursor == nil {
			break
		}
		cursor = *page.Pagination.NextCursor
	}
	if sum != acc.Balance.Amount || jobs != want {
		b.Logf("ledger: entries sum to %d, balance %d; %d jobs stored, %d accepted", sum, acc.Balance.Amount, jobs, want)
		return false
	}
	return true
}

func cursorParam(c string) string {
	if c == "" {
		return ""
	}
	return "&cursor=" + c
}

// percentile is the p-th percentile of ds (100: the maximum).
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[min(max(i-1, 0), len(s)-1)]
}
