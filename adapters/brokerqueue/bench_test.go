package brokerqueue_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/brokerqueue"
	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// enteringQueue tells when a claim has reached the control plane's queue.
type enteringQueue struct {
	workqueue.Queue
	entered chan struct{}
}

func (q *enteringQueue) Claim(ctx context.Context, p workqueue.ClaimParams) ([]workqueue.Assignment, error) {
	select {
	case q.entered <- struct{}{}:
	default:
	}
	return q.Queue.Claim(ctx, p)
}

// BenchmarkRoundTrip measures the broker transport between a worker and a control plane over
// each broker (the control plane in memory, so that the figures are the transport's):
//
//   - claim: a claim of a waiting job, from the call to the assignment in the worker's hands;
//   - dispatch: a worker's claim already waiting at the control plane, from the submit of a
//     job to its assignment in the worker's hands (dispatch), and on to the acknowledged first
//     heartbeat that makes the job running (running): the dispatch latency.
//
// Median and p99 are reported in milliseconds; run with -benchtime=300x or more for a p99
// worth reading.
func BenchmarkRoundTrip(b *testing.B) {
	for _, pl := range places {
		b.Run(pl.name, func(b *testing.B) {
			ctx := context.Background()
			p := pl.newPlace(b)
			h := controlPlane(b)
			queue := &enteringQueue{Queue: h.Runs.As(workqueue.EnvToken), entered: make(chan struct{}, 1)}
			serve(b, p, queue, nil)
			c := client(b, p, brokerqueue.ClientConfig{Worker: "bench"})
			acct, _ := h.Open(b, "", account.PlanPro, 1<<40)
			submit := func() {
				if _, err := h.Submit.Submit(ctx, acct, jobtype.Request{Type: "ffmpeg",
					Params: json.RawMessage(`{"command":"ffmpeg -f lavfi -i testsrc=duration=1 out.mp4"}`)}); err != nil {
					b.Fatal(err)
				}
			}
			// finish ends a claimed job, so that the plan's concurrency cap never holds a claim.
			finish := func(as []workqueue.Assignment, err error) {
				if err != nil || len(as) != 1 {
					b.Fatalf("claim: %v %v", as, err)
				}
				if err := c.Report(ctx, as[0].Lease, workqueue.Result{Failure: &workqueue.Failure{Kind: workqueue.KindExit}}); err != nil {
					b.Fatal(err)
				}
			}

			b.Run("claim", func(b *testing.B) {
				took := make([]time.Duration, 0, b.N)
				for b.Loop() {
					submit()
					start := time.Now()
					as, err := c.Claim(ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 1})
					took = append(took, time.Since(start))
					finish(as, err)
				}
				report(b, "", took)
			})

			b.Run("dispatch", func(b *testing.B) {
				dispatch := make([]time.Duration, 0, b.N)
				running := make([]time.Duration, 0, b.N)
				type claimed struct {
					as  []workqueue.Assignment
					err error
				}
				got := make(chan claimed, 1)
				for b.Loop() {
					go func() {
						as, err := c.Claim(ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 1, Wait: 20 * time.Second})
						got <- claimed{as, err}
					}()
					<-queue.entered
					start := time.Now()
					submit()
					r := <-got
					dispatch = append(dispatch, time.Since(start))
					if r.err != nil || len(r.as) != 1 {
						b.Fatalf("claim: %v %v", r.as, r.err)
					}
					if _, err := c.Heartbeat(ctx, workqueue.Beat{Lease: r.as[0].Lease}); err != nil {
						b.Fatal(err)
					}
					running = append(running, time.Since(start))
					finish(r.as, r.err)
				}
				report(b, "dispatch-", dispatch)
				report(b, "running-", running)
			})
		})
	}
}

// report adds the median and the 99th percentile of took, in milliseconds.
func report(b *testing.B, prefix string, took []time.Duration) {
	if len(took) == 0 {
		return
	}
	slices.Sort(took)
	at := func(q float64) float64 {
		i := int(q*float64(len(took))+0.999999) - 1
		return float64(took[max(i, 0)]) / float64(time.Millisecond)
	}
	b.ReportMetric(at(0.5), prefix+"p50-ms")
	b.ReportMetric(at(0.99), prefix+"p99-ms")
}
