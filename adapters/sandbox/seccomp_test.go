package sandbox

import (
	"encoding/binary"
	"runtime"
	"slices"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

const (
	auditArchX8664 = 0xc000003e
	auditArchI386  = 0x40000003
	retAllow       = unix.SECCOMP_RET_ALLOW
	retTrace       = unix.SECCOMP_RET_TRACE // ENOSYS without a tracer
	// addrNoRandomize is the persona flag that turns ASLR off.
	addrNoRandomize = 0x0040000
)

func retErrno(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }

// decide runs the compiled filters on one call as the kernel does: each filter, then the
// strictest answer (the lowest action, read as signed), the newest filter's on a tie.
func decide(t *testing.T, filters [][]bpf.Instruction, auditArch, nr uint32, args ...uint64) uint32 {
	t.Helper()
	// struct seccomp_data, each 32-bit word big-endian: the VM loads words as network order,
	// where the kernel loads them in the machine's order.
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[0:], nr)
	binary.BigEndian.PutUint32(data[4:], auditArch)
	for i, a := range args {
		binary.BigEndian.PutUint32(data[16+8*i:], uint32(a))       // low word first, as on x86-64
		binary.BigEndian.PutUint32(data[16+8*i+4:], uint32(a>>32)) // then the high word
	}
	result := uint32(retAllow)
	for _, f := range slices.Backward(filters) {
		vm, err := bpf.NewVM(f)
		if err != nil {
			t.Fatalf("NewVM: %v", err)
		}
		out, err := vm.Run(data)
		if err != nil {
			t.Fatalf("run filter: %v", err)
		}
		if r := uint32(out); int32(r&unix.SECCOMP_RET_ACTION_FULL) < int32(result&unix.SECCOMP_RET_ACTION_FULL) {
			result = r
		}
	}
	return result
}

func compiledPolicies(t *testing.T) [][]bpf.Instruction {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skipf("the decisions tested are amd64's, not %s's", runtime.GOARCH)
	}
	policies, err := filterPolicies()
	if err != nil {
		t.Fatal(err)
	}
	var filters [][]bpf.Instruction
	for _, p := range policies {
		insts, err := p.Assemble()
		if err != nil {
			t.Fatal(err)
		}
		filters = append(filters, insts)
	}
	return filters
}

