package integration

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/testservices"
)

// TestReadyzFollowsTheBroker: a replica on a NATS bus is ready while NATS answers, answers 503
// naming the broker while it is stopped (the process itself stays alive), and is ready again by
// itself once NATS is back.
func TestReadyzFollowsTheBroker(t *testing.T) {
	t.Parallel()
	testservices.RequireImage(t, testservices.NATSImage)
	ctx := context.Background()
	nats, err := testservices.NATS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nats.Stop(context.Background()) })
	srv := startServer(t, serverOpts{Unthrottled: true, Backend: sqliteBackend, Env: map[string]string{"MEDIAJOBS_BUS_URL": nats.URL}})
	c := newClient(t, srv, "")
	readyz := func() response { return c.do(http.MethodGet, "/readyz", nil, nil) }
	if r := readyz(); r.Status != http.StatusOK {
		t.Fatalf("readyz with NATS up: %d %s", r.Status, r.Body)
	}

	if out, err := docker("pause", nats.ContainerID()); err != nil {
		t.Fatalf("docker pause: %v %s", err, out)
	}
	waitUntil(t, "readyz 503 with NATS paused", time.Minute, func() bool { return readyz().Status == http.StatusServiceUnavailable })
	if e := readyz().errorOf(t, http.StatusServiceUnavailable); e.Code != "SERVICE_UNAVAILABLE" || !strings.Contains(e.Message, "broker") {
		t.Errorf("readyz with NATS paused: %+v; want SERVICE_UNAVAILABLE naming the broker", e)
	}
	if r := c.do(http.MethodGet, "/healthz", nil, nil); r.Status != http.StatusOK {
		t.Errorf("healthz with NATS paused: %d; the process is alive", r.Status)
	}

	if out, err := docker("unpause", nats.ContainerID()); err != nil {
		t.Fatalf("docker unpause: %v %s", err, out)
	}
	waitUntil(t, "readyz 200 with NATS back", time.Minute, func() bool { return readyz().Status == http.StatusOK })
}

// TestDatabaseAwayIsUnavailable: while the replica's PostgreSQL is stopped, a client's request
// that needs it is answered 503 SERVICE_UNAVAILABLE with Retry-After (not 500), readyz says the
// store does not answer, and once PostgreSQL is back the same request succeeds, with nothing
// done by hand.
func TestDatabaseAwayIsUnavailable(t *testing.T) {
	t.Parallel()
	testservices.RequireImage(t, testservices.PostgresImage)
	ctx := context.Background()
	// On a port of its own, which it keeps across the stop and start below. Started twice at
	// most: beside the compose deployment's containers, a loaded CI run's start of it timed out
	// twice while the same test alone started it in seconds.
	pg, err := testservices.PostgresWith(ctx, testservices.OnHostPort("5432/tcp", freePort(t)))
	if err != nil {
		t.Logf("starting PostgreSQL again: %v", err)
		pg, err = testservices.PostgresWith(ctx, testservices.OnHostPort("5432/tcp", freePort(t)))
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop(context.Background()) })
	srv := startServer(t, serverOpts{Unthrottled: true, Backend: sqliteBackend, Env: map[string]string{"MEDIAJOBS_DATABASE_URL": pg.URL, "MEDIAJOBS_RUNNER": "false"}})
	c := newClient(t, srv, createAccount(t, srv, "pro").APIKey)
	c.do(http.MethodGet, "/jobs", nil, nil).decode(t, http.StatusOK, nil)

	// Stopped, not paused: the server's port refuses connections, as during a restart.
	if out, err := docker("stop", pg.ContainerID()); err != nil {
		t.Fatalf("docker stop: %v %s", err, out)
	}
	r := c.do(http.MethodGet, "/jobs", nil, nil)
	if e := r.errorOf(t, http.StatusServiceUnavailable); e.Code != "SERVICE_UNAVAILABLE" || r.Header.Get("Retry-After") == "" {
		t.Errorf("GET /jobs with PostgreSQL stopped: %+v (Retry-After %q); want SERVICE_UNAVAILABLE with Retry-After", e, r.Header.Get("Retry-After"))
	}
	r = c.do(http.MethodPost, "/jobs", ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1 -pix_fmt yuv420p out.mp4", nil, nil), nil)
	if e := r.errorOf(t, http.StatusServiceUnavailable); e.Code != "SERVICE_UNAVAILABLE" {
		t.Errorf("POST /jobs with PostgreSQL stopped: %+v; want SERVICE_UNAVAILABLE", e)
	}
	waitUntil(t, "readyz 503", 30*time.Second, func() bool {
		return c.do(http.MethodGet, "/readyz", nil, nil).Status == http.StatusServiceUnavailable
	})

	if out, err := docker("start", pg.ContainerID()); err != nil {
		t.Fatalf("docker start: %v %s", err, out)
	}
	waitUntil(t, "GET /jobs answered again", time.Minute, func() bool {
		return c.do(http.MethodGet, "/jobs", nil, nil).Status == http.StatusOK
	})
}
