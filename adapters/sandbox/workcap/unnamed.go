package workcap

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// unnamedBytes sums the files on filesystem dev that the processes of PID namespace ns (as
// /proc/PID/ns/pid reads) hold with no name: a link count of zero. Each file counts once,
// however many descriptors and mappings hold it, at the larger of its length and its disk.
// procs is the cgroup.procs file of a cgroup that holds the namespace's processes alone, read
// in place of every process's namespace ("" for none). A staged file (in base, by inode) counts
// only what it grew by. A process that exits meanwhile, or that this one may not inspect, is
// passed over.
func unnamedBytes(ns string, dev uint64, procs string, base staged, named map[uint64]bool) int64 {
	u := &unnamed{dev: dev, base: base, named: named, held: map[uint64]int64{}}
	for _, pid := range members(procs) {
		base := "/proc/" + pid
		if l, err := os.Readlink(base + "/ns/pid"); err != nil || l != ns {
			continue
		}
		u.addOpen(base)
		// A thread made without CLONE_FILES (or after unshare(CLONE_FILES)) has a table of
		// descriptors of its own, which base/fd, the leader's, does not show.
		if tasks, err := os.ReadDir(base + "/task"); err == nil && len(tasks) > 1 {
			leader, _ := strconv.Atoi(pid)
			for _, task := range tasks {
				tid, err := strconv.Atoi(task.Name())
				if err != nil || tid == leader || sameFiles(leader, tid) {
					continue
				}
				u.addOpen(base + "/task/" + task.Name())
			}
		}
		u.addMapped(base)
	}
	for ino, n := range u.held {
		u.held[ino], _ = base.grown(ino, n)
	}
	return total(u.held)
}

// total sums what held holds, each file at most maxHeld: it saturates, never wraps.
func total(held map[uint64]int64) int64 {
	var sum int64
	for _, n := range held {
		sum = min(sum+min(n, maxHeld), math.MaxInt64-maxHeld)
	}
	return sum
}

// members lists the pids of cgroup.procs file procs, or, for "" or where it cannot be read,
// every process.
func members(procs string) []string {
	if procs != "" {
		if b, err := os.ReadFile(procs); err == nil {
			return strings.Fields(string(b))
		}
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// ownCgroupProcs finds the cgroup.procs of a cgroup that pid is in and this process is not (a
// sandbox's job cgroup, a container's), so that a recount reads the few processes there
// instead of the namespace of every process on the host (about 4 µs each). "" where there is
// none: a sandbox without a cgroup of its own.
func ownCgroupProcs(pid int) string {
	theirs, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return ""
	}
	mine, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	ours := map[string]string{} // hierarchy → this process's path in it
	for line := range strings.Lines(string(mine)) {
		if id, rest, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			ours[id] = rest
		}
	}
	for line := range strings.Lines(string(theirs)) {
		id, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		controllers, path, ok2 := strings.Cut(rest, ":")
		if !ok || !ok2 || ours[id] == rest || path == "/" {
			continue
		}
		var mounts []string
		switch {
		case id == "0" && controllers == "":
			mounts = []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} // v2, or v1's unified
		case controllers != "" && !strings.HasPrefix(controllers, "name="):
			mounts = []string{"/sys/fs/cgroup/" + controllers}
		}
		for _, m := range mounts {
			procs := filepath.Join(m, path, "cgroup.procs")
			if b, err := os.ReadFile(procs); err == nil && slices.Contains(strings.Fields(string(b)), strconv.Itoa(pid)) {
				return procs
			}
		}
	}
	return ""
}

// unnamed is one count of the files a sandbox holds with no name in its work directory.
type unnamed struct {
	dev   uint64
	base  staged           // the staged files, by inode
	named map[uint64]bool  // the inodes the walk of the directory found
	held  map[uint64]int64 // what is counted, by inode
}

// has reports whether st is a file of the work directory's filesystem with no name there: no
// link at all, or a staged file the job unlinked (in a warm sandbox it is a second link of the
// job's own file, whose first keeps it alive outside, so its link count says nothing).
func (u *unnamed) has(st *syscall.Stat_t) bool {
	if st.Dev != u.dev {
		return false
	}
	_, isStaged := u.base[st.Ino]
	return st.Nlink == 0 || (isStaged && !u.named[st.Ino])
}

// addOpen records the unnamed files among the descriptors of the process or thread at base
// (/proc/PID or /proc/PID/task/TID).
func (u *unnamed) addOpen(base string) {
	fds, err := os.ReadDir(base + "/fd")
	if err != nil {
		return
	}
	for _, fd := range fds {
		fi, err := os.Stat(base + "/fd/" + fd.Name())
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && u.has(st) {
			u.held[st.Ino] = usage(fi)
		}
	}
}

