package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// MountExt4 makes a small ext4 filesystem, with a journal or without one, and mounts it on a
// loop device at mnt (made 0711 if missing, so that the sandbox user can reach work directories
// in it) for the test's length. It needs root, mkfs.ext4 and a free loop device.
func MountExt4(t testing.TB, mnt string, journal bool) {
	t.Helper()
	if os.Geteuid() != 0 {
		Missing(t, "root, to mount a filesystem image on a loop device", nil)
	}
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		Missing(t, "mkfs.ext4 (e2fsprogs)", err)
	}
	img := filepath.Join(t.TempDir(), "fs.img")
	mkfs := []string{"-q", "-F", img}
	if !journal {
		mkfs = append([]string{"-O", "^has_journal"}, mkfs...)
	}
	run(t, "truncate", "-s", "32M", img)
	run(t, "mkfs.ext4", mkfs...)
	if err := os.MkdirAll(mnt, 0o711); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		Missing(t, "a loop device to mount a filesystem image on", strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { run(t, "umount", mnt) })
	if err := os.Chmod(mnt, 0o711); err != nil {
		t.Fatal(err)
	}
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}
