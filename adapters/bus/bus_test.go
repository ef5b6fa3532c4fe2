package bus_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/bus"
)

func TestGoChannelDelivers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := bus.NewGoChannel(nil)
	defer b.Close()
	got := make(chan string, 4)
	if err := b.Subscribe(ctx, "t", func(_ context.Context, p []byte) error { got <- string(p); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a", "b"} {
		if err := b.Publish(ctx, "t", []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	// GoChannel does not promise order: the service's handlers do not rely on it.
	seen := map[string]bool{}
	for range 2 {
		select {
		case p := <-got:
			seen[p] = true
		case <-time.After(5 * time.Second):
			t.Fatal("message not delivered")
		}
	}
	if !seen["a"] || !seen["b"] {
		t.Fatalf("delivered %v, want a and b", seen)
	}
}

func TestHandlerErrorRedelivers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := bus.NewGoChannel(nil)
	defer b.Close()
	var calls atomic.Int32
	done := make(chan struct{})
	_ = b.Subscribe(ctx, "t", func(context.Context, []byte) error {
		if calls.Add(1) == 1 {
			return errors.New("transient")
		}
		close(done)
		return nil
	})
	_ = b.Publish(ctx, "t", []byte("x"))
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("nacked message not redelivered (%d calls)", calls.Load())
	}
}
