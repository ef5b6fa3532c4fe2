package dockersandbox

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// TestSeccompProfile: the containers' profile is Docker's default, whose default action
// refuses, with no rule that lets a socket be made, and fallocate allowed only without a mode:
// the rules that name them are these alone. The suite shows the engine applying it
// (TestNoSockets, TestNoDiskReservedPastTheLength).
func TestSeccompProfile(t *testing.T) {
	t.Parallel()
	raw, err := seccompProfile()
	if err != nil {
		t.Fatal(err)
	}
	var p seccomp.Seccomp
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		t.Fatal(err)
	}
	if p.DefaultAction != seccomp.DefaultProfile().DefaultAction || p.DefaultAction == specs.ActAllow {
		t.Errorf("default action %q, want Docker's default profile's", p.DefaultAction)
	}
	var sockets, fallocates []*seccomp.Syscall
	others, ioctls := 0, 0
	for _, sc := range p.Syscalls {
		switch {
		case slices.Contains(sc.Names, "ioctl"):
			ioctls++
			// Allowed only where a bit of the command's low 32 tells it from XFS's space family.
			if len(sc.Names) != 1 || sc.Action != specs.ActAllow || len(sc.Args) != 1 || sc.Args[0].Op != specs.OpMaskedEqual ||
				sc.Args[0].Value < 1<<8 || sc.Args[0].Value >= 1<<32 || sc.Args[0].ValueTwo != ^uint64(xfsSpaceIoctls)&sc.Args[0].Value {
				t.Errorf("a rule naming ioctl: %s", show(sc))
			}
		case slices.ContainsFunc(sc.Names, func(n string) bool { return n == "socket" || n == "socketpair" || n == "socketcall" }):
			sockets = append(sockets, sc)
		case slices.Contains(sc.Names, "fallocate"):
			fallocates = append(fallocates, sc)
		case slices.Contains(sc.Names, "read"):
			others++
		}
	}
	if len(sockets) != 1 || sockets[0].Action != specs.ActErrno || sockets[0].ErrnoRet == nil || *sockets[0].ErrnoRet != uint(unix.EAFNOSUPPORT) || len(sockets[0].Args) != 0 {
		t.Errorf("the rules naming socket calls: %s; want one, EAFNOSUPPORT for every call", show(sockets))
	}
	if len(fallocates) != 2 ||
		fallocates[0].Action != specs.ActAllow || len(fallocates[0].Args) != 1 || fallocates[0].Args[0] != (specs.LinuxSeccompArg{Index: 1, Value: 0, Op: specs.OpEqualTo}) ||
		fallocates[1].Action != specs.ActErrno || len(fallocates[1].Args) != 1 || fallocates[1].Args[0].Op != specs.OpNotEqual {
		t.Errorf("the rules naming fallocate: %s; want it allowed with mode 0 and EOPNOTSUPP otherwise", show(fallocates))
	}
	if ioctls != 24 {
		t.Errorf("%d rules name ioctl; want one for each of the 24 bits above the command's number", ioctls)
	}
	if others != 1 {
		t.Errorf("%d rules allow read; want the default profile's one", others)
	}
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
