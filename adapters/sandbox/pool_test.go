package sandbox_test

import (
	"context"
	"os"
	"testing"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/adapters/sandbox/sandboxtest"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

// TestMain lets this test binary be the warm sandboxes' launcher, as the worker's binary is.
func TestMain(m *testing.M) {
	if sandbox.RunLauncher() {
		return
	}
	os.Exit(m.Run())
}

// newPool is a pool over sb whose work directories sit beside the tests' (one filesystem).
func newPool(t testing.TB, sb *sandbox.Sandbox, size int) *sandbox.Pool {
	t.Helper()
	root, err := os.MkdirTemp("", "warm-pool-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o711); err != nil {
		t.Fatal(err)
	}
	p, err := sandbox.NewPool(sb, sandbox.PoolConfig{Size: size, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Close()
		_ = os.RemoveAll(root)
	})
	return p
}

// TestWarmSuite holds the warm path (Pool) to the suite every sandbox passes, with the same
// claims as the cold one: the filter, and the memory limit where a cgroup per run can be had.
func TestWarmSuite(t *testing.T) {
	t.Parallel()
	sb, err := sandbox.New(sandbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Available(context.Background()); err != nil {
		testenv.Missing(t, "the bubblewrap sandbox (scripts/deps.sh installs bubblewrap)", err)
	}
	shellSB, err := sandbox.New(sandbox.Config{Programs: []string{sandbox.FFmpeg, sandbox.FFprobe, "/usr/bin/sh"}})
	if err != nil {
		t.Fatal(err)
	}
	pool, shell := newPool(t, sb, 2), newPool(t, shellSB, 2)
	t.Cleanup(func() {
		if pool.WarmRuns() == 0 || shell.WarmRuns() == 0 {
			t.Errorf("warm runs: %d and %d (shell): every run started cold", pool.WarmRuns(), shell.WarmRuns())
		}
	})
	sandboxtest.TestRunner(t, sandboxtest.Features{
		Shell:         func(*testing.T) sandbox.Runner { return shell },
		SyscallFilter: true,
		MemoryLimit:   sb.MemoryCgroups() == nil,
	}, func(t *testing.T) sandbox.Runner { return pool })
}
