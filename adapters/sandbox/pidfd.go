package sandbox

import (
	"bytes"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// childPidfd is a pidfd of pid when pid is a child of parent, or -1. It is opened first and
// checked after: a PID that was reused in between is then another process's, whose parent is
// not parent.
func childPidfd(pid, parent int) int {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return -1
	}
	if ppid(pid) != parent {
		unix.Close(fd)
		return -1
	}
	return fd
}

// ppid is the parent of pid from /proc/PID/stat, or -1.
func ppid(pid int) int {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	// "PID (COMM) STATE PPID ...": the command may hold spaces and parentheses; it ends at the
	// last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return -1
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 2 {
		return -1
	}
	n, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return -1
	}
	return n
}

// killFirst ends the PID namespace's first process through its pidfd, and with it every process
// of the namespace, waits up to 5 s for it to be gone and closes the pidfd. It is bubblewrap's
// reaper, of the sandbox's user: a program can write into its memory (/proc/1/mem; ptrace is
// denied, that is not), make it report an exit and outlive bwrap, escaping its rlimits, so it is
// killed, not only waited for (the memory cgroup, where there is one, kills it too).
func killFirst(fd int) {
	if fd < 0 {
		return
	}
	_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	PidfdExited(fd, 5*time.Second)
	unix.Close(fd)
}

// PidfdExited waits up to timeout for the process of a pidfd to exit, and reports whether it
// has. When the first process of a PID namespace has exited, the kernel has killed and reaped
// every other process in it before: nothing of the sandbox runs any more.
func PidfdExited(fd int, timeout time.Duration) bool {
	if fd < 0 {
		return false
	}
	deadline := time.Now().Add(timeout)
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		_, err := unix.Poll(fds, int(max(0, time.Until(deadline).Milliseconds())))
		if err == unix.EINTR && time.Now().Before(deadline) {
			continue
		}
		return err == nil && fds[0].Revents&unix.POLLIN != 0
	}
}
