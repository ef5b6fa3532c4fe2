package integration

import (
	"context"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/testenv"
	"github.com/mediajobs/mediajobs/adapters/testservices"
)

// TestReadyzFollowsTheBroker: a replica on a NATS bus is ready while NATS answers, answers 503
// naming the broker while it is stopped (the process itself stays alive), and is ready again by
// itself once NATS is back.
func TestReadyzFollowsTheBroker(t *testing.T) {
	t.Parallel()
	if out, err := exec.Command("docker", "image", "inspect", testservices.NATSImage).CombinedOutput(); err != nil {
		testenv.Missing(t, "the Docker Engine and the image "+testservices.NATSImage+" (make images)", strings.TrimSpace(string(out)))
	}
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
