// Package workdir hands out empty work directories and keeps a few emptied ones for the next
// job, so that a busy worker does not make and remove a directory for every job.
//
// Making a directory is cheap on most filesystems, but not on ext4 without a journal (many cloud
// images): there the inode allocator will not reuse an inode freed in the last 30 seconds and
// walks past each one, checking its deletion time, every time it makes a file or directory. A
// worker running 25 short jobs a second made and removed two directories per job (its own work
// directory and the warm sandbox's), and each making cost 0.7–0.8 ms of CPU: a tenth of a 7 ms
// job (docs/performance.md, "The disk under the fleet").
//
// A directory is kept only when emptying it undoes everything a job can have done to it: its
// entries are removed, its mode and owner are set back, and one with extended attributes (an
// ACL a job set) or inode flags (chattr +S, which the next job's files would inherit) is
// removed instead of kept.
package workdir

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// mode is every directory's, as os.MkdirTemp makes them.
const mode = 0o700

// Dirs makes directories under a root and keeps up to a number of emptied ones. Its methods are
// safe for concurrent use.
type Dirs struct {
	root string
	keep int

	mu   sync.Mutex
	free []string
}

// New returns Dirs making directories under root (which must exist), keeping up to keep
// emptied ones; keep ≤ 0 keeps none.
func New(root string, keep int) *Dirs {
	return &Dirs{root: root, keep: keep}
}

// Make returns a new empty directory under root, mode 0700, whose name begins with prefix: a
// kept one renamed, or one made now.
func (d *Dirs) Make(prefix string) (string, error) {
	if strings.ContainsRune(prefix, os.PathSeparator) {
		return "", fmt.Errorf("workdir: prefix %q holds a path separator", prefix)
	}
	d.mu.Lock()
	var kept string
	if n := len(d.free); n > 0 {
		kept, d.free = d.free[n-1], d.free[:n-1]
	}
	d.mu.Unlock()
	if kept == "" {
		return os.MkdirTemp(d.root, prefix)
	}
	for range 10 {
		name := filepath.Join(d.root, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10))
		// Renaming onto an existing empty directory would replace it: refuse any existing name.
		err := unix.Renameat2(unix.AT_FDCWD, kept, unix.AT_FDCWD, name, unix.RENAME_NOREPLACE)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	_ = os.RemoveAll(kept) // it could not be renamed: a new one in its place
	return os.MkdirTemp(d.root, prefix)
}

// Remove empties dir, a directory Make returned that nothing uses any more, and keeps it for a
// later Make, or removes it when enough are kept or it cannot be set back as Make made it.
func (d *Dirs) Remove(dir string) error {
	if !d.room() || filepath.Dir(dir) != filepath.Clean(d.root) || !empty(dir) {
		return os.RemoveAll(dir)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.free) >= d.keep {
		return os.RemoveAll(dir)
	}
	d.free = append(d.free, dir)
	return nil
}

// room reports whether another directory would be kept.
func (d *Dirs) room() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.free) < d.keep
}

// empty removes dir's entries and sets it back as Make made it, reporting whether it could.
func empty(dir string) bool {
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() {
		return false
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return false
		}
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && (int(sys.Uid) != os.Geteuid() || int(sys.Gid) != os.Getegid()) {
		if err := os.Lchown(dir, os.Geteuid(), os.Getegid()); err != nil {
			return false
		}
	}
	if st.Mode().Perm() != mode || st.Mode()&(fs.ModeSetgid|fs.ModeSticky|fs.ModeSetuid) != 0 {
		if err := os.Chmod(dir, mode); err != nil {
			return false
		}
	}
	return !hasAttributes(dir) && !hasFlags(dir)
}

// kernelFlags are the inode flags a filesystem sets on a directory of its own accord: its
// extents, its hashed index once it grows, its entries kept in the inode.
// (linux/fs.h's FS_EXTENT_FL, FS_INDEX_FL, FS_INLINE_DATA_FL; x/sys/unix has none of them).
const kernelFlags = 0x00080000 | 0x00001000 | 0x10000000

// hasFlags reports whether dir has an inode flag a job may have set with chattr (the owner may
// set +S synchronous writes, +D, +A, +d...), which the files the next job writes there would
// inherit, or whether that cannot be read. A filesystem without such flags has none.
func hasFlags(dir string) bool {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return true
	}
	defer unix.Close(fd)
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	switch {
	case errors.Is(err, unix.ENOTTY), errors.Is(err, unix.ENOTSUP), errors.Is(err, unix.EINVAL):
		return false
	case err != nil:
		return true
	}
	return flags&^kernelFlags != 0
}

// hasAttributes reports whether dir has an extended attribute a job may have set (an ACL, a
// user attribute), or whether that cannot be read. A security module's own (security.*) are not
// a job's to set.
func hasAttributes(dir string) bool {
	buf := make([]byte, 1024)
	n, err := unix.Llistxattr(dir, buf)
	if errors.Is(err, unix.ENOTSUP) {
		return false
	}
	if err != nil {
		return true
	}
	for name := range strings.SplitSeq(string(buf[:n]), "\x00") {
		if name != "" && !strings.HasPrefix(name, "security.") {
			return true
		}
	}
	return false
}

// Close removes the kept directories; those given back after it are removed too.
func (d *Dirs) Close() error {
	d.mu.Lock()
	free := d.free
	d.free, d.keep = nil, 0
	d.mu.Unlock()
	var errs []error
	for _, dir := range free {
		errs = append(errs, os.RemoveAll(dir))
	}
	return errors.Join(errs...)
}
