package main

import "testing"

// A worker's own Go code keeps one CPU in eight, and never none.
func TestWorkerProcs(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ procs, want int }{
		{1, 1}, {2, 1}, {7, 1}, {8, 1}, {15, 1}, {16, 2}, {64, 8},
	} {
		if got := workerProcs(tt.procs); got != tt.want {
			t.Errorf("workerProcs(%d) = %d, want %d", tt.procs, got, tt.want)
		}
	}
}
