package brokerqueue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mediajobs/mediajobs/adapters/brokerqueue"
	"github.com/mediajobs/mediajobs/adapters/sqlstore/pgtest"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// A Client and a Server leave no goroutine behind once closed, even with a claim waiting for
// work at both ends. Not parallel: goleak sees every goroutine of the process.
func TestNoGoroutineLeft(t *testing.T) {
	for _, pl := range places {
		t.Run(pl.name, func(t *testing.T) {
			if pl.name == "PostgreSQL" {
				pgtest.Require(t) // its shared admin connection opens before the snapshot
			}
			if pl.name == "NATS" {
				requireNATS(t)
			}
			before := goleak.IgnoreCurrent()
			t.Cleanup(func() { goleak.VerifyNone(t, before) }) // the first cleanup runs last
			ctx := context.Background()
			p := pl.newPlace(t)
			h := controlPlane(t)
			s, err := brokerqueue.NewServer(p.dial(t), brokerqueue.SharedToken(h.Runs.As(workqueue.EnvToken), token), quiet())
			if err != nil {
				t.Fatal(err)
			}
			ran := make(chan error, 1)
			go func() { ran <- s.Run(ctx) }()
			<-s.Ready()
			c, err := brokerqueue.NewClient(p.dial(t), brokerqueue.ClientConfig{Token: token, Worker: "leak", Log: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			qh := h.QueueHarness(t, c)
			qh.Submit(t, job.ClassCPU)
			as, err := c.Claim(ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 1})
			if err != nil || len(as) != 1 {
				t.Fatalf("claim: %v %v", as, err)
			}
			if _, err := c.Heartbeat(ctx, workqueue.Beat{Lease: as[0].Lease}); err != nil {
				t.Fatal(err)
			}
			if err := c.Report(ctx, as[0].Lease, workqueue.Result{Failure: &workqueue.Failure{Kind: workqueue.KindExit}}); err != nil {
				t.Fatal(err)
			}
			// A long poll in progress when the client closes.
			polled := make(chan error, 1)
			go func() {
				_, err := c.Claim(ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 1, Wait: 20 * time.Second})
				polled <- err
			}()
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if err := <-polled; !errors.Is(err, brokerqueue.ErrClosed) {
				t.Fatalf("the claim waiting when the client closed: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := <-ran; err != nil {
				t.Fatal(err)
			}
		})
	}
}
