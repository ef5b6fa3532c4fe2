package sandbox_test

import (
	"context"
	"fmt"
	"time"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
)

// The runner stages inputs in a work dir, then runs the validated command there.
func ExampleRun() {
	res, err := sandbox.Run(context.Background(), sandbox.Spec{
		Dir:     "/var/lib/mediajobs/work/job_123",
		Program: sandbox.FFmpeg,
		Args:    []string{"-nostdin", "-i", "in.mp4", "-vf", "scale=640:-2", "-y", "out.mp4"},
		Timeout: 2 * time.Minute,
		Limits:  sandbox.Limits{FileSizeBytes: 2 << 30},
	})
	switch {
	case err != nil:
		fmt.Println("sandbox failed:", err)
	case res.TimedOut:
		fmt.Println("RUNNER_TIMEOUT")
	case res.ExitCode != 0:
		fmt.Printf("RUNNER_ERROR: %s\n", res.StderrTail)
	}
}