// kcmpFiles is KCMP_FILES of linux/kcmp.h: do two tasks share one table of descriptors.
const kcmpFiles = 2

// sameFiles reports whether tasks a and b share their table of descriptors; false where kcmp
// cannot tell (then the table is read, which costs time, not safety).
func sameFiles(a, b int) bool {
	r, _, errno := unix.Syscall6(unix.SYS_KCMP, uintptr(a), uintptr(b), kcmpFiles, 0, 0, 0)
	return errno == 0 && r == 0
}

// addMapped records the unnamed files of dev that the process at base (/proc/PID) maps: it may
// have closed every descriptor of one, and still write through the mapping. Each is read
// through map_files, which needs CAP_SYS_ADMIN (or CAP_CHECKPOINT_RESTORE), and counts when the
// process owns it: a library the host replaced while the run had it mapped is unnamed too, but
// is root's. Without map_files a mapping counts at its end in the file, the least the file
// holds.
func (u *unnamed) addMapped(base string) {
	held, dev := u.held, u.dev
	base, maps := mapsOf(base)
	major, minor := unix.Major(dev), unix.Minor(dev)
	for line := range bytes.Lines(maps) {
		// start-end perms offset major:minor inode path; an unlinked file's path ends so. The
		// whole file is read, however long a line (a path deep in directories) is.
		line = bytes.TrimSuffix(line, []byte("\n"))
		if !bytes.HasSuffix(line, []byte(" (deleted)")) {
			continue
		}
		fields := bytes.Fields(line)
		if len(fields) < 6 {
			continue
		}
		span, offset, devField, inodeField := fields[0], fields[2], fields[3], fields[4]
		maj, mnr, ok := bytes.Cut(devField, []byte(":"))
		if !ok || !hexIs(maj, uint64(major)) || !hexIs(mnr, uint64(minor)) {
			continue
		}
		ino, err := strconv.ParseUint(string(inodeField), 10, 64)
		if err != nil || held[ino] > 0 {
			continue
		}
		if fi, err := os.Stat(base + "/map_files/" + string(span)); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && u.has(st) {
				// A staged file is the job's whoever owns it; another must be the process's own.
				if _, isStaged := u.base[st.Ino]; isStaged || int64(st.Uid) == fsuid(base) {
					held[ino] = usage(fi)
				}
			}
			continue
		}
		start, end, ok := bytes.Cut(span, []byte("-"))
		s, err1 := strconv.ParseUint(string(start), 16, 64)
		e, err2 := strconv.ParseUint(string(end), 16, 64)
		off, err3 := strconv.ParseUint(string(offset), 16, 64)
		if ok && err1 == nil && err2 == nil && err3 == nil && e > s {
			// Offsets near 2^64 must not wrap the sum below zero.
			held[ino] = max(held[ino], int64(min(off, maxHeld)+min(e-s, maxHeld)))
		}
	}
}

// maxHeld bounds what one file counts for, so that sums of them cannot overflow.
const maxHeld = 1 << 50

// mapsOf reads the mappings of the process at base (/proc/PID), and returns them with the
// /proc directory they were read through. A process whose first thread has exited (its other
// threads live on) shows none there: they are read through a live thread's /proc/TID.
func mapsOf(base string) (string, []byte) {
	if maps, err := os.ReadFile(base + "/maps"); err != nil || len(maps) > 0 {
		return base, maps
	}
	tasks, err := os.ReadDir(base + "/task")
	if err != nil {
		return base, nil
	}
	for _, task := range tasks {
		thread := "/proc/" + task.Name()
		if maps, err := os.ReadFile(thread + "/maps"); err == nil && len(maps) > 0 {
			return thread, maps
		}
	}
	return base, nil
}

// fsuid is the user the process at base makes files as, -1 where it cannot be read.
func fsuid(base string) int64 {
	status, err := os.ReadFile(base + "/status")
	if err != nil {
		return -1
	}
	for line := range bytes.Lines(status) {
		if ids, ok := bytes.CutPrefix(line, []byte("Uid:")); ok {
			if f := bytes.Fields(ids); len(f) == 4 {
				if n, err := strconv.ParseInt(string(f[3]), 10, 64); err == nil {
					return n
				}
			}
		}
	}
	return -1
}

func hexIs(b []byte, want uint64) bool {
	n, err := strconv.ParseUint(string(b), 16, 32)
	return err == nil && n == want
}
