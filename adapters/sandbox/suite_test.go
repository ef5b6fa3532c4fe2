package sandbox_test

import (
	"context"
	"os"
	"testing"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/adapters/sandbox/sandboxtest"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

// TestSuite holds the bubblewrap sandbox to the suite every sandbox implementation passes.
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
	sandboxtest.Exercise(t, sandboxtest.Features{}, func(t *testing.T) sandbox.Runner { return sb })
}
