package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Arguments that keep each call harmless where nothing denies it: they fail on a bad
// argument (a null pointer, a closed descriptor, a flag combination clone refuses) or do
// nothing lasting (unshare of nothing, a persona set back at once).
const (
	ptracePeekData     = 2
	keyctlGetKeyringID = 0
	keySpecSession     = -3
	uffdUserModeOnly   = 1
	perLinux32         = 0x0008
	personaQuery       = 0xffffffff
	x32Bit             = 0x40000000
	// i386 call numbers.
	i386Getpid  = 20
	i386Ptrace  = 26
	i386Unshare = 310
	i386Socket  = 359
)

type attempt struct {
	name string
	call func() (uintptr, unix.Errno)
}

func sys(nr uintptr, args ...uintptr) func() (uintptr, unix.Errno) {
	return func() (uintptr, unix.Errno) {
		var a [6]uintptr
		copy(a[:], args)
		r, _, e := unix.Syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
		return r, e
	}
}

// closing is sys for a call that returns a descriptor on success, which it closes.
func closing(nr uintptr, args ...uintptr) func() (uintptr, unix.Errno) {
	return func() (uintptr, unix.Errno) {
		r, e := sys(nr, args...)()
		if e == 0 {
			unix.Close(int(r))
		}
		return r, e
	}
}

func neg(n int) uintptr { return uintptr(n) }

// fsIocResvsp64 is _IOW('X', 42, struct xfs_flock64): fallocate with KEEP_SIZE, on every
// filesystem.
const fsIocResvsp64 = 0x4030582a

