package main

import "testing"

// TestWorkerProcs: a worker runs one P for every two slots, at least one and never more than
// the machine gives it.
func TestWorkerProcs(t *testing.T) {
	t.Parallel()
	tests := []struct{ procs, concurrency, want int }{
		{16, 1, 1},
		{16, 2, 1},
		{16, 3, 2},
		{16, 8, 4},
		{2, 8, 2},
		{1, 64, 1},
		{16, 64, 16},
	}
	for _, tt := range tests {
		if got := workerProcs(tt.procs, tt.concurrency); got != tt.want {
			t.Errorf("workerProcs(%d procs, %d slots) = %d, want %d", tt.procs, tt.concurrency, got, tt.want)
		}
	}
}
