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
		Limits:  sandbox.Limits{FileSizeBytes: 2 << 30, JobBytes: 20 << 30, JobFiles: 1000},
	})
	switch {
	case err != nil:
		fmt.Println("sandbox failed:", err)
	case res.LimitExceeded != nil:
		// e.g. "the job wrote more than 21474836480 bytes to its work directory (limit job_bytes=21474836480)"
		fmt.Println("RUNNER_ERROR:", res.LimitExceeded.Message())
	case res.TimedOut:
		fmt.Println("RUNNER_TIMEOUT")
	case res.ExitCode != 0:
		fmt.Printf("RUNNER_ERROR: %s\n", res.StderrTail)
	}
}

// A GPU worker finds the NVIDIA devices and driver libraries once, builds a sandbox that passes
// only those through, and checks that FFmpeg inside can encode with NVENC before taking work.
func ExampleFindGPU() {
	ctx := context.Background()
	gpu, err := sandbox.FindGPU(ctx, sandbox.GPUConfig{})
	if err != nil {
		fmt.Println(err) // e.g. "sandbox: no usable NVIDIA GPU: missing /dev/nvidia0 (or any /dev/nvidiaN)"
		return
	}
	sb, err := sandbox.New(sandbox.Config{GPU: gpu})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := sb.CheckGPU(ctx); err != nil {
		fmt.Println(err)
	}
}
