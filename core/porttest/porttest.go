// Package porttest runs the shared suite of a port, in Watermill's shape: a list of named test
// functions, each given the Features the adapter declares and its constructor, run as subtests
// named after the functions, so that `go test -run` selects one by the name grep finds.
package porttest

import (
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Run runs each test as a subtest named after its function; a test that can run beside the
// others calls t.Parallel itself.
func Run[F, C any](t *testing.T, f F, newX C, tests ...func(t *testing.T, f F, newX C)) {
	t.Helper()
	for _, test := range tests {
		t.Run(Name(test), func(t *testing.T) { test(t, f, newX) })
	}
}

// RunParallel is Run for suites whose every test runs beside the others.
func RunParallel[F, C any](t *testing.T, f F, newX C, tests ...func(t *testing.T, f F, newX C)) {
	t.Helper()
	for _, test := range tests {
		t.Run(Name(test), func(t *testing.T) {
			t.Parallel()
			test(t, f, newX)
		})
	}
}

// Name is a function's own name, without its package: "TestRoundTrip".
func Name(fn any) string {
	full := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
	return full[strings.LastIndexByte(full, '.')+1:]
}

// ClaimedOnceEach runs claim from workers goroutines at once, each until it answers nothing, and
// fails t unless n items were claimed in all, each once: what every store's claim must hold
// under concurrency. claim answers the IDs of what it claimed.
func ClaimedOnceEach(t *testing.T, n, workers int, claim func() ([]string, error)) {
	t.Helper()
	var (
		mu   sync.Mutex
		seen = map[string]int{}
		wg   sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for {
				ids, err := claim()
				if err != nil {
					t.Error(err)
					return
				}
				if len(ids) == 0 {
					return
				}
				mu.Lock()
				for _, id := range ids {
					seen[id]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("claimed %d distinct items, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("%s claimed %d times", id, c)
		}
	}
}