// TestSyscallFilterDecisions checks what the filter answers for calls the sandbox's probe
// cannot make on every kernel (the i386 ABI) and for every call of the table.
func TestSyscallFilterDecisions(t *testing.T) {
	t.Parallel()
	filters := compiledPolicies(t)
	const goThreadFlags = unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_SYSVSEM | unix.CLONE_THREAD
	const glibcForkFlags = unix.CLONE_CHILD_SETTID | unix.CLONE_CHILD_CLEARTID | uint64(unix.SIGCHLD)
	tests := []struct {
		name      string
		auditArch uint32
		nr        uint32
		args      []uint64
		want      uint32
	}{
		{"read", auditArchX8664, unix.SYS_READ, nil, retAllow},
		{"socket(AF_UNIX)", auditArchX8664, unix.SYS_SOCKET, []uint64{unix.AF_UNIX, unix.SOCK_STREAM}, retErrno(unix.EAFNOSUPPORT)},
		{"socket(AF_INET)", auditArchX8664, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_STREAM}, retErrno(unix.EAFNOSUPPORT)},
		{"socketpair(AF_UNIX)", auditArchX8664, unix.SYS_SOCKETPAIR, []uint64{unix.AF_UNIX}, retErrno(unix.EAFNOSUPPORT)},
		{"socketpair(AF_INET)", auditArchX8664, unix.SYS_SOCKETPAIR, []uint64{unix.AF_INET}, retErrno(unix.EAFNOSUPPORT)},
		{"fallocate, mode 0", auditArchX8664, unix.SYS_FALLOCATE, []uint64{3, 0, 0, 1 << 20}, retAllow},
		{"fallocate(FALLOC_FL_KEEP_SIZE)", auditArchX8664, unix.SYS_FALLOCATE, []uint64{3, unix.FALLOC_FL_KEEP_SIZE, 0, 1 << 40}, retErrno(unix.EOPNOTSUPP)},
		{"fallocate(FALLOC_FL_PUNCH_HOLE)", auditArchX8664, unix.SYS_FALLOCATE, []uint64{3, unix.FALLOC_FL_PUNCH_HOLE | unix.FALLOC_FL_KEEP_SIZE}, retErrno(unix.EOPNOTSUPP)},
		{"fallocate, mode 0 with high bits set", auditArchX8664, unix.SYS_FALLOCATE, []uint64{3, 1 << 32}, retErrno(unix.EOPNOTSUPP)},
		{"ioctl(FS_IOC_RESVSP64)", auditArchX8664, unix.SYS_IOCTL, []uint64{3, 0x4030582a}, retErrno(unix.EOPNOTSUPP)},
		{"ioctl(FS_IOC_RESVSP)", auditArchX8664, unix.SYS_IOCTL, []uint64{3, 0x40305828}, retErrno(unix.EOPNOTSUPP)},
		{"ioctl(FS_IOC_ZERO_RANGE)", auditArchX8664, unix.SYS_IOCTL, []uint64{3, 0x4030587f}, retErrno(unix.EOPNOTSUPP)},
		{"ioctl(FS_IOC_RESVSP64) with high bits set", auditArchX8664, unix.SYS_IOCTL, []uint64{3, 0xffffffff_4030582a}, retErrno(unix.EOPNOTSUPP)},
		{"ioctl(TCGETS)", auditArchX8664, unix.SYS_IOCTL, []uint64{1, unix.TCGETS}, retAllow},
		{"ioctl(FIONREAD, as TIOCINQ)", auditArchX8664, unix.SYS_IOCTL, []uint64{0, unix.TIOCINQ}, retAllow},
		{"ioctl of another size in the 'X' family", auditArchX8664, unix.SYS_IOCTL, []uint64{3, 0xc0185800}, retAllow},
		{"ioctl one bit off the family", auditArchX8664, unix.SYS_IOCTL, []uint64{3, 0x4030582a ^ 0x00100000}, retAllow},
		// The library leaves the argument in the accumulator when a condition fails; these
		// would read as unknown calls (ENOSYS) if a failed condition fell through.
		{"clone for a Go thread", auditArchX8664, unix.SYS_CLONE, []uint64{goThreadFlags}, retAllow},
		{"clone for glibc's fork", auditArchX8664, unix.SYS_CLONE, []uint64{glibcForkFlags}, retAllow},
		{"clone(CLONE_NEWUSER)", auditArchX8664, unix.SYS_CLONE, []uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, retErrno(unix.EPERM)},
		{"clone(CLONE_NEWNET)", auditArchX8664, unix.SYS_CLONE, []uint64{unix.CLONE_NEWNET}, retErrno(unix.EPERM)},
		{"clone3", auditArchX8664, unix.SYS_CLONE3, nil, retErrno(unix.ENOSYS)},
		{"personality(PER_LINUX)", auditArchX8664, unix.SYS_PERSONALITY, []uint64{0}, retAllow},
		{"personality(query)", auditArchX8664, unix.SYS_PERSONALITY, []uint64{0xffffffff}, retAllow},
		{"personality(ADDR_NO_RANDOMIZE)", auditArchX8664, unix.SYS_PERSONALITY, []uint64{addrNoRandomize}, retErrno(unix.EPERM)},
		{"unshare", auditArchX8664, unix.SYS_UNSHARE, nil, retErrno(unix.EPERM)},
		{"io_uring_setup", auditArchX8664, unix.SYS_IO_URING_SETUP, nil, retErrno(unix.EPERM)},
		{"x32 read", auditArchX8664, unix.SYS_READ | 0x40000000, nil, retErrno(unix.ENOSYS)},
		{"a number past the table", auditArchX8664, 1000, nil, retTrace},
		// i386: getpid is 20, socketcall 102 (getuid's number on x86-64), unshare 310.
		{"i386 getpid", auditArchI386, 20, nil, retTrace},
		{"i386 socketcall", auditArchI386, 102, []uint64{1}, retTrace},
		{"i386 unshare", auditArchI386, 310, nil, retTrace},
		{"i386 socket(AF_UNIX)", auditArchI386, 359, []uint64{unix.AF_UNIX}, retTrace},
	}
	for _, tt := range tests {
		if got := decide(t, filters, tt.auditArch, tt.nr, tt.args...); got != tt.want {
			t.Errorf("%s: filter answers %#x, want %#x", tt.name, got, tt.want)
		}
	}

	// Every other call of the table passes, with any arguments the argument rules allow.
	for nr, name := range arch.X86_64.SyscallNumbers {
		want := uint32(retAllow)
		switch {
		case slices.Contains(deniedCalls, name):
			want = retErrno(unix.EPERM)
		case slices.Contains(enosysCalls, name):
			want = retErrno(unix.ENOSYS)
		case name == "socket" || name == "socketpair":
			continue // zero is AF_UNSPEC, denied; tested above
		}
		if got := decide(t, filters, auditArchX8664, uint32(nr), 0, 0, 0); got != want {
			t.Errorf("%s (%d): filter answers %#x, want %#x", name, nr, got, want)
		}
	}
}

func TestSyscallFilterDeniesOnlyKnownCalls(t *testing.T) {
	t.Parallel()
	for _, name := range slices.Concat(deniedCalls, enosysCalls) {
		if _, ok := arch.X86_64.SyscallNames[name]; !ok {
			t.Errorf("denied call %q is not in the x86-64 table", name)
		}
	}
	if _, err := compiledFilters(); err != nil {
		t.Fatal(err)
	}
}