func syscalls() {
	root, _ := unix.BytePtrFromString("/")
	pid := uintptr(os.Getpid())
	var fds [2]int32
	pair := func(domain int) func() (uintptr, unix.Errno) {
		return func() (uintptr, unix.Errno) {
			r, e := sys(unix.SYS_SOCKETPAIR, uintptr(domain), unix.SOCK_STREAM, 0, uintptr(unsafe.Pointer(&fds)))()
			if e == 0 {
				unix.Close(int(fds[0]))
				unix.Close(int(fds[1]))
			}
			return r, e
		}
	}
	// falloc reserves 4 KiB of a file of the work directory with mode.
	falloc := func(mode uintptr) func() (uintptr, unix.Errno) {
		return func() (uintptr, unix.Errno) {
			fd, err := unix.Open("fallocate.probe", unix.O_CREAT|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
			if err != nil {
				return 0, err.(unix.Errno)
			}
			defer unix.Unlink("fallocate.probe")
			defer unix.Close(fd)
			return sys(unix.SYS_FALLOCATE, uintptr(fd), mode, 0, 4096)()
		}
	}
	// resvsp reserves 4 KiB of a file of the work directory through FS_IOC_RESVSP64, whose
	// argument is an xfs_flock64 (48 bytes: type, whence, start, length, ...).
	resvsp := func() (uintptr, unix.Errno) {
		fd, err := unix.Open("resvsp.probe", unix.O_CREAT|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return 0, err.(unix.Errno)
		}
		defer unix.Unlink("resvsp.probe")
		defer unix.Close(fd)
		var flock [6]int64 // l_type, l_whence (and padding); l_start; l_len; the rest zero
		flock[2] = 4096
		return sys(unix.SYS_IOCTL, uintptr(fd), fsIocResvsp64, uintptr(unsafe.Pointer(&flock)))()
	}
	attempts := []attempt{
		// Allowed: the controls.
		{"getpid", sys(unix.SYS_GETPID)},
		{"personality(query)", sys(unix.SYS_PERSONALITY, personaQuery)},
		{"fork and exec", forkExec},
		{"fallocate, mode 0", falloc(0)},

		// Denied.
		{"ptrace", sys(unix.SYS_PTRACE, ptracePeekData, pid, 0, 0)},
		{"process_vm_readv", sys(unix.SYS_PROCESS_VM_READV, pid, 0, 0, 0, 0, 0)},
		// A pidfd of itself is enough to ask: the filter answers before the kernel looks.
		{"pidfd_getfd", sys(unix.SYS_PIDFD_GETFD, neg(-1), 0, 0)},
		{"process_madvise", sys(unix.SYS_PROCESS_MADVISE, neg(-1), 0, 0, 0, 0)},
		{"unshare", sys(unix.SYS_UNSHARE, 0)},
		{"setns", sys(unix.SYS_SETNS, neg(-1), 0)},
		{"clone(CLONE_NEWUSER)", sys(unix.SYS_CLONE, unix.CLONE_NEWUSER|unix.CLONE_FS|uintptr(unix.SIGCHLD))},
		{"clone(CLONE_NEWNS)", sys(unix.SYS_CLONE, unix.CLONE_NEWNS|unix.CLONE_FS|uintptr(unix.SIGCHLD))},
		{"clone3", sys(unix.SYS_CLONE3, 0, 0)},
		{"mount", sys(unix.SYS_MOUNT, 0, 0, 0, 0, 0)},
		{"umount2", sys(unix.SYS_UMOUNT2, 0, 0)},
		{"pivot_root", sys(unix.SYS_PIVOT_ROOT, 0, 0)},
		{"fsopen", closing(unix.SYS_FSOPEN, 0, 0)},
		{"open_tree", closing(unix.SYS_OPEN_TREE, neg(unix.AT_FDCWD), uintptr(unsafe.Pointer(root)), unix.O_CLOEXEC)},
		{"bpf", closing(unix.SYS_BPF, 0, 0, 0)},
		// A filter with a user-space listener, which could answer calls a filter denies.
		{"seccomp(NEW_LISTENER)", closing(unix.SYS_SECCOMP, seccompSetModeFilter, seccompFlagNewListener, 0)},
		{"perf_event_open", closing(unix.SYS_PERF_EVENT_OPEN, 0, 0, neg(-1), neg(-1), 0)},
		{"userfaultfd", closing(unix.SYS_USERFAULTFD, uffdUserModeOnly|unix.O_CLOEXEC)},
		{"io_uring_setup", closing(unix.SYS_IO_URING_SETUP, 1, 0)},
		{"io_uring_enter", sys(unix.SYS_IO_URING_ENTER, neg(-1), 0, 0, 0, 0, 0)},
		{"io_uring_register", sys(unix.SYS_IO_URING_REGISTER, neg(-1), 0, 0, 0)},
		{"keyctl", sys(unix.SYS_KEYCTL, keyctlGetKeyringID, neg(keySpecSession), 0)},
		{"add_key", sys(unix.SYS_ADD_KEY, 0, 0, 0, 0, 0)},
		{"request_key", sys(unix.SYS_REQUEST_KEY, 0, 0, 0, 0)},
		{"kexec_load", sys(unix.SYS_KEXEC_LOAD, 0, 0, 0, 0)},
		{"kexec_file_load", sys(unix.SYS_KEXEC_FILE_LOAD, neg(-1), neg(-1), 0, 0, 0)},
		{"init_module", sys(unix.SYS_INIT_MODULE, 0, 0, 0)},
		{"finit_module", sys(unix.SYS_FINIT_MODULE, neg(-1), 0, 0)},
		{"delete_module", sys(unix.SYS_DELETE_MODULE, 0, 0)},
		{"personality(PER_LINUX32)", func() (uintptr, unix.Errno) {
			r, e := sys(unix.SYS_PERSONALITY, perLinux32)()
			if e == 0 {
				_, _ = sys(unix.SYS_PERSONALITY, r)()
			}
			return r, e
		}},
		{"socket(AF_UNIX)", closing(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM, 0)},
		{"socketpair(AF_UNIX)", pair(unix.AF_UNIX)},
		{"fallocate(KEEP_SIZE)", falloc(unix.FALLOC_FL_KEEP_SIZE)},
		{"ioctl(FS_IOC_RESVSP64)", resvsp},
		{"socket(AF_INET)", closing(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0)},
		{"socket(AF_INET6)", closing(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_DGRAM, 0)},
		{"socket(AF_NETLINK)", closing(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE)},
		{"socket(AF_PACKET)", closing(unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_RAW, 0)},
		{"socketpair(AF_INET)", pair(unix.AF_INET)},
		// Other ABIs: x32 (a flag on the call number) and i386 (int 0x80), whose numbers
		// mean other calls.
		{"x32 getpid", sys(unix.SYS_GETPID | x32Bit)},
		{"i386 getpid", viaI386(i386Getpid, 0, 0, 0)},
		{"i386 ptrace", viaI386(i386Ptrace, ptracePeekData, uint32(pid), 0)},
		{"i386 unshare", viaI386(i386Unshare, 0, 0, 0)},
		{"i386 socket(AF_INET)", viaI386(i386Socket, unix.AF_INET, unix.SOCK_STREAM, 0)},
	}
	for _, a := range attempts {
		_, e := a.call()
		fmt.Printf("%s\t%s\n", a.name, result(e))
	}
}

func result(e unix.Errno) string {
	switch e {
	case 0:
		return "OK"
	case errAbsent:
		return "ABSENT"
	}
	if name := unix.ErrnoName(e); name != "" {
		return name
	}
	return "errno " + strconv.Itoa(int(e))
}

// errAbsent stands for an ABI this kernel does not have; no errno has its value.
const errAbsent = unix.Errno(1 << 20)

// forkExec runs this program again: fork (clone without namespace flags) and exec must work.
func forkExec() (uintptr, unix.Errno) {
	if err := exec.Command("/proc/self/exe", "true").Run(); err != nil {
		fmt.Fprintln(os.Stderr, "fork and exec:", err)
		var e syscall.Errno
		if errors.As(err, &e) {
			return 0, e
		}
		return 0, unix.EIO
	}
	return 0, 0
}

// viaI386 makes an i386 call in a child, whose state the call may disturb.
func viaI386(nr, a1, a2, a3 uint32) func() (uintptr, unix.Errno) {
	return func() (uintptr, unix.Errno) {
		out, err := exec.Command("/proc/self/exe", "i386",
			strconv.Itoa(int(nr)), strconv.Itoa(int(a1)), strconv.Itoa(int(a2)), strconv.Itoa(int(a3))).Output()
		if err != nil {
			fmt.Fprintln(os.Stderr, "i386 call:", err)
			return 0, unix.EIO
		}
		if string(out) == "absent" {
			return 0, errAbsent
		}
		r, err := strconv.Atoi(string(out))
		if err != nil || r >= 0 {
			return uintptr(r), 0
		}
		return 0, unix.Errno(-r)
	}
}

// i386 makes one i386 call through int 0x80 and prints what it returned, or "absent" when the
// kernel has no i386 ABI: int 0x80 then faults.
func i386(args []string) {
	var n [4]uint32
	for i := range n {
		v, _ := strconv.ParseInt(args[i], 10, 64)
		n[i] = uint32(v)
	}
	debug.SetPanicOnFault(true)
	defer func() {
		if recover() != nil {
			fmt.Print("absent")
		}
	}()
	fmt.Print(int80(n[0], n[1], n[2], n[3]))
}

// int80 is in int80_amd64.s.
func int80(nr, a1, a2, a3 uint32) int32

// grow maps and touches memory in 1 MiB steps until the kernel or a limit stops it.
func grow() {
	const step = 1 << 20
	for total := 0; ; total += step {
		b, err := unix.Mmap(-1, 0, step, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			fmt.Fprintf(os.Stderr, "grow: mmap after %d MiB: %v\n", total>>20, err)
			os.Exit(3)
		}
		for i := 0; i < len(b); i += os.Getpagesize() {
			b[i] = 1
		}
	}
}

// The seccomp(2) operation and flag the probe asks for (linux/seccomp.h).
const (
	seccompSetModeFilter   = 1
	seccompFlagNewListener = 1 << 3
)
