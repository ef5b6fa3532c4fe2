package sandbox

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestCloseInheritedOnExec: a descriptor opened without close-on-exec, as one inherited from a
// shell or a supervisor is, is marked close-on-exec before a sandbox starts, so bubblewrap
// never passes it into the sandbox: by close_range where the kernel has it (every kernel we
// support does: Debian 12 has 6.1), and by the walk of /proc/self/fd where it has not.
func TestCloseInheritedOnExec(t *testing.T) {
	// Not parallel: each marks every descriptor of the test binary, as a sandbox start does.
	for _, tc := range []struct {
		name string
		mark func() error
	}{
		{"closeInheritedOnExec", closeInheritedOnExec},
		{"rangeCloseOnExec", rangeCloseOnExec},
		{"walkCloseOnExec", walkCloseOnExec},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fd, err := unix.Open("/dev/null", unix.O_RDONLY, 0) // no O_CLOEXEC
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { unix.Close(fd) })
			if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC != 0 {
				t.Fatalf("the descriptor's flags before: %#x, %v; want it inheritable", flags, err)
			}
			if err := tc.mark(); err != nil {
				t.Fatal(err)
			}
			flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
			if err != nil {
				t.Fatal(err)
			}
			if flags&unix.FD_CLOEXEC == 0 {
				t.Errorf("descriptor %d is still inherited by exec (flags %#x)", fd, flags)
			}
		})
	}
}
