package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/retry"
)

func TestNextGrowsWithinBounds(t *testing.T) {
	t.Parallel()
	b := retry.New(100*time.Millisecond, time.Second)
	bounds := []time.Duration{100, 200, 400, 800, 1000, 1000, 1000}
	for i, hi := range bounds {
		hi *= time.Millisecond
		d := b.Next()
		if d < hi/2 || d > hi {
			t.Fatalf("try %d: %s outside [%s, %s]", i+1, d, hi/2, hi)
		}
	}
	if b.Failures() != len(bounds) {
		t.Fatalf("failures %d", b.Failures())
	}
	b.Reset()
	if d := b.Next(); d > 100*time.Millisecond || b.Failures() != 1 {
		t.Fatalf("after reset: %s, %d failures", d, b.Failures())
	}
}

func TestLogOncePerInterval(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	b := retry.New(time.Second, 30*time.Second)
	b.Now = func() time.Time { return now }
	logged := 0
	for i := range 1000 {
		now = now.Add(50 * time.Millisecond) // 1000 failures over 50 s
		if ok, _ := b.Log(); ok {
			logged++
		}
		_ = i
	}
	if logged != 2 {
		t.Fatalf("%d log lines for 1000 failures over 50 s, want 2 (one per 30 s)", logged)
	}
	now = now.Add(time.Minute)
	if ok, muted := b.Log(); !ok || muted == 0 {
		t.Fatalf("after the interval: ok %v, muted %d", ok, muted)
	}
}

func TestWait(t *testing.T) {
	t.Parallel()
	b := retry.New(time.Millisecond, time.Millisecond)
	if !b.Wait(context.Background()) {
		t.Fatal("Wait with a live context = false, want true")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if slow := retry.New(time.Hour, time.Hour); slow.Wait(ctx) {
		t.Fatal("Wait with an ended context = true, want false")
	}
	if b.Failures() != 1 {
		t.Fatalf("Failures = %d after one Wait, want 1", b.Failures())
	}
}
