// Package diskcheck finds a filesystem that makes the service's small files dear, so that an
// operator hears of it at start: an ext4 without a journal. Without one, ext4 will not give a
// new file or directory an inode freed in the last half-minute (the kernel's
// recently_deleted, so that a crash cannot mix an old inode's blocks with a new one's), and
// skips each of them, one by one, every time it makes one. A service that makes and removes a
// handful of files and directories for every job (its work directory, a warm sandbox's, the
// output and its blob) frees hundreds a minute, and each new one then costs a scan past all of
// them: measured at about 0.7 ms of CPU each on a 2-vCPU host, against 0.015 ms on a journaled
// ext4 on the same host (docs/performance.md, "The disk under the fleet").
package diskcheck

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Unjournaled reports whether dir is on an ext4 filesystem without a journal, and the block
// device it is on ("vda", "dm-0"). A dir not made yet is asked about by its nearest parent that
// is, where it will be made. A filesystem it cannot tell about (not Linux, no sysfs) is an
// error, which callers may ignore: the check only adds a warning.
func Unjournaled(dir string) (device string, ok bool, err error) {
	var st unix.Stat_t
	for {
		err := unix.Stat(dir, &st)
		if err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if !errors.Is(err, unix.ENOENT) || parent == dir {
			return "", false, fmt.Errorf("diskcheck: %w", err)
		}
		dir = parent
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", false, fmt.Errorf("diskcheck: %w", err)
	}
	defer f.Close()
	return unjournaled(unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), f, "/sys")
}

// unjournaled is Unjournaled for the filesystem of device major:minor, reading the mount table
// from mountinfo (proc(5)'s /proc/self/mountinfo) and the device's state under sys.
func unjournaled(major, minor uint32, mountinfo io.Reader, sys string) (string, bool, error) {
	fstype, err := fsType(fmt.Sprintf("%d:%d", major, minor), mountinfo)
	if err != nil || fstype != "ext4" {
		return "", false, err
	}
	// /sys/dev/block/M:m links to the device's own directory, whose name is the one ext4
	// files its state under (a device-mapper volume is dm-N there, not its /dev/mapper name).
	target, err := os.Readlink(filepath.Join(sys, "dev", "block", fmt.Sprintf("%d:%d", major, minor)))
	if err != nil {
		return "", false, fmt.Errorf("diskcheck: %w", err)
	}
	device := filepath.Base(target)
	task, err := os.ReadFile(filepath.Join(sys, "fs", "ext4", device, "journal_task"))
	if err != nil {
		return device, false, fmt.Errorf("diskcheck: %w", err)
	}
	return device, strings.TrimSpace(string(task)) == "<none>", nil
}

// fsType is the filesystem type of the mount of device dev ("M:m") in a mountinfo table.
func fsType(dev string, mountinfo io.Reader) (string, error) {
	s := bufio.NewScanner(mountinfo)
	s.Buffer(make([]byte, 0, 4096), 1<<20)
	for s.Scan() {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
		fields := strings.Fields(s.Text())
		if len(fields) < 3 || fields[2] != dev {
			continue
		}
		for i, f := range fields {
			if f == "-" && i+1 < len(fields) {
				return fields[i+1], nil
			}
		}
	}
	if err := s.Err(); err != nil {
		return "", fmt.Errorf("diskcheck: mountinfo: %w", err)
	}
	return "", errors.New("diskcheck: the device " + dev + " is not in the mount table")
}

// Warn logs a warning when dir, which holds the service's use (its "data directory", "work
// directory"), is on an ext4 filesystem without a journal; it logs nothing otherwise, or where
// it cannot tell.
func Warn(log *slog.Logger, dir, use string) {
	device, ok, err := Unjournaled(dir)
	if err != nil || !ok {
		return
	}
	log.Warn("the "+use+" is on an ext4 filesystem without a journal: each file and directory made there scans past every one removed in the last 30 s, which each job pays several times; a journaled filesystem (ext4's default, xfs) does not",
		"dir", dir, "device", device)
}
