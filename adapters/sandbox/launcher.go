package sandbox

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// LauncherArg is the first argument that makes a binary act as a warm sandbox's launcher
// (RunLauncher): the worker's own binary is the launcher, bound read-only into each warm
// sandbox.
const LauncherArg = "sandbox-launcher"

// launcherPath is where the launcher appears inside a warm sandbox.
const launcherPath = "/launcher"

// Launch is the one command a warm sandbox's launcher receives from the host, as Encode writes
// it: the program, its arguments and the rlimits it runs under (what prlimit sets on a cold run).
type Launch struct {
	Program string
	Args    []string
	Rlimits []Rlimit
	// End, when set, makes the launcher run the program as its child rather than exec it, and
	// write End to stdout and End, the exit code and a newline to stderr once it has exited
	// and every process it left behind has been killed and waited for: the host then knows the
	// program's output is all read, its exit code, and that nothing of it runs any more,
	// without waiting for bubblewrap to tear the namespaces down (several milliseconds of RCU
	// grace periods). A random value the program never sees: it cannot forge it.
	End string
}

// MaxLaunchBytes is the longest command a launcher reads; a longer one runs cold.
const MaxLaunchBytes = 1 << 20

// requiredRlimits are the rlimits every command must set, both sandboxes' (a warm container's
// engine-made limits on CPU time and file size are only ceilings): the launcher starts nothing
// without them.
var requiredRlimits = []int{syscall.RLIMIT_CPU, syscall.RLIMIT_FSIZE, syscall.RLIMIT_NOFILE, syscall.RLIMIT_CORE}

// Rlimit is one resource limit the launcher sets before it starts the program.
type Rlimit struct {
	Resource int
	Value    uint64 // soft and hard alike
}

// rlimits are the limits of lim, as the cold run's prlimit sets them.
func (sb *Sandbox) rlimits(lim Limits, memoryCgroup bool) []Rlimit {
	as := uint64(unix.RLIM_INFINITY)
	if v, err := strconv.ParseUint(sb.addressSpace(lim, memoryCgroup), 10, 64); err == nil {
		as = v
	}
	return []Rlimit{
		{syscall.RLIMIT_CPU, uint64(lim.CPUSeconds)},
		{syscall.RLIMIT_FSIZE, uint64(min(lim.FileSizeBytes, lim.JobBytes))},
		{syscall.RLIMIT_AS, as},
		{unix.RLIMIT_NPROC, uint64(lim.Processes)},
		{syscall.RLIMIT_NOFILE, uint64(lim.OpenFiles)},
		{syscall.RLIMIT_CORE, 0},
	}
}

// RunLauncher is the launcher's main, for a binary started with LauncherArg first: it returns
// at once (false) otherwise. Inside a warm sandbox it reads one command from the descriptor
// named by its next argument (3 or more: a pipe from bubblewrap; 0: stdin, which a warm
// container's launcher is attached by), checks the program against the allowlist that follows (both set
// by the host on bubblewrap's command line), sets the rlimits and execs the program in its
// place. It never returns when it was asked to launch: it exits on any error.
func RunLauncher() bool {
	if len(os.Args) < 3 || os.Args[1] != LauncherArg {
		launcherReady.Store(true)
		return false
	}
	err := launcherMain(os.Args[2], os.Args[3:])
	fmt.Fprintf(os.Stderr, "sandbox launcher: %v\n", err)
	os.Exit(126)
	return true
}

// launcherReady is set once this process's main has called RunLauncher: its executable can
// then serve as a warm sandbox's launcher.
var launcherReady atomic.Bool

// LauncherReady tells whether this process's executable acts as the launcher (its main called
// RunLauncher first): a program that embeds the runner without doing so gets cold sandboxes.
func LauncherReady() bool { return launcherReady.Load() }

// launcherProcsEnv is set for the launcher alone (Pool.start), not for the program it starts.
const launcherProcsEnv = "GOMAXPROCS"

