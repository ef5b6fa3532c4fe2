package sandbox

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestAheadPutWhileFilling: a thing given back (Put) while a start fills its place leaves the
// pool full, the extra one torn down, and Close does not wait on the filling forever.
func TestAheadPutWhileFilling(t *testing.T) {
	t.Parallel()
	release, started := make(chan struct{}), make(chan struct{}, 8)
	var torn []int
	n := 0
	a := NewAhead(1, 0, func() (int, error) {
		n++
		if n > 1 {
			started <- struct{}{}
			<-release
		}
		return n, nil
	}, func(w int) { torn = append(torn, w) }, func(error) {})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.WaitFull(ctx); err != nil {
		t.Fatal(err)
	}
	w, _ := a.Take()
	a.Refill()
	<-started // the second start is under way, for the place w left
	if !a.put(w) {
		t.Fatal("Put refused with a place free")
	}
	close(release)
	done := make(chan struct{})
	go func() { a.Close(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("Close waits on a filling blocked on a full pool")
	}
	if len(torn) != 2 {
		t.Errorf("torn down %v, want both the one started meanwhile and the one given back", torn)
	}
}

// TestAheadPutAfterClose: after Close nothing is taken back, so that the caller tears it down.
func TestAheadPutAfterClose(t *testing.T) {
	t.Parallel()
	a := NewAhead(1, 0, func() (int, error) { return 1, nil }, func(int) {}, func(error) {})
	if err := a.WaitFull(context.Background()); err != nil {
		t.Fatal(err)
	}
	w, _ := a.Take()
	a.Close()
	if a.put(w) {
		t.Error("Put after Close took back a thing nobody would tear down")
	}
}

// TestAheadRetireLater: a teardown held by RetireLater runs at the next Refill, not before;
// one still held at Close runs there; after Close, RetireLater tears down at once.
func TestAheadRetireLater(t *testing.T) {
	t.Parallel()
	a := NewAhead(1, 0, func() (int, error) { return 1, nil }, func(int) {}, func(error) {})
	torn := make(chan string, 4)
	a.RetireLater(func() { torn <- "first" })
	select {
	case w := <-torn:
		t.Fatalf("%s torn down before the refill", w)
	case <-time.After(50 * time.Millisecond): // an absence, watched a while
	}
	a.Refill()
	select {
	case w := <-torn:
		if w != "first" {
			t.Fatalf("torn down %s", w)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the refill did not tear down what was held")
	}
	a.RetireLater(func() { torn <- "second" })
	a.Close()
	a.RetireLater(func() { torn <- "third" })
	if len(torn) != 2 || <-torn != "second" || <-torn != "third" {
		t.Fatal("Close left a held teardown, or one after Close was held")
	}
}

// TestAheadCloseWaitsForTheRefillsTeardowns: a Refill that has taken the held teardowns when
// Close comes is waited for, as Close's own are: none ends after Close has returned.
func TestAheadCloseWaitsForTheRefillsTeardowns(t *testing.T) {
	t.Parallel()
	for round := range 50 {
		a := NewAhead(1, 0, func() (int, error) { return 1, nil }, func(int) {}, func(error) {})
		const held = 50
		var torn atomic.Int64
		for range held {
			a.RetireLater(func() {
				time.Sleep(time.Millisecond) // a teardown takes a while
				torn.Add(1)
			})
		}
		refilling := make(chan struct{})
		go func() {
			defer close(refilling)
			a.Refill()
		}()
		a.Close()
		if n := torn.Load(); n != held {
			t.Fatalf("round %d: Close returned with %d of %d held teardowns done", round, n, held)
		}
		<-refilling
	}
}
