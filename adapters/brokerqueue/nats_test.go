package brokerqueue_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/mediajobs/mediajobs/adapters/brokerqueue"
	"github.com/mediajobs/mediajobs/adapters/testenv"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/service/servicetest"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// Consumers that vanish under a running control plane and worker (an operator's `nats consumer
// rm`, a JetStream that lost its state) are made again: the calls are answered once more,
// without a restart of either side.
func TestNATSConsumersAreMadeAgain(t *testing.T) {
	t.Parallel()
	p, stream := natsStream(t)
	h := controlPlane(t)
	serve(t, p, h.Runs.As(workqueue.EnvToken), nil)
	c := client(t, p, brokerqueue.ClientConfig{Worker: "survivor", Timeout: 2 * time.Second})
	answered := claimAnswered(c, t.Fatalf)
	eventually(t, answered, "a first answer")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := streamOf(ctx, t, stream)
	var deleted []string
	names := s.ConsumerNames(ctx)
	for name := range names.Name() {
		if err := s.DeleteConsumer(ctx, name); err != nil {
			t.Fatalf("delete consumer %s: %v", name, err)
		}
		deleted = append(deleted, name)
	}
	if err := names.Err(); err != nil {
		t.Fatal(err)
	}
	// The control plane's groups and the worker's reply consumer.
	if len(deleted) < 3 {
		t.Fatalf("deleted only %v", deleted)
	}
	eventually(t, answered, "an answer after the consumers were deleted")
	claimsTheNextJob(t, h, c)
}

// claimAnswered is a claim through c that tells whether it was answered; an error other than
// no answer goes to unexpected: t.Fatalf, or t.Logf where the test expects some (a stream gone
// is one, until a side makes it again).
func claimAnswered(c *brokerqueue.Client, unexpected func(format string, args ...any)) func() bool {
	return func() bool {
		_, err := c.Claim(context.Background(), workqueue.ClaimParams{Class: job.ClassCPU, Max: 1})
		if err != nil && !errors.Is(err, brokerqueue.ErrNoAnswer) {
			unexpected("claim: %v", err)
		}
		return err == nil
	}
}

// claimsTheNextJob holds that the work itself flows through c: a job submitted now is claimed.
func claimsTheNextJob(t *testing.T, h *servicetest.Harness, c *brokerqueue.Client) {
	t.Helper()
	id := h.QueueHarness(t, nil).Submit(t, job.ClassCPU)
	as, err := c.Claim(context.Background(), workqueue.ClaimParams{Class: job.ClassCPU, Max: 1})
	if err != nil || len(as) != 1 || as[0].Lease.JobID != id {
		t.Fatalf("claim after the recovery: %v %v", as, err)
	}
}

// A NATS server that restarts without its store (a container with no volume) has lost the
// stream and every consumer; its clients reconnect to nothing that serves them. The control
// plane and the worker notice the consumers answer no pull, make the stream and the consumers
// again, and the calls are answered once more.
func TestNATSServerThatLostItsStateIsServedAgain(t *testing.T) {
	t.Parallel()
	srv := startNATS(t)
	stream := "BQLOST_" + randomHex(6)
	p := place{name: "NATS", dial: func(t testing.TB) brokerqueue.Broker {
		t.Helper()
		b, err := brokerqueue.DialNATS(context.Background(), brokerqueue.NATSConfig{URL: srv.url, Stream: stream}, quiet())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}}
	h := controlPlane(t)
	serve(t, p, h.Runs.As(workqueue.EnvToken), nil)
	c := client(t, p, brokerqueue.ClientConfig{Worker: "survivor", Timeout: 2 * time.Second})
	answered := claimAnswered(c, t.Logf)
	eventually(t, answered, "a first answer")

	srv.restartEmpty(t)
	eventually(t, answered, "an answer from the server that lost its state")
	claimsTheNextJob(t, h, c)
}

// natsProcess is a nats-server of the test's own, on a port of its own.
type natsProcess struct {
	url, addr, store string
	cmd              *exec.Cmd
}

// startNATS starts Debian's nats-server (scripts/deps.sh installs it) with JetStream, stopped
// when the test ends.
func startNATS(t *testing.T) *natsProcess {
	t.Helper()
	if _, err := exec.LookPath("nats-server"); err != nil {
		if _, serr := os.Stat("/usr/sbin/nats-server"); serr != nil {
			testenv.Missing(t, "nats-server (scripts/deps.sh installs it)", err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	n := &natsProcess{url: "nats://" + addr, addr: addr}
	n.start(t)
	t.Cleanup(func() { n.stop() })
	return n
}

func (n *natsProcess) start(t *testing.T) {
	t.Helper()
	n.store = t.TempDir()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		bin = "/usr/sbin/nats-server"
	}
	host, port, _ := net.SplitHostPort(n.addr)
	n.cmd = exec.Command(bin, "-a", host, "-p", port, "-js", "-sd", n.store)
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		nc, err := nats.Connect(n.url)
		if err == nil {
			js, jerr := jetstream.New(nc)
			if jerr == nil {
				_, jerr = js.AccountInfo(context.Background())
			}
			nc.Close()
			if jerr == nil {
				return
			}
			err = jerr
		}
		if time.Now().After(deadline) {
			t.Fatalf("nats-server on %s did not start: %v", n.addr, err)
		}
		time.Sleep(20 * time.Millisecond) // the poll interval of a wait on the server's start
	}
}

func (n *natsProcess) stop() {
	_ = n.cmd.Process.Kill()
	_ = n.cmd.Wait()
}

// restartEmpty kills the server and starts it again on the same address with an empty store.
func (n *natsProcess) restartEmpty(t *testing.T) {
	t.Helper()
	n.stop()
	n.start(t)
}

// A consumer that stops serving at once, again and again (here deleted as soon as it is made),
// is made again with a growing backoff, not ten times a second: over three seconds, a subject
// is subscribed again at most a handful of times (waits doubling from 100 ms, jittered).
func TestNATSResubscribeBacksOff(t *testing.T) {
	t.Parallel()
	_, stream := natsStream(t)
	var log logBuffer
	b, err := brokerqueue.DialNATS(context.Background(), brokerqueue.NATSConfig{URL: natsURL(), Stream: stream},
		slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	p := place{name: "NATS", dial: func(testing.TB) brokerqueue.Broker { return b }}
	serve(t, p, controlPlane(t).Runs.As(workqueue.EnvToken), nil)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := streamOf(ctx, t, stream)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		names := s.ConsumerNames(ctx)
		for name := range names.Name() {
			_ = s.DeleteConsumer(ctx, name) // gone already, when the broker's own watch came first
		}
		time.Sleep(20 * time.Millisecond) // how often the operator's deletions come
	}
	again := map[string]int{}
	for line := range strings.Lines(log.String()) {
		if strings.Contains(line, "subscribed again to a NATS consumer") {
			_, subject, _ := strings.Cut(line, "subject=")
			again[strings.TrimSpace(subject)]++
		}
	}
	if len(again) == 0 {
		t.Fatalf("no subject was subscribed again; log:\n%s", log.String())
	}
	for subject, n := range again {
		if n > 7 {
			t.Errorf("%s subscribed again %d times in 3 s; want a backoff", subject, n)
		}
	}
}

// streamOf is the stream name as an operator's tools see it, through a connection of its own
// that closes when the test ends.
func streamOf(ctx context.Context, t *testing.T, name string) jetstream.Stream {
	t.Helper()
	nc, err := nats.Connect(natsURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
