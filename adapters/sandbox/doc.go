// Package sandbox runs FFmpeg or ffprobe under bubblewrap: new namespaces, no network, a clean
// environment, a read-only system, one writable work directory, rlimits, per-job caps on the
// bytes and files written (stopped the moment they are passed), a hard deadline, and for GPU
// work only the NVIDIA device nodes and driver libraries. Runner is what every sandbox
// implementation (this one, the Docker adapter) offers; sandboxtest holds them to one suite.
//
// # Defense in depth
//
// The sandbox assumes FFmpeg itself is compromised, and holds anyway:
//
//   - A seccomp filter, compiled once per process and handed to bubblewrap as sealed memfds
//     (--add-seccomp-fd), denies what FFmpeg never needs: ptrace and process_vm_*, namespaces
//     (unshare, setns, clone with a namespace flag; clone3 is ENOSYS so glibc falls back to
//     clone), mounts (both APIs), bpf, perf_event_open, userfaultfd, io_uring, the key
//     calls, kexec and modules, personality changes, sockets of every family (EAFNOSUPPORT:
//     a UNIX socket could carry descriptors of unlinked files past the byte cap's watcher),
//     and fallocate with a mode or XFS's space ioctls (EOPNOTSUPP: FALLOC_FL_KEEP_SIZE
//     reserves disk that RLIMIT_FSIZE does not hold). Denied calls fail with an errno, never a kill. Other ABIs (i386, x32)
//     get ENOSYS for every call. See seccomp.go for why it is a deny-list.
//
//   - Each run's memory is capped by a memory cgroup of its own, where the worker can make
//     one: Limits.MemoryBytes becomes memory.max (cgroup v2) or memory.limit_in_bytes (a
//     cgroup v1 memory hierarchy, as on hybrid hosts), with no swap beyond it. bubblewrap's
//     namespaced child is moved in before it starts the program (bubblewrap waits on
//     --block-fd), so every process of the run is counted. A run the kernel kills for memory
//     reports LimitExceeded{Limit: LimitMemory}. RLIMIT_AS stays as a backstop, 4 GiB above the
//     limit (unlimited for GPU work, as before). Job cgroups are made in the worker's own cgroup; under cgroup v2 that cgroup
//     must hold no other process (the worker moves itself into a leaf of it, mediajobs-worker,
//     to give the memory controller to job cgroups), and a worker not running as root needs it
//     delegated (systemd: Delegate=yes).
//
//   - Where no cgroup can be made (no memory controller, a read-only /sys/fs/cgroup, other
//     processes in the worker's cgroup v2), RLIMIT_AS alone caps the run's address space at
//     Limits.MemoryBytes, as before: an allocation past it fails inside the program, which
//     exits with its own error, and no LimitExceeded is reported. Config.Log says once per
//     process which of the two holds, and why (Sandbox.MemoryCgroups asks).
package sandbox
