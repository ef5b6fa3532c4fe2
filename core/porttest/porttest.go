// Package porttest runs the shared suite of a port, in Watermill's shape: a list of named test
// functions, each given the Features the adapter declares and its constructor, run as subtests
// named after the functions, so that `go test -run` selects one by the name grep finds.
package porttest

import (
	"reflect"
	"runtime"
	"strings"
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
