package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

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
