package dockersandbox

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
)

// hostKill kills a container's first process from this host, beside the engine's kill. On a
// loaded machine the engine took seconds to act on a kill while the run went on writing past
// its byte cap; a signal sent here lands at once. It is best effort, and the engine's kill
// always follows: it holds only where this process shares the host's PID namespace and may
// signal the container's user (root, or the same user when not root). The PID comes from the
// engine, so it is checked against the container's cgroup before anything is signalled, and
// it is held as a pidfd, which a reused PID cannot redirect.
type hostKill struct {
	mu     sync.Mutex
	fd     int // the pidfd, or -1
	pid    int // its pid, 0 when fd is -1; set before the run starts only in a warm container
	closed bool
}

// openHostKill finds the container's first process in the background, so that the run's
// start does not wait on one more call to the engine; found, when not nil, is told its pid.
func (s *Sandbox) openHostKill(ctx context.Context, id string, found func(pid int)) *hostKill {
	h := &hostKill{fd: -1}
	go func() {
		fd, pid := s.hostPidfd(ctx, id)
		if fd < 0 {
			return
		}
		if found != nil {
			found(pid)
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.closed {
			unix.Close(fd)
			return
		}
		h.fd = fd
	}()
	return h
}

// hostPidfd is a pidfd of the container's first process and its pid, or -1 where this process
// cannot hold one (another PID namespace, another user).
func (s *Sandbox) hostPidfd(ctx context.Context, id string) (fd, pid int) {
	info, err := s.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil || info.Container.State == nil || info.Container.State.Pid <= 0 {
		return -1, 0
	}
	pid = info.Container.State.Pid
	// unseen warns when the container still runs as pid: it is then not this process that
	// came too late (a quick program) but one that cannot see it.
	unseen := func(err error) {
		if again, ierr := s.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); ierr == nil &&
			again.Container.State != nil && again.Container.State.Running && again.Container.State.Pid == pid {
			s.warnUnseen(err)
		}
	}
	fd, err = unix.PidfdOpen(pid, 0)
	if err != nil {
		unseen(fmt.Errorf("pidfd_open of the container's first process, pid %d: %w", pid, err))
		return -1, 0
	}
	// Opened first, checked after: if the PID was reused in between, the cgroup read is the
	// new process's, which is not in this container's cgroup unless it is the container's.
	if cg, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup"); err != nil || !strings.Contains(string(cg), id) {
		unix.Close(fd)
		unseen(fmt.Errorf("pid %d, the container's first process as the engine names it, is not in its cgroup here (%v)", pid, err))
		return -1, 0
	}
	return fd, pid
}

// kill signals the container's first process, when it was found; killing a PID namespace's
// first process ends every process in it.
func (h *hostKill) kill() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fd >= 0 {
		_ = unix.PidfdSendSignal(h.fd, unix.SIGKILL, nil, 0)
	}
}

// exited waits up to timeout for the container's first process to have exited, and reports
// whether it has; false too when it was not found. When a PID namespace's first process has
// exited, every other process in it has been killed and reaped before.
func (h *hostKill) exited(timeout time.Duration) bool {
	h.mu.Lock()
	fd := -1
	if h.fd >= 0 {
		fd, _ = unix.FcntlInt(uintptr(h.fd), unix.F_DUPFD_CLOEXEC, 0) // its own, which close cannot take away
	}
	h.mu.Unlock()
	if fd < 0 {
		return false
	}
	defer unix.Close(fd)
	return sandbox.PidfdExited(fd, timeout)
}

// close releases the pidfd; a search still under way drops what it finds.
func (h *hostKill) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	if h.fd >= 0 {
		unix.Close(h.fd)
		h.fd = -1
	}
}
