package sandbox

import (
	"context"
	"sync"
)

// Ahead keeps a fixed number of things started ahead of their use (warm sandboxes, warm
// containers), starting them in the background one at a time, and again each time Refill is
// called. It is what the bubblewrap Pool and the Docker sandbox's pool share: each thing is taken
// by exactly one run and never comes back.
type Ahead[W any] struct {
	ready    chan W
	refill   chan struct{}
	full     chan struct{} // signalled each time fill has filled it
	start    func() (W, error)
	teardown func(W)
	stop     context.CancelFunc
	done     sync.WaitGroup
}

// NewAhead starts filling size things with start until Close. A start that fails is passed to
// failed, and the filling then waits for the next Refill (a run that found none ready calls it).
func NewAhead[W any](size int, start func() (W, error), teardown func(W), failed func(error)) *Ahead[W] {
	ctx, stop := context.WithCancel(context.Background())
	a := &Ahead[W]{ready: make(chan W, size), refill: make(chan struct{}, 1), full: make(chan struct{}, 1),
		start: start, teardown: teardown, stop: stop}
	a.done.Go(func() { a.fill(ctx, failed) })
	return a
}

func (a *Ahead[W]) fill(ctx context.Context, failed func(error)) {
	for {
		for len(a.ready) < cap(a.ready) && ctx.Err() == nil {
			w, err := a.start()
			if err != nil {
				failed(err)
				break
			}
			a.ready <- w
		}
		if len(a.ready) == cap(a.ready) {
			select {
			case a.full <- struct{}{}:
			default:
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-a.refill:
		}
	}
}

// Take returns a thing started ahead, or false at once when none is ready.
func (a *Ahead[W]) Take() (W, bool) {
	select {
	case w := <-a.ready:
		return w, true
	default:
		var zero W
		return zero, false
	}
}

// Refill asks for the count to be made up now.
func (a *Ahead[W]) Refill() {
	select {
	case a.refill <- struct{}{}:
	default:
	}
}

// WaitFull waits until every thing is started and waiting, or ctx ends.
func (a *Ahead[W]) WaitFull(ctx context.Context) error {
	for len(a.ready) < cap(a.ready) {
		select {
		case <-a.full:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Ready is how many are started and waiting.
func (a *Ahead[W]) Ready() int { return len(a.ready) }

// Close stops the filling and tears down those still waiting.
func (a *Ahead[W]) Close() {
	a.stop()
	a.done.Wait()
	for {
		select {
		case w := <-a.ready:
			a.teardown(w)
		default:
			return
		}
	}
}
