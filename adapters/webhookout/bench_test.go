package webhookout_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/webhookout"
)

// BenchmarkDeliver measures signed deliveries per second to a local HTTPS receiver, on SQLite,
// with the default pool.
func BenchmarkDeliver(b *testing.B) {
	tb := setup(b)
	tb.endpoint(b, tb.recv.srv.URL)
	tb.recv.arrived = make(chan struct{}, b.N+1)
	for range b.N {
		tb.complete(b)
	}
	d := tb.deliverer(webhookout.Config{})
	b.ResetTimer()
	start := time.Now()
	if n := drain(b, d); n != b.N {
		b.Fatalf("delivered %d, want %d", n, b.N)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "deliveries/s")
}

// BenchmarkCompletionToArrival measures the median delay from a job's completion (its write and
// the event's fan-out, as the relay runs it after the commit) to its job.completed arriving at
// a local HTTPS receiver, with the deliverer running as in the server.
func BenchmarkCompletionToArrival(b *testing.B) {
	tb := setup(b)
	tb.endpoint(b, tb.recv.srv.URL)
	d := tb.deliverer(webhookout.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx)
	}()
	defer func() { cancel(); <-done }()
	delays := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		tb.complete(b)
		d.Wake()
		<-tb.recv.arrived
		delays = append(delays, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(delays)
	b.ReportMetric(float64(delays[len(delays)/2].Microseconds())/1000, "median-ms")
}
