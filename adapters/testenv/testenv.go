// Package testenv decides what a test does when something it needs from the machine is missing
// (a server, a program, the Docker Engine): on a developer's machine it skips, naming what is
// missing and how to get it; in CI (CI=true, as .ci/run sets) it fails, because there everything
// installable is installed by scripts/deps.sh and started by scripts/services.sh, and a skip would
// hide a missing install step. Only what the machine cannot have (a GPU) skips everywhere, through
// Unavailable.
package testenv

import (
	"fmt"
	"os"
	"testing"
)

// CI reports whether the tests run in CI, where nothing installable may be missing.
func CI() bool { return os.Getenv("CI") == "true" }

// Missing ends t because what it needs is absent: a failure in CI, a skip elsewhere. The
// message says what is missing and why, for example
//
//	testenv.Missing(t, "PostgreSQL on 127.0.0.1:5432 (scripts/services.sh starts it)", err)
func Missing(t testing.TB, what string, why any) {
	t.Helper()
	msg := fmt.Sprintf("missing: %s", what)
	if why != nil {
		msg += fmt.Sprintf(": %v", why)
	}
	if CI() {
		t.Fatalf("%s (CI=true: an installable service or program may not be skipped)", msg)
	}
	t.Skip(msg)
}

// Unavailable skips t, everywhere, for what this kind of machine cannot have (a GPU with NVENC);
// the reason is printed in make test's summary of skips.
func Unavailable(t testing.TB, what string, why any) {
	t.Helper()
	msg := fmt.Sprintf("unavailable on this machine: %s", what)
	if why != nil {
		msg += fmt.Sprintf(": %v", why)
	}
	t.Skip(msg)
}
