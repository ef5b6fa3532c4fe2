package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// scripted is one answer of fakeAPI.
type scripted struct {
	status     int
	job        *Job   // the data of a 200
	code       Code   // the error code of anything else
	retryAfter string // Retry-After of a 429
	garbage    bool   // answer bytes that are not HTTP: a transport failure
}

// fakeAPI is a stand-in for GET /jobs/{id} that plays a script: the waits, rate limits and
// failures Wait must ride out cannot be produced on demand by the real service. It answers at
// once, as a server without long polls would; a test's clock says when the server held one. Wait against the
// real server is tested in integration (TestClientAgainstServer).
type fakeAPI struct {
	t      *testing.T
	mu     sync.Mutex
	script []scripted
	reads  int
	keys   []string
	waits  []string // the wait of each read
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys = append(f.keys, r.Header.Get("Authorization"))
	f.waits = append(f.waits, r.URL.Query().Get("wait"))
	if r.Method != http.MethodGet || r.URL.Path != "/jobs/job_1" {
		f.t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if f.reads >= len(f.script) {
		f.t.Errorf("read %d of job_1, the script has %d answers", f.reads+1, len(f.script))
		w.WriteHeader(http.StatusGone)
		return
	}
	s := f.script[f.reads]
	f.reads++
	if s.garbage {
		// Not a bare hang-up: the transport retries those on a reused connection by itself.
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_, _ = conn.Write([]byte("not http\r\n\r\n"))
			_ = conn.Close()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if s.retryAfter != "" {
		w.Header().Set("Retry-After", s.retryAfter)
	}
	w.WriteHeader(s.status)
	if s.job != nil {
		_ = json.NewEncoder(w).Encode(JobEnvelope{Data: *s.job})
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": string(s.code), "message": "scripted " + strconv.Itoa(s.status)}})
}

func jobAt(status Status, progress float64) *Job {
	j := &Job{ID: "job_1", Type: "ffmpeg", Status: status, CreatedAt: 1}
	if status == StatusRunning {
		j.Progress = &progress
	}
	return j
}

func ok(status Status, progress float64) scripted {
	return scripted{status: http.StatusOK, job: jobAt(status, progress)}
}

func TestWait(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	tests := []struct {
		name       string
		script     []scripted
		opts       []WaitOption
		wantStatus Status
		wantCode   Code // an *APIError with this code
		wantErr    bool // any error
		wantSleeps []time.Duration
		held       bool   // the server holds each answer for the wait asked (the clock says so)
		wantWait   string // the wait each read asks for; "2" when empty (WithProgress's default)
	}{
		{
			name:       "backs off x1.5 up to the cap",
			script:     []scripted{ok(StatusWaiting, 0), ok(StatusDispatched, 0), ok(StatusRunning, 0.1), ok(StatusRunning, 0.5), ok(StatusRunning, 0.8), ok(StatusRunning, 0.9), ok(StatusComplete, 0)},
			wantStatus: StatusComplete,
			wantSleeps: []time.Duration{500 * ms, 750 * ms, 1125 * ms, 1687500 * time.Microsecond, 2000 * ms, 2000 * ms},
		},
		{
			name:       "a server that holds its answers is asked again at once",
			script:     []scripted{ok(StatusWaiting, 0), ok(StatusRunning, 0.5), ok(StatusRunning, 0.9), ok(StatusComplete, 0)},
			held:       true,
			wantStatus: StatusComplete,
		},
		{
			name:       "a longer poll interval is a longer wait per read",
			script:     []scripted{ok(StatusRunning, 0.5), ok(StatusComplete, 0)},
			opts:       []WaitOption{WithPollInterval(time.Second, 5*time.Second)},
			held:       true,
			wantStatus: StatusComplete,
			wantWait:   "5",
		},
		{
			name:       "an interval over a minute waits the API's longest",
			script:     []scripted{ok(StatusRunning, 0.5), ok(StatusComplete, 0)},
			opts:       []WaitOption{WithPollInterval(time.Second, 2*time.Minute)},
			held:       true,
			wantStatus: StatusComplete,
			wantWait:   "60",
		},
		{
			name:       "a job already over is one read",
			script:     []scripted{ok(StatusFailed, 0)},
			wantStatus: StatusFailed,
		},
		{
			name:       "honours Retry-After",
			script:     []scripted{ok(StatusRunning, 0.2), {status: http.StatusTooManyRequests, code: CodeRATELIMITED, retryAfter: "7"}, ok(StatusCancelled, 0)},
			wantStatus: StatusCancelled,
			wantSleeps: []time.Duration{500 * ms, 7 * time.Second},
		},
		{
			name:       "a 429 without Retry-After waits a second",
			script:     []scripted{{status: http.StatusTooManyRequests, code: CodeRATELIMITED}, ok(StatusComplete, 0)},
			wantStatus: StatusComplete,
			wantSleeps: []time.Duration{time.Second},
		},
		{
			name:       "rides out 5xx and broken answers",
			script:     []scripted{{status: http.StatusServiceUnavailable, code: CodeINTERNALERROR}, {garbage: true}, ok(StatusComplete, 0)},
			wantStatus: StatusComplete,
			wantSleeps: []time.Duration{500 * ms, 750 * ms},
		},
		{
			name: "gives up after five failures in a row",
			script: []scripted{
				{status: 500, code: CodeINTERNALERROR}, {status: 500, code: CodeINTERNALERROR}, {status: 500, code: CodeINTERNALERROR},
				{status: 500, code: CodeINTERNALERROR}, {status: 500, code: CodeINTERNALERROR}, {status: 500, code: CodeINTERNALERROR},
			},
			wantCode:   CodeINTERNALERROR,
			wantSleeps: []time.Duration{500 * ms, 750 * ms, 1125 * ms, 1687500 * time.Microsecond, 2000 * ms},
		},
		{
			name:     "a refusal is returned at once",
			script:   []scripted{{status: http.StatusNotFound, code: CodeNOTFOUND}},
			wantCode: CodeNOTFOUND,
		},
		{
			name:       "poll interval option",
			script:     []scripted{ok(StatusRunning, 0), ok(StatusRunning, 0), ok(StatusRunning, 0), ok(StatusComplete, 0)},
			opts:       []WaitOption{WithPollInterval(100*ms, 200*ms)},
			wantStatus: StatusComplete,
			wantSleeps: []time.Duration{100 * ms, 150 * ms, 200 * ms},
			wantWait:   "0", // progress more often than a second is polled
		},
		{
			name:       "an interval under a second polls even when the clock says held",
			script:     []scripted{ok(StatusRunning, 0), ok(StatusComplete, 0)},
			opts:       []WaitOption{WithPollInterval(100*ms, 200*ms)},
			held:       true,
			wantStatus: StatusComplete,
			wantSleeps: []time.Duration{100 * ms},
			wantWait:   "0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := &fakeAPI{t: t, script: tt.script}
			srv := httptest.NewServer(api)
			t.Cleanup(srv.Close)
			c, err := New(srv.URL, "mj_test")
			if err != nil {
				t.Fatal(err)
			}
			var sleeps []time.Duration
			var seen []Status
			opts := append([]WaitOption{
				func(cfg *waitConfig) {
					cfg.sleep = func(_ context.Context, d time.Duration) error {
						sleeps = append(sleeps, d)
						return nil
					}
					if tt.held {
						// Every read of the clock is a minute on: each answer took its wait.
						var clock time.Time
						cfg.now = func() time.Time {
							clock = clock.Add(time.Minute)
							return clock
						}
					}
				},
				WithProgress(func(j Job) { seen = append(seen, j.Status) }),
			}, tt.opts...)

			j, err := c.Wait(context.Background(), "job_1", opts...)
			switch {
			case tt.wantCode != "":
				var apiErr *APIError
				if !errors.As(err, &apiErr) || apiErr.Code != tt.wantCode {
					t.Fatalf("Wait error = %v, want an APIError %s", err, tt.wantCode)
				}
			case tt.wantErr:
				if err == nil {
					t.Fatal("Wait returned no error")
				}
			case err != nil:
				t.Fatalf("Wait: %v", err)
			case j.Status != tt.wantStatus:
				t.Fatalf("Wait returned status %s, want %s", j.Status, tt.wantStatus)
			case seen[len(seen)-1] != tt.wantStatus:
				t.Errorf("the last progress call saw %s, want %s", seen[len(seen)-1], tt.wantStatus)
			}
			if diff := cmp.Diff(tt.wantSleeps, sleeps); diff != "" {
				t.Errorf("waits between reads (-want +got):\n%s", diff)
			}
			want := tt.wantWait
			if want == "" {
				want = "2"
			}
			for i, w := range api.waits {
				if w != want {
					t.Errorf("read %d asked to wait %q seconds, want %q", i+1, w, want)
				}
			}
			if api.reads != len(tt.script) {
				t.Errorf("read the job %d times, want %d", api.reads, len(tt.script))
			}
			for _, k := range api.keys {
				if k != "Bearer mj_test" {
					t.Fatalf("Authorization = %q, want the API key", k)
				}
			}
		})
	}
}

// TestWaitLongPoll: without WithProgress, each read asks the server to hold it for
// DefaultLongPoll.
func TestWaitLongPoll(t *testing.T) {
	t.Parallel()
	api := &fakeAPI{t: t, script: []scripted{ok(StatusRunning, 0.5), ok(StatusComplete, 0)}}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, "mj_test")
	if err != nil {
		t.Fatal(err)
	}
	var clock time.Time
	held := func(cfg *waitConfig) {
		cfg.now = func() time.Time { clock = clock.Add(DefaultLongPoll); return clock }
		cfg.sleep = func(context.Context, time.Duration) error { t.Error("Wait slept after a held answer"); return nil }
	}
	if j, err := c.Wait(context.Background(), "job_1", held); err != nil || j.Status != StatusComplete {
		t.Fatalf("Wait = %v, %v; want the complete job", j, err)
	}
	if diff := cmp.Diff([]string{"20", "20"}, api.waits); diff != "" {
		t.Errorf("waits asked (-want +got):\n%s", diff)
	}
}

// TestWaitContext: a done context ends the wait between reads, with the context's error.
func TestWaitContext(t *testing.T) {
	t.Parallel()
	api := &fakeAPI{t: t, script: []scripted{ok(StatusRunning, 0.1)}}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, "mj_test")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	_, err = c.Wait(ctx, "job_1", WithProgress(func(Job) { cancel() }))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait error = %v, want context.Canceled", err)
	}
}
