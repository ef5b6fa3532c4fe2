package brokerqueue_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/mediajobs/mediajobs/adapters/brokerqueue"
	"github.com/mediajobs/mediajobs/adapters/httpapi"
	"github.com/mediajobs/mediajobs/adapters/sqlstore/pgtest"
	"github.com/mediajobs/mediajobs/adapters/urlsign"
	"github.com/mediajobs/mediajobs/contracts"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/service/servicetest"
	"github.com/mediajobs/mediajobs/core/workqueue"
	"github.com/mediajobs/mediajobs/core/workqueue/workqueuetest"
	"github.com/mediajobs/mediajobs/validator"

	"github.com/mediajobs/mediajobs/adapters/testenv"
	"github.com/mediajobs/mediajobs/adapters/testservices"
)

const token = "worker-token-of-the-test"

// natsServer is the NATS of the test binary: the local one on 127.0.0.1:4222, or a container.
var natsServer = sync.OnceValues(testservices.NATSEndpoint)

// natsURL is natsServer's URL; requireNATS has made sure there is one.
func natsURL() string { u, _ := natsServer(); return u }

// place is one broker deployment: dial connects one more Server or Client to it. The GoChannel
// place hands every caller the same in-process broker.
type place struct {
	name string
	dial func(t testing.TB) brokerqueue.Broker
}

// places are the brokers under test; newPlace makes a fresh one (a stream or a schema of its
// own), skipping the test when its server does not answer.
var places = []struct {
	name     string
	newPlace func(t testing.TB) place
}{
	{"GoChannel", goChannel},
	{"NATS", natsPlace},
	{"PostgreSQL", postgresPlace},
}

func goChannel(testing.TB) place {
	b := brokerqueue.NewGoChannel()
	return place{name: "GoChannel", dial: func(testing.TB) brokerqueue.Broker { return b }}
}

// natsPlace is a stream of the test's own, deleted when the test ends.
func natsPlace(t testing.TB) place {
	t.Helper()
	p, _ := natsStream(t)
	return p
}

// natsStream is natsPlace, with its stream's name.
func natsStream(t testing.TB) (place, string) {
	t.Helper()
	requireNATS(t)
	stream := "BQTEST_" + randomHex(6)
	t.Cleanup(func() {
		nc, err := nats.Connect(natsURL())
		if err != nil {
			t.Errorf("delete stream %s: %v", stream, err)
			return
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err == nil {
			err = js.DeleteStream(context.Background(), stream)
		}
		if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Errorf("delete stream %s: %v", stream, err)
		}
	})
	return place{name: "NATS", dial: func(t testing.TB) brokerqueue.Broker {
		t.Helper()
		b, err := brokerqueue.DialNATS(context.Background(), brokerqueue.NATSConfig{URL: natsURL(), Stream: stream}, quiet())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}}, stream
}

func requireNATS(t testing.TB) {
	t.Helper()
	if _, err := natsServer(); err != nil {
		testenv.Missing(t, "NATS JetStream on 127.0.0.1:4222 (scripts/services.sh starts it)", err)
	}
}

// postgresPlace is a schema of the test's own, dropped when the test ends.
func postgresPlace(t testing.TB) place {
	t.Helper()
	dsn := pgtest.Schema(t, "brokerqueue_")
	return place{name: "PostgreSQL", dial: func(t testing.TB) brokerqueue.Broker {
		t.Helper()
		b, err := brokerqueue.DialPostgres(context.Background(), brokerqueue.PostgresConfig{URL: dsn}, quiet())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// logBuffer is a log the test can read.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// controlPlane is an in-memory control plane whose REST API (with the runner routes that
// serve assets and outputs) listens on loopback; its assignments carry that API's URLs.
func controlPlane(t testing.TB) *servicetest.Harness {
	t.Helper()
	types, err := jobtype.NewRegistry(ffmpegjob.Type{})
	if err != nil {
		t.Fatal(err)
	}
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	h := servicetest.New(t, servicetest.Options{BaseURL: srv.URL, Types: types, WorkerToken: token})
	workers := h.Workers
	if token == "" {
		workers = nil
	}
	handler = httpapi.New(httpapi.UseCases{Auth: h.Auth, Submit: h.Submit, Jobs: h.Jobs, Cancel: h.Cancel, Batches: h.Batches,
		Uploads: h.Uploads, Webhooks: h.Webhooks, Credits: h.Credits, Types: types, Runs: h.Runs, Workers: workers, Idempotency: h.Idempotency},
		httpapi.Options{Verifier: noVerifier{}, Validate: validator.Validate, OpenAPI: contracts.OpenAPIJSON(),
			Logger: quiet()})
	return h
}

type noVerifier struct{}

func (noVerifier) Verify(urlsign.Kind, string, string, string, time.Time) error { return nil }
func (noVerifier) VerifyMember(string, string, time.Time) (time.Time, error)    { return time.Time{}, nil }
func (noVerifier) MemberToken(string, time.Time, time.Time) string              { return "t" }

// serve runs a Server of queue on a new connection to p until the test ends.
func serve(t testing.TB, p place, queue workqueue.Queue, log *slog.Logger) *brokerqueue.Server {
	t.Helper()
	if log == nil {
		log = quiet()
	}
	s, err := brokerqueue.NewServer(p.dial(t), brokerqueue.SharedToken(queue, token), log)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Run(context.Background()) }()
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("server Close: %v", err)
		}
		if err := <-errc; err != nil {
			t.Errorf("server Run: %v", err)
		}
	})
	select {
	case <-s.Ready():
	case err := <-errc:
		t.Fatalf("server Run: %v", err)
	}
	return s
}

