package sandbox_test

import (
	"context"
	"os"
	"testing"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/adapters/sandbox/sandboxtest"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

// TestSuite holds the bubblewrap sandbox to the suite every sandbox implementation passes, and
// to what it claims beyond: its system call filter, and, where a memory cgroup per run can be
// had, a memory limit reported as such.
func TestSuite(t *testing.T) {
	t.Parallel()
	sb, err := sandbox.New(sandbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Available(context.Background()); err != nil {
		testenv.Missing(t, "the bubblewrap sandbox (scripts/deps.sh installs bubblewrap)", err)
	}
	if _, err := os.Stat(sandbox.FFmpeg); err != nil {
		testenv.Missing(t, "ffmpeg (scripts/deps.sh installs it)", err)
	}
	shell, err := sandbox.New(sandbox.Config{Programs: []string{sandbox.FFmpeg, sandbox.FFprobe, "/usr/bin/sh"}})
	if err != nil {
		t.Fatal(err)
	}
	memoryErr := sb.MemoryCgroups()
	if memoryErr != nil {
		t.Logf("not claimed: a memory limit reported as such (%v)", memoryErr)
	}
	sandboxtest.TestRunner(t, sandboxtest.Features{
		Shell:         func(*testing.T) sandbox.Runner { return shell },
		SyscallFilter: true,
		MemoryLimit:   memoryErr == nil,
	}, func(t *testing.T) sandbox.Runner { return sb })
}
