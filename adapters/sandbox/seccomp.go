package sandbox

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The system call filter assumes FFmpeg is compromised (its parsers get new CVEs every year)
// and takes from it the kernel interfaces it never needs, where kernel bugs that turn into
// escapes keep being found. A denied call fails with an errno, never a kill, so a library that
// probes for a feature carries on without it.
//
// It is a deny-list: every call of the machine's table is allowed but those below, and clone,
// personality, fallocate and ioctl with the arguments argumentRules name. An allow-list of
// what FFmpeg calls would break on the next codec, hardware library or glibc that calls
// something new, and a job that fails that way is not a bug a user can do anything about.
//
// The deny-list's default action is nonetheless ENOSYS, reached only by what is outside the
// table: the i386 ABI (int 0x80), whose call numbers mean other calls — with the library's
// default of allow for a foreign ABI, an i386 socket, unshare or ptrace would pass
// (elastic/go-seccomp-bpf#48) — and numbers newer than the table, which glibc treats as a
// kernel that lacks them. The library takes no errno as a default action, so the default is
// SECCOMP_RET_TRACE, which the kernel answers with ENOSYS when no tracer has asked for
// seccomp events; none can inside, where ptrace is denied. The library closes the x32 ABI
// with ENOSYS itself.
var (
	// deniedCalls fail with EPERM.
	deniedCalls = []string{
		// Debugging and reading other processes, or taking their descriptors or memory advice.
		"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "process_madvise",
		// Namespaces: bubblewrap has made them all already.
		"unshare", "setns",
		// Mounts, the old API and the new one.
		"mount", "umount2", "pivot_root", "chroot", "mount_setattr",
		"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "open_tree_attr",
		"open_by_handle_at",
		// Kernel attack surface no media tool uses.
		"bpf", "perf_event_open", "userfaultfd",
		"io_uring_setup", "io_uring_enter", "io_uring_register",
		"keyctl", "add_key", "request_key",
		// Filters of its own: a filter FFmpeg installed could answer calls through a user-space
		// listener (SECCOMP_RET_USER_NOTIF outranks this filter's ENOSYS for unknown calls and
		// foreign ABIs), so no process in the sandbox may add one.
		"seccomp",
		// The machine's own: none of these can succeed without capabilities, but a filter
		// does not depend on the capabilities being right.
		"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
		"reboot", "swapon", "swapoff", "acct", "iopl", "ioperm", "syslog",
	}
	// socketCalls fail with EAFNOSUPPORT, whatever the family: the sandbox has no network, and
	// FFmpeg needs no socket between its own processes. A UNIX socket could carry descriptors
	// (SCM_RIGHTS) of files unlinked while open, which then fill the disk held by no process,
	// where the byte cap's watcher cannot see them.
	socketCalls = []string{"socket", "socketpair"}
	// enosysCalls fail with ENOSYS: clone3 passes its flags in memory a filter cannot read,
	// so namespace flags could hide there; glibc falls back to clone, whose flags it can.
	// ENOSYS, not EPERM: glibc falls back on ENOSYS alone, and the native launcher's
	// posix_spawn, as FFmpeg's threads, would fail otherwise.
	enosysCalls = []string{"clone3"}
)

// namespaceFlags are clone's flags that make a namespace. CLONE_NEWTIME is left out: clone
// cannot take it (the bit is part of the exit signal there), only clone3 and unshare can.
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// Persona values personality may be called with: PER_LINUX, and 0xffffffff, which only asks.
// Any other changes how the next program runs (ADDR_NO_RANDOMIZE turns ASLR off).
const (
	perLinux     = 0
	personaQuery = 0xffffffff
)

// argumentRules deny a call by its arguments. Each is a filter of its own, whose default is
// to allow: the library leaves a call's argument, not its number, in the accumulator when the
// call's conditions fail, so a failed condition must end the program, where the default
// answers, rather than fall through to the next rule (checked by TestSyscallFilterDecisions).
// The kernel runs every filter and keeps the strictest answer.
var argumentRules = []struct {
	call  seccomp.NameWithConditions
	errno unix.Errno
}{
	// fallocate with a mode: FALLOC_FL_KEEP_SIZE reserves disk beyond the file's length, which
	// RLIMIT_FSIZE does not limit, so one call could take the whole disk before the byte cap's
	// watcher looks. Mode 0 (posix_fallocate's) grows the length, which the rlimit holds. A
	// mode with high bits set is not 0, and is refused too.
	{call: seccomp.NameWithConditions{Name: "fallocate", Conditions: seccomp.ArgumentConditions{
		{Argument: 1, Operation: seccomp.NotEqual, Value: 0}}}, errno: unix.EOPNOTSUPP},
	// The same reservation through the XFS space ioctls, which the kernel serves on every
	// filesystem as fallocate with KEEP_SIZE: FS_IOC_RESVSP, RESVSP64 and ZERO_RANGE, all of the
	// _IOW('X', nr, struct of 48 bytes) family (0x403058nn), which FFmpeg never calls.
	{call: seccomp.NameWithConditions{Name: "ioctl", Conditions: lowBitsAre(1, xfsSpaceIoctls, 0xffffff00)}, errno: unix.EOPNOTSUPP},
	{call: seccomp.NameWithConditions{Name: "clone", Conditions: seccomp.ArgumentConditions{
		{Argument: 0, Operation: seccomp.BitsSet, Value: namespaceFlags}}}, errno: unix.EPERM},
	{call: seccomp.NameWithConditions{Name: "personality", Conditions: seccomp.ArgumentConditions{
		{Argument: 0, Operation: seccomp.NotEqual, Value: perLinux},
		{Argument: 0, Operation: seccomp.NotEqual, Value: personaQuery}}}, errno: unix.EPERM},
}

