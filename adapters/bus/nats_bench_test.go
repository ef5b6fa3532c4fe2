package bus_test

import (
	"context"
	"testing"

	"github.com/mediajobs/mediajobs/adapters/bus"
)

// BenchmarkNATSPublishDeliver is the time from Publish on one replica to the handler on
// another, one message at a time: the delay a cancel adds before FFmpeg is killed. Target on
// loopback: under a millisecond.
func BenchmarkNATSPublishDeliver(b *testing.B) {
	stream := natsStream(b)
	open := func() *bus.Bus {
		bb, err := bus.OpenNATS(bus.NATSConfig{URL: natsURL(), Stream: stream}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = bb.Close() })
		return bb
	}
	pub, sub := open(), open()
	got := make(chan struct{}, 1)
	ctx := context.Background()
	if err := sub.Subscribe(b.Context(), "bench.cancel", func(context.Context, []byte) error {
		got <- struct{}{}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	payload := []byte("job_0123456789abcdef")
	for b.Loop() {
		if err := pub.Publish(ctx, "bench.cancel", payload); err != nil {
			b.Fatal(err)
		}
		<-got
	}
}
