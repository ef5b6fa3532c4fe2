package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/sandbox"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

// BenchmarkSandboxStart is the cost of a sandbox around a program that does nothing
// (/usr/bin/true), with and without the system call filter and the memory cgroup: the
// overhead every job pays before FFmpeg starts.
func BenchmarkSandboxStart(b *testing.B) {
	base := sandbox.Config{Programs: []string{"/usr/bin/true"}}
	for _, bc := range []struct {
		name  string
		cfg   sandbox.Config
		memcg bool
	}{
		{"seccomp=on/memcg=on", base, true},
		{"seccomp=off/memcg=on", sandbox.WithoutSyscallFilter(base), true},
		{"seccomp=on/memcg=off", sandbox.WithoutMemoryCgroup(base), false},
		{"seccomp=off/memcg=off", sandbox.WithoutMemoryCgroup(sandbox.WithoutSyscallFilter(base)), false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			sb := available(b, bc.cfg)
			if err := sb.MemoryCgroups(); err != nil && bc.memcg {
				testenv.Unavailable(b, "a memory cgroup per run", err)
			}
			dir := b.TempDir()
			if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				res, err := sb.Run(context.Background(), sandbox.Spec{Dir: dir, Program: "/usr/bin/true"})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("run: %v, exit %d: %s", err, res.ExitCode, res.StderrTail)
				}
			}
		})
	}
}

// BenchmarkWarmStart is BenchmarkSandboxStart's production case (filter and memory cgroup on)
// cold and warm: a Pool of one, refilled in the background between runs, against Sandbox.Run.
func BenchmarkWarmStart(b *testing.B) {
	sb := available(b, sandbox.Config{Programs: []string{"/usr/bin/true"}})
	for _, warm := range []bool{false, true} {
		b.Run(map[bool]string{false: "cold", true: "warm"}[warm], func(b *testing.B) {
			var r sandbox.Runner = sb
			if warm {
				r = newPool(b, sb, 1)
			}
			dir := b.TempDir()
			if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
				b.Fatal(err)
			}
			var took time.Duration
			for b.Loop() {
				b.StopTimer()
				if warm {
					if err := r.(*sandbox.Pool).WaitFull(context.Background()); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				t0 := time.Now()
				res, err := r.Run(context.Background(), sandbox.Spec{Dir: dir, Program: "/usr/bin/true"})
				took += time.Since(t0)
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("run: %v, exit %d: %s", err, res.ExitCode, res.StderrTail)
				}
			}
			b.ReportMetric(float64(took.Microseconds())/1000/float64(b.N), "ms/run")
		})
	}
}
