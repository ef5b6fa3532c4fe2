package sandbox

import "log/slog"

// Hooks for the tests of package sandbox_test, which can use sandboxtest (package sandbox's
// own tests cannot: sandboxtest imports sandbox).

// WithoutSyscallFilter returns cfg with the system call filter off, to measure and compare.
func WithoutSyscallFilter(cfg Config) Config {
	cfg.noSyscallFilter = true
	return cfg
}

// WithoutMemoryCgroup returns cfg with memory cgroups off: RLIMIT_AS alone limits memory, as
// where the worker cannot make cgroups.
func WithoutMemoryCgroup(cfg Config) Config {
	cfg.noMemoryCgroup = true
	return cfg
}

// MemoryCgroupDir is the cgroup this process makes job cgroups in, found if it was not yet;
// "" if none.
func MemoryCgroupDir() string {
	p, err := (&Sandbox{cfg: Config{Log: slog.Default()}}).memoryCgroup()
	if err != nil {
		return ""
	}
	return p.dir
}

// MemoryCgroupV2 tells whether MemoryCgroupDir is a cgroup v2 one.
func MemoryCgroupV2() bool {
	p, err := (&Sandbox{cfg: Config{Log: slog.Default()}}).memoryCgroup()
	return err == nil && p.v2
}