func launcherMain(fdArg string, allowed []string) error {
	// "N", "N,R" or "N,R,H": the command comes on descriptor N; where R is given, one byte
	// written to it tells the host that the launcher has started and waits (PoolConfig's
	// sandboxes count as ready only then); where H is given, the launcher reads it to its end
	// after the end marks before it exits, so that the sandbox's teardown waits for the host.
	cmdArg, rest, withReady := strings.Cut(fdArg, ",")
	readyArg, holdArg, withHold := strings.Cut(rest, ",")
	fd, ok := descriptor(cmdArg)
	if !ok || (fd < 3 && fd != 0) {
		return fmt.Errorf("bad command descriptor %q", fdArg)
	}
	ready, hold := -1, -1
	if withReady {
		if ready, ok = descriptor(readyArg); !ok || ready < 3 || ready == fd {
			return fmt.Errorf("bad ready descriptor %q", fdArg)
		}
	}
	if withHold {
		if hold, ok = descriptor(holdArg); !ok || hold < 3 || hold == fd || hold == ready {
			return fmt.Errorf("bad hold descriptor %q", fdArg)
		}
		// The program must not inherit it; and a hold that is not open is refused now, not at
		// the end marks.
		if _, err := unix.FcntlInt(uintptr(hold), unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
			return fmt.Errorf("hold descriptor: %w", err)
		}
	}
	// Not dumpable: a program of the same user cannot read the launcher's memory through /proc
	// (the end mark is in it), nor attach to it. The program it starts is dumpable again.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl: %w", err)
	}
	if ready >= 0 {
		_, err := unix.Write(ready, []byte{1})
		unix.Close(ready) // the program must not inherit it
		if err != nil {
			return fmt.Errorf("tell the host it is ready: %w", err)
		}
	}
	f := os.NewFile(uintptr(fd), "command")
	data, err := io.ReadAll(io.LimitReader(f, MaxLaunchBytes+1))
	f.Close() // the program must not inherit the host's end of the command pipe
	if err != nil {
		return fmt.Errorf("read command: %w", err)
	}
	if len(data) > MaxLaunchBytes {
		return fmt.Errorf("read command: longer than %d bytes", MaxLaunchBytes)
	}
	if fd == 0 {
		// The command came on stdin (a container's attach stream): the program's stdin is
		// /dev/null, as in a cold run.
		if err := nullStdin(); err != nil {
			return err
		}
	}
	if len(data) == 0 {
		return fmt.Errorf("no command: the sandbox was torn down unused")
	}
	l, err := DecodeLaunch(data)
	if err != nil {
		return fmt.Errorf("decode command: %w", err)
	}
	if !slices.Contains(allowed, l.Program) {
		return fmt.Errorf("program %q is not allowed", l.Program)
	}
	for _, r := range requiredRlimits {
		if !slices.ContainsFunc(l.Rlimits, func(l Rlimit) bool { return l.Resource == r }) {
			return fmt.Errorf("the command sets no rlimit %d", r)
		}
	}
	for _, r := range l.Rlimits {
		lim := syscall.Rlimit{Cur: r.Value, Max: r.Value}
		if err := syscall.Setrlimit(r.Resource, &lim); err != nil {
			return fmt.Errorf("rlimit %d: %w", r.Resource, err)
		}
	}
	argv := append([]string{l.Program}, l.Args...)
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, launcherProcsEnv+"=") })
	if l.End == "" {
		return syscall.Exec(l.Program, argv, env)
	}
	if pid := os.Getpid(); pid > 2 {
		// killLeftovers signals every process this user may: only in a PID namespace of the
		// sandbox's own, whose first or second process the launcher is, are those the program's.
		return fmt.Errorf("an end mark needs a PID namespace of the sandbox's own; this launcher is process %d", pid)
	}
	// The program's orphans become the launcher's children, not the PID namespace's first
	// process's: the launcher can then wait for every process the program left behind.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl: %w", err)
	}
	p, err := os.StartProcess(l.Program, argv, &os.ProcAttr{Env: env, Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}})
	if err != nil {
		return err
	}
	st, err := p.Wait()
	if err != nil {
		return err
	}
	code := st.ExitCode()
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal()) // as bubblewrap reports a child a signal ended
	}
	if err := killLeftovers(); err != nil {
		return err
	}
	// Everything the program wrote is in the pipes ahead of these, and no process of it is
	// left: the host may hand the work directory back at the marks.
	fmt.Fprint(os.Stdout, l.End)
	fmt.Fprintf(os.Stderr, "%s%d\n", l.End, code)
	if hold >= 0 {
		// The namespaces go with the launcher: their teardown waits for the host's word.
		_, _ = io.Copy(io.Discard, os.NewFile(uintptr(hold), "hold"))
	}
	os.Exit(code)
	return nil
}

// descriptor reads a descriptor's number, written as Encode writes numbers (decimal), up to the
// native launcher's bound.
func descriptor(s string) (int, bool) {
	n, ok := decimal(s, 1<<20)
	return int(n), ok
}

// killLeftovers kills every process the program left behind and waits until each has exited,
// so that none can write a file once the end mark is out. kill(-1) reaches every process of
// the PID namespace but the launcher and the namespace's first process (bubblewrap, or the
// launcher itself as a container's first process), and the sandbox has one user, which may
// signal them all. Each of them descends from the launcher, a subreaper, so it is waited for
// here: ECHILD means none is left. A process forked while the signal went out is signalled too
// (the kernel restarts such a fork), and the loop signals again before every wait.
func killLeftovers() error {
	for {
		if err := unix.Kill(-1, unix.SIGKILL); err != nil && err != unix.ESRCH {
			return fmt.Errorf("kill what the program left: %w", err)
		}
		var ws unix.WaitStatus
		_, err := unix.Wait4(-1, &ws, 0, nil)
		switch err {
		case nil, unix.EINTR:
		case unix.ECHILD:
			return nil
		default:
			return fmt.Errorf("wait for what the program left: %w", err)
		}
	}
}

// nullStdin makes descriptor 0 /dev/null again after the command was read from it and closed.
func nullStdin() error {
	// unix.Open, not os.Open: an *os.File on descriptor 0 would close it when collected.
	null, err := unix.Open(os.DevNull, unix.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("stdin: %w", err)
	}
	if null == 0 {
		return nil // the lowest free descriptor, just closed
	}
	defer unix.Close(null)
	if err := unix.Dup3(null, 0, 0); err != nil {
		return fmt.Errorf("stdin: %w", err)
	}
	return nil
}
