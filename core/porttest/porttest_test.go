package porttest_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/mediajobs/mediajobs/core/porttest"
)

type features struct{ Name string }

var (
	mu   sync.Mutex
	seen []string
)

func alpha(t *testing.T, f features, n func() int) { record(t, f, n) }
func beta(t *testing.T, f features, n func() int)  { record(t, f, n) }

func record(t *testing.T, f features, n func() int) {
	mu.Lock()
	defer mu.Unlock()
	seen = append(seen, t.Name()+"/"+f.Name+"/"+string(rune('0'+n())))
}

func TestRunNamesEachTestAfterItsFunction(t *testing.T) {
	t.Run("serial", func(t *testing.T) {
		porttest.Run(t, features{"memory"}, func() int { return 7 }, alpha, beta)
	})
	t.Run("parallel", func(t *testing.T) {
		porttest.RunParallel(t, features{"sql"}, func() int { return 3 }, alpha, beta)
	})
	want := []string{
		"TestRunNamesEachTestAfterItsFunction/parallel/alpha/sql/3",
		"TestRunNamesEachTestAfterItsFunction/parallel/beta/sql/3",
		"TestRunNamesEachTestAfterItsFunction/serial/alpha/memory/7",
		"TestRunNamesEachTestAfterItsFunction/serial/beta/memory/7",
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(seen)
	if !slices.Equal(want, seen) {
		t.Fatalf("ran %q, want %q", seen, want)
	}
}
