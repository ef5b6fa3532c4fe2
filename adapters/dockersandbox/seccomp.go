package dockersandbox

import (
	"encoding/json"
	"slices"
	"sync"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// seccompProfile is the system call filter of every container the runner starts: Docker's
// default profile (its allow-list, from moby's own package, so it follows the engine's), with
// what the bubblewrap sandbox's filter also takes away for the byte cap's sake:
//
//   - sockets of every family fail EAFNOSUPPORT. The container has no network, FFmpeg needs no
//     socket between its own processes, and a UNIX socket could carry descriptors of files
//     unlinked while open (SCM_RIGHTS), held by no process, where the byte cap's watcher
//     cannot see them;
//   - fallocate with a mode fails EOPNOTSUPP: FALLOC_FL_KEEP_SIZE reserves disk past the
//     file's length, which RLIMIT_FSIZE does not hold. Mode 0 grows the length, which it does.
//     XFS's space ioctls, served the same way on every filesystem, fail EOPNOTSUPP too.
//
// It is marshalled once, as the engine takes it: the profile's JSON in SecurityOpt.
// xfsSpaceIoctls is _IOW('X', 0, 48 bytes), the family of XFS's space ioctls.
const xfsSpaceIoctls = 0x40305800

var seccompProfile = sync.OnceValues(func() (string, error) {
	p := seccomp.DefaultProfile()
	taken := []string{"socket", "socketpair", "socketcall", "fallocate", "ioctl"}
	kept := p.Syscalls[:0]
	for _, sc := range p.Syscalls {
		sc.Names = slices.DeleteFunc(sc.Names, func(n string) bool { return slices.Contains(taken, n) })
		if len(sc.Names) > 0 {
			kept = append(kept, sc)
		}
	}
	errno := func(e unix.Errno) *uint { n := uint(e); return &n }
	p.Syscalls = append(kept,
		&seccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{
			Names: []string{"socket", "socketpair", "socketcall"}, Action: specs.ActErrno, ErrnoRet: errno(unix.EAFNOSUPPORT)}},
		&seccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{
			Names: []string{"fallocate"}, Action: specs.ActAllow,
			Args: []specs.LinuxSeccompArg{{Index: 1, Value: 0, Op: specs.OpEqualTo}}}},
		&seccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{
			Names: []string{"fallocate"}, Action: specs.ActErrno, ErrnoRet: errno(unix.EOPNOTSUPP),
			Args: []specs.LinuxSeccompArg{{Index: 1, Value: 0, Op: specs.OpNotEqual}}}},
	)
	// XFS's space ioctls (FS_IOC_RESVSP, RESVSP64, ZERO_RANGE), which the kernel serves on
	// every filesystem as fallocate with KEEP_SIZE: _IOW('X', nr, 48 bytes), 0x403058nn. The
	// engine's filter takes an unconditional allow of ioctl over a conditional refusal, so
	// ioctl is allowed instead by one rule per bit of the command's low 32 that can tell it
	// from that family: a command with any of them different is allowed, and the family alone
	// falls to the profile's default, EPERM. A masked compare reads the low 32 bits alone, as
	// the kernel does (it truncates the command).
	for bit := uint64(1 << 8); bit < 1<<32; bit <<= 1 {
		p.Syscalls = append(p.Syscalls, &seccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{
			Names: []string{"ioctl"}, Action: specs.ActAllow,
			Args: []specs.LinuxSeccompArg{{Index: 1, Value: bit, ValueTwo: ^uint64(xfsSpaceIoctls) & bit, Op: specs.OpMaskedEqual}}}})
	}
	b, err := json.Marshal(p)
	return string(b), err
})