func errno(e unix.Errno) seccomp.Action { return seccomp.ActionErrno | seccomp.Action(e) }

// xfsSpaceIoctls is _IOW('X', 0, 48 bytes): the XFS space ioctls with their number masked off.
const xfsSpaceIoctls = 0x40305800

// lowBitsAre is the conditions that argument arg's low 32 bits, masked by mask, equal value,
// whatever its high 32 bits (the kernel truncates an int argument such as ioctl's command, so
// an equality on all 64 would miss the same command with high bits set). The library has no
// masked equality: each bit of the mask that value sets must be set, and none it clears.
func lowBitsAre(arg, value, mask uint32) seccomp.ArgumentConditions {
	conds := seccomp.ArgumentConditions{{Argument: arg, Operation: seccomp.BitsNotSet, Value: uint64(^value & mask)}}
	for bit := uint32(1); bit != 0; bit <<= 1 {
		if value&mask&bit != 0 {
			conds = append(conds, seccomp.Condition{Argument: arg, Operation: seccomp.BitsSet, Value: uint64(bit)})
		}
	}
	return conds
}

// filterPolicies are the policies of the filter: the deny-list by call number first, then
// one per argument rule. They are written for amd64, where the probe proves them; on another
// architecture the calls it lacks (iopl, ioperm on arm64) are left out, and its compat ABI is
// closed as i386's is.
func filterPolicies() ([]seccomp.Policy, error) {
	table, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("system call filter: %w", err)
	}
	known := func(names []string) []string {
		return slices.DeleteFunc(slices.Clone(names), func(n string) bool { _, ok := table.SyscallNames[n]; return !ok })
	}
	var allowed []string
	for nr := range 1024 {
		if name, ok := table.SyscallNumbers[nr]; ok && !slices.Contains(deniedCalls, name) && !slices.Contains(socketCalls, name) && !slices.Contains(enosysCalls, name) {
			allowed = append(allowed, name)
		}
	}
	policies := []seccomp.Policy{{
		DefaultAction: seccomp.ActionTrace, // ENOSYS: see above
		Syscalls: []seccomp.SyscallGroup{
			{Names: known(deniedCalls), Action: errno(unix.EPERM)},
			{Names: known(socketCalls), Action: errno(unix.EAFNOSUPPORT)},
			{Names: known(enosysCalls), Action: errno(unix.ENOSYS)},
			{Names: allowed, Action: seccomp.ActionAllow},
		},
	}}
	for _, r := range argumentRules {
		policies = append(policies, seccomp.Policy{
			DefaultAction: seccomp.ActionAllow,
			Syscalls:      []seccomp.SyscallGroup{{NamesWithCondtions: []seccomp.NameWithConditions{r.call}, Action: errno(r.errno)}},
		})
	}
	return policies, nil
}

// compiledFilters are the policies as bubblewrap's --add-seccomp-fd takes them: struct
// sock_filter entries in this machine's byte order. They are built once per process.
var compiledFilters = sync.OnceValues(func() ([][]byte, error) {
	policies, err := filterPolicies()
	if err != nil {
		return nil, err
	}
	progs := make([][]byte, 0, len(policies))
	for _, p := range policies {
		insts, err := p.Assemble()
		if err != nil {
			return nil, fmt.Errorf("assemble the system call filter: %w", err)
		}
		raw, err := bpf.Assemble(insts)
		if err != nil {
			return nil, fmt.Errorf("assemble the system call filter: %w", err)
		}
		prog := make([]byte, 0, 8*len(raw))
		for _, in := range raw {
			prog = binary.NativeEndian.AppendUint16(prog, in.Op)
			prog = append(prog, in.Jt, in.Jf)
			prog = binary.NativeEndian.AppendUint32(prog, in.K)
		}
		progs = append(progs, prog)
	}
	return progs, nil
})

// filterFiles are the compiled filters in files of their own for one run: bubblewrap reads
// each to the end from its offset, so runs at the same time cannot share them. A memfd is a
// few microseconds and never touches a disk.
func filterFiles() ([]*os.File, error) {
	progs, err := compiledFilters()
	if err != nil {
		return nil, err
	}
	files := make([]*os.File, 0, len(progs))
	for _, prog := range progs {
		f, err := sealedMemfd("mediajobs-seccomp", prog)
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, fmt.Errorf("system call filter: %w", err)
		}
		files = append(files, f)
	}
	return files, nil
}

// sealedMemfd is a memfd holding data, sealed so that nothing given the descriptor can change
// it, and read from its start.
func sealedMemfd(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fmt.Errorf("write memfd: %w", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL); err != nil {
		f.Close()
		return nil, fmt.Errorf("seal memfd: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("rewind memfd: %w", err)
	}
	return f, nil
}