// client connects a Client to p until the test ends.
func client(t testing.TB, p place, cfg brokerqueue.ClientConfig) *brokerqueue.Client {
	t.Helper()
	if cfg.Token == "" {
		cfg.Token = token
	}
	if cfg.Log == nil {
		cfg.Log = quiet()
	}
	c, err := brokerqueue.NewClient(p.dial(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("client Close: %v", err)
		}
	})
	return c
}

// TestSuite runs the work queue's shared suite on every broker: a real Server over an
// in-memory control plane, the Client talking to it through the broker, and the bytes over
// HTTP on loopback.
func TestSuite(t *testing.T) {
	t.Parallel()
	for _, pl := range places {
		t.Run(pl.name, func(t *testing.T) {
			t.Parallel()
			workqueuetest.TestQueue(t, workqueuetest.Features{}, func(t *testing.T) workqueuetest.Harness {
				p := pl.newPlace(t)
				h := controlPlane(t)
				serve(t, p, h.Runs.As(workqueue.EnvToken), nil)
				return h.QueueHarness(t, client(t, p, brokerqueue.ClientConfig{Worker: "suite"}))
			})
		})
	}
}

// countingQueue counts the calls that reach the control plane.
type countingQueue struct {
	workqueue.Queue
	claims atomic.Int64
}

func (q *countingQueue) Claim(ctx context.Context, p workqueue.ClaimParams) ([]workqueue.Assignment, error) {
	q.claims.Add(1)
	return q.Queue.Claim(ctx, p)
}

