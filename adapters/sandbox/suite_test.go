package sandbox_test

import (
	"context"
	"os"
	"testing"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/adapters/sandbox/sandboxtest"
)

// TestSuite holds the bubblewrap sandbox to the suite every sandbox implementation passes.
func TestSuite(t *testing.T) {
	t.Parallel()
	sb, err := sandbox.New(sandbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Available(context.Background()); err != nil {
		t.Skipf("bubblewrap sandbox not available here: %v", err)
	}
	if _, err := os.Stat(sandbox.FFmpeg); err != nil {
		t.Skipf("ffmpeg not installed: %v", err)
	}
	sandboxtest.Exercise(t, sandboxtest.Features{}, func(t *testing.T) sandbox.Runner { return sb })
}
