package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
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
	// refillDelay is how long after a warm run the filling waits unless Refill says sooner.
	refillDelay time.Duration
	warmRuns    atomic.Int64
	stop        context.CancelFunc
	done        sync.WaitGroup
	// retiring are the teardowns going on in the background (Retire); after Close, a teardown
	// runs in its caller. later are those held until the next refill (RetireLater).
	mu       sync.Mutex
	closed   bool
	retiring sync.WaitGroup
	later    []func()
}

// NewAhead starts filling size things with start until Close. A start that fails is passed to
// failed, and the filling then waits for the next Refill (a run that found none ready calls it).
// After a warm run (Run) it refills refillDelay later unless Refill says sooner.
func NewAhead[W any](size int, refillDelay time.Duration, start func() (W, error), teardown func(W), failed func(error)) *Ahead[W] {
	ctx, stop := context.WithCancel(context.Background())
	a := &Ahead[W]{ready: make(chan W, size), refill: make(chan struct{}, 1), full: make(chan struct{}, 1),
		start: start, teardown: teardown, refillDelay: refillDelay, stop: stop}
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
			select {
			case a.ready <- w:
			default: // Put gave one back meanwhile
				a.teardown(w)
			}
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

// Run runs in a thing taken from the pool (warm), or cold where none is ready or warm could not
// take it (its cold result true: nothing ran). The pool is made up after the run, not while it
// runs: refillDelay after a warm one, at once after a cold one (whose pool may be empty because
// a start failed).
func (a *Ahead[W]) Run(warm func(W) (Result, error, bool), cold func() (Result, error)) (Result, error) {
	w, ok := a.Take()
	if !ok {
		defer a.Refill()
		return cold()
	}
	res, err, wasCold := warm(w)
	if a.refillDelay > 0 && !wasCold {
		time.AfterFunc(a.refillDelay, a.Refill)
	} else {
		a.Refill()
	}
	if wasCold {
		return cold()
	}
	a.warmRuns.Add(1)
	return res, err
}

// WarmRuns is how many runs took a thing started ahead (the others started cold).
func (a *Ahead[W]) WarmRuns() int64 { return a.warmRuns.Load() }

// Refill asks for the count to be made up now, and starts the teardowns held until then.
func (a *Ahead[W]) Refill() {
	a.mu.Lock()
	for _, teardown := range a.later { // none once closed: Close took them
		a.retireLocked(teardown)
	}
	a.later = nil
	a.mu.Unlock()
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

// put gives back a thing that was taken and not used, and reports whether it is waiting again;
// when there is no room (the filling made up for it meanwhile), the caller tears it down.
func (a *Ahead[W]) put(w W) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false // Close has drained the pool, or is about to
	}
	select {
	case a.ready <- w:
		return true
	default:
		return false
	}
}

// GiveBack puts a thing taken and not used back; when there is no room for it (the filling made
// up for it meanwhile, or Close came), it is torn down in the background.
func (a *Ahead[W]) GiveBack(w W) {
	if !a.put(w) {
		a.Retire(func() { a.teardown(w) })
	}
}

// Retire runs teardown in the background; Close waits for it.
func (a *Ahead[W]) Retire(teardown func()) {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		teardown()
		return
	}
	a.retireLocked(teardown)
	a.mu.Unlock()
}

// retireLocked starts teardown in the background, counted in retiring with a.mu held and the
// pool open, so that a Close after it waits for it.
func (a *Ahead[W]) retireLocked(teardown func()) {
	a.retiring.Add(1)
	go func() {
		defer a.retiring.Done()
		teardown()
	}()
}

// RetireLater holds teardown until the next refill (Refill, or the refill delay after a warm
// run): a thing a run used is torn down once its job has ended, not while the job still
// reports. Close runs those still held.
func (a *Ahead[W]) RetireLater(teardown func()) {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		teardown()
		return
	}
	a.later = append(a.later, teardown)
	a.mu.Unlock()
}

// Close stops the filling, waits for the teardowns in the background, and tears down those
// held and those still waiting.
func (a *Ahead[W]) Close() {
	a.stop()
	a.done.Wait()
	a.mu.Lock()
	a.closed = true
	later := a.later
	a.later = nil
	a.mu.Unlock()
	for _, teardown := range later {
		teardown()
	}
	a.retiring.Wait()
	for {
		select {
		case w := <-a.ready:
			a.teardown(w)
		default:
			return
		}
	}
}

// PoolRoot makes a pool's root directory, or checks the one there: a directory of this
// process's user that no other may write, since the host links and renames the runs' files
// through it. It removes the work directories ("warm-*") that the pool of a process killed
// before left there: the root belongs to one pool at a time.
func PoolRoot(root string) error {
	if err := os.MkdirAll(root, 0o711); err != nil {
		return fmt.Errorf("pool root: %w", err)
	}
	fi, err := os.Lstat(root)
	if err != nil {
		return fmt.Errorf("pool root: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("pool root %s must be a directory of uid %d that no other user may write (it is %v)", root, os.Geteuid(), fi.Mode())
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return fmt.Errorf("pool root: %w", err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "warm-") {
			if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
				return fmt.Errorf("pool root: remove what a pool before left: %w", err)
			}
		}
	}
	return nil
}