// Two control-plane replicas in one consumer group handle each call once: every claim is
// answered once, and no job reaches two workers.
func TestReplicasHandleEachCallOnce(t *testing.T) {
	t.Parallel()
	for _, pl := range places[1:] { // GoChannel has no consumer groups
		t.Run(pl.name, func(t *testing.T) {
			t.Parallel()
			p := pl.newPlace(t)
			h := controlPlane(t)
			queue := &countingQueue{Queue: h.Runs.As(workqueue.EnvToken)}
			serve(t, p, queue, nil)
			serve(t, p, queue, nil)
			qh := h.QueueHarness(t, nil)
			const jobs, workers = 20, 4
			for range jobs {
				qh.Submit(t, job.ClassCPU)
			}
			var (
				mu    sync.Mutex
				got   = map[string]int{}
				calls atomic.Int64
				wg    sync.WaitGroup
			)
			for range workers {
				c := client(t, p, brokerqueue.ClientConfig{Worker: "replicas"})
				wg.Go(func() {
					for {
						calls.Add(1)
						as, err := c.Claim(context.Background(), workqueue.ClaimParams{Class: job.ClassCPU, Max: 1})
						if err != nil {
							t.Error(err)
							return
						}
						if len(as) == 0 {
							return
						}
						mu.Lock()
						got[as[0].Lease.JobID]++
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if len(got) != jobs {
				t.Fatalf("%d of %d jobs claimed", len(got), jobs)
			}
			for id, n := range got {
				if n != 1 {
					t.Fatalf("job %s claimed %d times", id, n)
				}
			}
			if handled, sent := queue.claims.Load(), calls.Load(); handled != sent {
				t.Fatalf("the control plane handled %d claims; the workers sent %d", handled, sent)
			}
		})
	}
}

// A wrong or missing worker token is refused with a clear error, logged, and claims nothing.
func TestWorkerTokenIsRequired(t *testing.T) {
	t.Parallel()
	for _, pl := range places {
		t.Run(pl.name, func(t *testing.T) {
			t.Parallel()
			p := pl.newPlace(t)
			h := controlPlane(t)
			var log logBuffer
			serve(t, p, h.Runs.As(workqueue.EnvToken), slog.New(slog.NewTextHandler(&log, nil)))
			qh := h.QueueHarness(t, nil)
			id := qh.Submit(t, job.ClassCPU)
			bad := []string{"wrong", token + "x", strings.ToUpper(token)}
			for _, tok := range bad {
				c := client(t, p, brokerqueue.ClientConfig{Token: tok, Worker: "intruder"})
				if _, err := c.Claim(context.Background(), workqueue.ClaimParams{Class: job.ClassCPU, Max: 1}); !errors.Is(err, brokerqueue.ErrUnauthorized) {
					t.Fatalf("token %q: %v", tok, err)
				}
				if _, err := c.Heartbeat(context.Background(), workqueue.Beat{Lease: workqueue.Lease{JobID: id, Attempt: 1, Token: "x"}}); !errors.Is(err, brokerqueue.ErrUnauthorized) {
					t.Fatalf("token %q: heartbeat: %v", tok, err)
				}
			}
			if n := strings.Count(log.String(), "runner call refused"); n != 2*len(bad) {
				t.Fatalf("%d refusals logged, want %d:\n%s", n, 2*len(bad), log.String())
			}
			if !strings.Contains(log.String(), "worker=intruder-") {
				t.Fatalf("the refusal does not name the worker:\n%s", log.String())
			}
			c := client(t, p, brokerqueue.ClientConfig{Worker: "rightful"})
			if as, err := c.Claim(context.Background(), workqueue.ClaimParams{Class: job.ClassCPU, Max: 5}); err != nil || len(as) != 1 || as[0].Lease.JobID != id {
				t.Fatalf("the right token claims the job: %v %v", as, err)
			}
		})
	}
}

// With no control plane running, a call fails after its timeout instead of hanging, and the
// job it would have claimed stays waiting.
func TestStoppedServerFailsTheCall(t *testing.T) {
	t.Parallel()
	for _, pl := range places {
		t.Run(pl.name, func(t *testing.T) {
			t.Parallel()
			p := pl.newPlace(t)
			h := controlPlane(t)
			s := serve(t, p, h.Runs.As(workqueue.EnvToken), nil)
			c := client(t, p, brokerqueue.ClientConfig{Worker: "orphan", Timeout: 300 * time.Millisecond})
			// While the server runs the client is answered; on a loaded machine a broker that
			// polls (PostgreSQL) may miss the short timeout once, so wait for one answer.
			for give := time.Now().Add(15 * time.Second); ; {
				_, err := c.Claim(context.Background(), workqueue.ClaimParams{Class: job.ClassCPU, Max: 1})
				if err == nil {
					break
				}
				if !errors.Is(err, brokerqueue.ErrNoAnswer) || time.Now().After(give) {
					t.Fatalf("claim while the server runs: %v", err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			qh := h.QueueHarness(t, nil)
			id := qh.Submit(t, job.ClassCPU)
			_, err := c.Claim(context.Background(), workqueue.ClaimParams{Class: job.ClassCPU, Max: 1, Wait: 200 * time.Millisecond})
			if !errors.Is(err, brokerqueue.ErrNoAnswer) {
				t.Fatalf("claim with the server stopped: %v", err)
			}
			if err := c.Report(context.Background(), workqueue.Lease{JobID: id, Attempt: 1, Token: "t"}, workqueue.Result{}); !errors.Is(err, brokerqueue.ErrNoAnswer) {
				t.Fatalf("report with the server stopped: %v", err)
			}
			if j := qh.Job(t, id); j.Status != job.StatusWaiting {
				t.Fatalf("the job is %s", j.Status)
			}
		})
	}
}

// On the durable brokers a call made while no control plane runs waits for one, and is
// answered when it starts, if its worker still waits.
func TestCallWaitsForTheControlPlane(t *testing.T) {
	t.Parallel()
	for _, pl := range places[1:] { // GoChannel keeps nothing
		t.Run(pl.name, func(t *testing.T) {
			t.Parallel()
			p := pl.newPlace(t)
			h := controlPlane(t)
			qh := h.QueueHarness(t, nil)
			id := qh.Submit(t, job.ClassCPU)
			c := client(t, p, brokerqueue.ClientConfig{Worker: "early", Timeout: time.Minute})
			type answer struct {
				as  []workqueue.Assignment
				err error
			}
			got := make(chan answer, 1)
			go func() {
				as, err := c.Claim(context.Background(), workqueue.ClaimParams{Class: job.ClassCPU, Max: 1})
				got <- answer{as, err}
			}()
			// The call is on its way or waiting in the broker; the control plane starts now.
			serve(t, p, h.Runs.As(workqueue.EnvToken), nil)
			a := <-got
			if a.err != nil || len(a.as) != 1 || a.as[0].Lease.JobID != id {
				t.Fatalf("the waiting call got %v %v", a.as, a.err)
			}
		})
	}
}

// blockingQueue holds every claim until release is closed, then claims as if the store had
// finished its work just as the call's deadline passed.
type blockingQueue struct {
	workqueue.Queue
	release chan struct{}
}

func (q *blockingQueue) Claim(ctx context.Context, p workqueue.ClaimParams) ([]workqueue.Assignment, error) {
	<-q.release
	return q.Queue.Claim(context.WithoutCancel(ctx), p)
}

// A claim whose answer comes after its worker gave up hands its jobs back at once: they do not
// sit dispatched until their lease lapses.
func TestLateClaimIsHandedBack(t *testing.T) {
	t.Parallel()
	p := goChannel(t)
	h := controlPlane(t)
	queue := &blockingQueue{Queue: h.Runs.As(workqueue.EnvToken), release: make(chan struct{})}
	serve(t, p, queue, nil)
	qh := h.QueueHarness(t, nil)
	id := qh.Submit(t, job.ClassCPU)
	c := client(t, p, brokerqueue.ClientConfig{Worker: "impatient", Timeout: 1500 * time.Millisecond})
	if _, err := c.Claim(context.Background(), workqueue.ClaimParams{Class: job.ClassCPU, Max: 1}); !errors.Is(err, brokerqueue.ErrNoAnswer) {
		t.Fatalf("claim: %v", err)
	}
	close(queue.release)
	eventually(t, func() bool {
		j := qh.Job(t, id)
		return j.Status == job.StatusWaiting && j.Requeues == 1
	}, "the job to be handed back")
}

// A client refuses what it cannot send, before the broker sees it.
func TestClientRefusals(t *testing.T) {
	t.Parallel()
	p := goChannel(t)
	c := client(t, p, brokerqueue.ClientConfig{Worker: "w"})
	if _, err := c.Claim(context.Background(), workqueue.ClaimParams{Class: "tpu", Max: 1}); err == nil || !strings.Contains(err.Error(), `class "tpu"`) {
		t.Fatalf("claim of class tpu: %v", err)
	}
	if as, err := c.Claim(context.Background(), workqueue.ClaimParams{Class: job.ClassCPU}); as != nil || err != nil {
		t.Fatalf("claim of nothing: %v %v", as, err)
	}
	l := workqueue.Lease{JobID: "job_x", Attempt: 1, Token: "t"}
	if _, err := c.OpenAsset(context.Background(), l, "ast_1"); !errors.Is(err, workqueue.ErrLeaseRefused) {
		t.Fatalf("asset of a lease never claimed: %v", err)
	}
	if _, err := brokerqueue.NewClient(p.dial(t), brokerqueue.ClientConfig{}); err == nil {
		t.Fatal("a client without a token")
	}
	if _, err := brokerqueue.NewServer(p.dial(t), nil, nil); err == nil {
		t.Fatal("a server without an authenticator")
	}
	for _, u := range []string{"http://127.0.0.1:8080", "redis://127.0.0.1", "127.0.0.1:4222"} {
		if _, err := brokerqueue.OpenClient(context.Background(), u, token, "w", nil); err == nil || !strings.Contains(err.Error(), "nats://") {
			t.Errorf("OpenClient(%q): %v", u, err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Heartbeat(context.Background(), workqueue.Beat{Lease: l}); !errors.Is(err, brokerqueue.ErrClosed) {
		t.Fatalf("heartbeat on a closed client: %v", err)
	}
}

// eventually polls cond until it holds, failing the test after a generous deadline.
func eventually(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond) // the poll interval of a wait on cond
	}
}
