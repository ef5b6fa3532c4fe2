// Package workcap stops a sandboxed run the moment its work directory passes a per-job cap on
// the bytes written into it or the entries created in it.
//
// Why a watcher and not the kernel: RLIMIT_FSIZE caps each file, not a job (a segment muxer
// wrote 6 GB in 25 s under an 8 GiB per-file limit), and the kernel's per-directory tools all
// need something a worker does not have or cannot spare: project quotas need a filesystem
// mounted with them and root to set them; a size-limited tmpfs would hold a Pro job's 20 GiB
// in RAM; a loop-mounted image needs root and a file per job. So the host follows the
// directory through inotify, re-measures just the entries each event names, and kills the run
// as soon as a cap is passed. A full recount on a short period backs the events up (a queue
// overflow, a write through mmap that sends no event), and replaces them where inotify cannot
// be had (the per-user instance limit).
package workcap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Names of the caps, as Exceeded.Limit reports them. Memory is not this package's to watch
// (a memory cgroup enforces it) but is reported the same way.
const (
	JobBytes = "job_bytes"
	JobFiles = "job_files"
	Memory   = "memory"
)

const (
	// recountEvery is the backstop recount while events flow; pollEvery replaces events when
	// inotify cannot be had, and is tight because it is then the only measure.
	recountEvery = 250 * time.Millisecond
	pollEvery    = 10 * time.Millisecond
	watchMask    = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_MOVED_TO | unix.IN_MOVED_FROM |
		unix.IN_DELETE | unix.IN_CLOSE_WRITE | unix.IN_ONLYDIR
)

// Caps are the most a run may add to its work directory, over what was there when Watch was
// called (the staged inputs are not the job's doing). What was there counts by inode: a staged
// file counts only what it grows by, and one removed gives nothing back (in a warm sandbox it is
// a second link, whose disk stays used). A field of zero or less is no cap.
type Caps struct {
	// Bytes counts each entry as the larger of its length and the disk it holds, so neither a
	// sparse file (long, but small on disk, yet read in full when uploaded) nor space reserved
	// with fallocate slips through.
	Bytes int64
	// Files counts entries of every kind: files, directories, links.
	Files int64
}

// Exceeded says which cap stopped a run.
type Exceeded struct {
	Limit string // JobBytes, JobFiles or Memory
	Max   int64  // the cap
	Seen  int64  // the usage measured when the run was stopped: past Max, or Max when the
	// file-size rlimit (set to the byte cap) stopped the write before it landed
}

// Message is the sentence a job error can carry: it names the limit and its value.
func (e *Exceeded) Message() string {
	switch e.Limit {
	case JobFiles:
		return fmt.Sprintf("the job created more than %d files in its work directory (limit %s=%d)", e.Max, e.Limit, e.Max)
	case Memory:
		return fmt.Sprintf("the job reached its memory limit of %d bytes and was stopped (limit %s=%d)", e.Max, e.Limit, e.Max)
	}
	return fmt.Sprintf("the job wrote more than %d bytes to its work directory (limit %s=%d)", e.Max, e.Limit, e.Max)
}

// Watcher follows one work directory for one run.
type Watcher struct {
	root string
	// dir is root opened: every path under it is read through it, never by name from the
	// host's root, so that a symlink the job swaps in for a directory (renameat2's exchange,
	// between a listing and a descent) leads nowhere outside the work directory.
	dir   *os.Root
	caps  Caps
	stop  func()
	inote *os.File // nil when inotify could not be had
	// inoteFD is inote's descriptor, kept apart: File.Fd would switch it to blocking mode,
	// and Close could then no longer wake the reader.
	inoteFD int

	// dev is the work directory's filesystem; ns the PID namespace Follow named, "" for none,
	// and pid its first process. procs is the cgroup.procs of a cgroup of that process's own
	// ("" for none), found at the first recount that needs it (found).
	dev   uint64
	ns    string
	pid   int
	procs string
	found bool

	mu      sync.Mutex
	entries map[string]entry // path relative to root → what it counts for
	added   int64            // the entries that are not the staged files' (entry.added)
	// base is what the staged files held when the watch began, by inode, and basePaths their
	// paths then: the first count takes both.
	base      staged
	basePaths map[string]bool
	bytes     int64
	unnamed   int64          // bytes of files with no name that ns's processes hold, at the last recount
	dirs      map[int]string // watch descriptor → directory relative to root
	exceeded  *Exceeded
	err       error
	stopped   bool
	closing   bool // set before inote closes: no watch is added after

	quit chan struct{}
	wg   sync.WaitGroup
}

// Watch measures dir as it is now, then follows it until Close. stop is called once, from
// another goroutine, the first time a cap is passed or the directory can no longer be measured;
// it must end the run at once.
func Watch(dir string, caps Caps, stop func()) (*Watcher, error) {
	return watch(dir, caps, stop, true)
}

// watch is Watch, with inotify optional so that tests can hold the polling fallback to the
// same behaviour.
func watch(dir string, caps Caps, stop func(), useInotify bool) (*Watcher, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("workcap: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("workcap: %s is not a directory", dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("workcap: %w", err)
	}
	w := &Watcher{
		root: dir, dir: root, caps: caps, stop: stop, dev: fi.Sys().(*syscall.Stat_t).Dev,
		entries: map[string]entry{}, dirs: map[int]string{},
		quit: make(chan struct{}),
	}
	if useInotify {
		if fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC); err == nil {
			// A non-blocking descriptor makes the File pollable: Read parks in the runtime's
			// poller, and Close wakes it.
			w.inote, w.inoteFD = os.NewFile(uintptr(fd), "inotify"), fd
		}
	}
	// Watches go on before the count so that nothing made in between is missed.
	if err := w.recount(); err != nil {
		w.closeInotify()
		root.Close()
		return nil, fmt.Errorf("workcap: measure %s: %w", dir, err)
	}
	// What the first count found is the base; it added nothing.
	w.base, w.basePaths = staged{}, map[string]bool{}
	for rel, e := range w.entries {
		w.base[e.ino], w.basePaths[rel] = e.bytes, true
		w.entries[rel] = entry{ino: e.ino}
	}
	w.bytes, w.added = 0, 0
	if w.inote != nil {
		w.wg.Go(w.follow)
	}
	w.wg.Go(w.tick)
	return w, nil
}

// Follow has every recount from now on count too the files that the processes of pid's PID
// namespace hold on the work directory's filesystem under no name: a file opened (or mapped)
// and then unlinked, or made without a name (O_TMPFILE). Such a file takes disk as any other
// does, but no walk of the directory finds it, and one per descriptor the run may open would
// each grow to the file-size limit. pid is the first process of a sandbox's own namespace
// (Follow refuses one of this process's namespace: that would count every process on the
// host); it is called once, before the recounts that need it. Processes this one may not
// inspect are left out.
func (w *Watcher) Follow(pid int) error {
	ns, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	if err != nil {
		return fmt.Errorf("workcap: the PID namespace of %d: %w", pid, err)
	}
	// A pid reused by a process of this one's namespace (the sandbox ended meanwhile) would
	// count the files of every process here.
	if own, err := ownNamespace(); err != nil || own == ns {
		return fmt.Errorf("workcap: process %d is not in a PID namespace of its own", pid)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ns, w.pid = ns, pid
	return nil
}

// ownNamespace is this process's PID namespace, as /proc/PID/ns/pid reads.
var ownNamespace = sync.OnceValues(func() (string, error) { return os.Readlink("/proc/self/ns/pid") })

// Close stops following, measures the directory once more, and returns the cap the run passed,
// or nil. The error is non-nil when the directory could not be measured.
func (w *Watcher) Close() (*Exceeded, error) {
	close(w.quit)
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	// Closing an inotify instance waits for an RCU grace period in the kernel (about 10 ms,
	// longer on a busy machine): the reader is woken by a deadline instead, and the instance
	// closed in the background, off the run's path (it is close-on-exec, so no child gets it).
	if w.inote != nil {
		_ = w.inote.SetReadDeadline(time.Unix(1, 0))
	}
	w.wg.Wait()
	if w.inote != nil {
		go w.closeInotify()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	defer w.dir.Close()
	if w.exceeded == nil && w.err == nil {
		if err := w.recountLocked(); err != nil {
			w.err = err
		}
		w.checkLocked()
	}
	return w.exceeded, w.err
}

// Usage is what the run has added so far.
func (w *Watcher) Usage() (bytes, files int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.addedLocked()
}

// addedLocked is what the run has added: its bytes, named or not, and its entries.
func (w *Watcher) addedLocked() (bytes, files int64) {
	return w.bytes + w.unnamed, w.added
}

// PassedBytes records that the run was stopped for trying to write past the byte cap by a
// means other than this watcher (the file-size rlimit set to the cap).
func (w *Watcher) PassedBytes() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.exceeded == nil {
		bytes, _ := w.addedLocked()
		w.exceeded = &Exceeded{Limit: JobBytes, Max: w.caps.Bytes, Seen: max(w.caps.Bytes, bytes)}
	}
}

func (w *Watcher) closeInotify() {
	if w.inote != nil {
		w.inote.Close()
	}
}

// tick recounts on a period; it is the only measure when inotify could not be had.
func (w *Watcher) tick() {
	every := recountEvery
	if w.inote == nil {
		every = pollEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-w.quit:
			return
		case <-t.C:
			w.mu.Lock()
			if err := w.recountLocked(); err != nil {
				w.failLocked(err)
			}
			w.checkLocked()
			w.mu.Unlock()
		}
	}
}

// follow reads inotify events until Close, re-measuring the entries they name.
func (w *Watcher) follow() {
	buf := make([]byte, 64<<10)
	for {
		n, err := w.inote.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) && !errors.Is(err, os.ErrDeadlineExceeded) {
				w.mu.Lock()
				w.failLocked(fmt.Errorf("read inotify: %w", err))
				w.mu.Unlock()
			}
			return
		}
		w.mu.Lock()
		// One check per read of many events: the kernel merges a burst of writes to one file
		// into few events, and a read drains all that are queued.
		if err := w.applyLocked(buf[:n]); err != nil {
			w.failLocked(err)
		}
		w.checkLocked()
		w.mu.Unlock()
	}
}

func (w *Watcher) applyLocked(buf []byte) error {
	for off := 0; off+unix.SizeofInotifyEvent <= len(buf); {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
		nameEnd := off + unix.SizeofInotifyEvent + int(ev.Len)
		if nameEnd > len(buf) {
			return errors.New("short inotify event")
		}
		name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:nameEnd]), "\x00")
		off = nameEnd

		if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
			return w.recountLocked()
		}
		dir, ok := w.dirs[int(ev.Wd)]
		if ev.Mask&unix.IN_IGNORED != 0 {
			delete(w.dirs, int(ev.Wd))
			continue
		}
		if !ok || name == "" {
			continue
		}
		rel := filepath.Join(dir, name)
		isDir := ev.Mask&unix.IN_ISDIR != 0
		if ev.Mask&(unix.IN_DELETE|unix.IN_MOVED_FROM) != 0 {
			w.forgetLocked(rel, isDir)
			continue
		}
		fi, err := w.dir.Lstat(rel)
		if replaced(err) {
			w.forgetLocked(rel, isDir)
			continue
		}
		if err != nil {
			return err
		}
		_, known := w.entries[rel]
		w.setLocked(rel, fi)
		if fi.IsDir() && (!known || ev.Mask&unix.IN_MOVED_TO != 0) {
			// Entries made before the watch was added would send no event: walk the new tree.
			if err := w.walkLocked(rel); err != nil {
				return err
			}
		}
	}
	return nil
}

// recountLocked measures the whole tree afresh, adding watches to directories it has not seen.
func (w *Watcher) recountLocked() error {
	w.entries, w.bytes, w.added = map[string]entry{}, 0, 0
	if err := w.walkLocked("."); err != nil {
		return err
	}
	if w.ns != "" {
		if !w.found {
			// Not in Follow: most runs end before their first recount. Should the pid have
			// been reused meanwhile, the cgroup found lists no process of ns.
			w.procs, w.found = ownCgroupProcs(w.pid), true
		}
		named := make(map[uint64]bool, len(w.entries))
		for _, e := range w.entries {
			named[e.ino] = true
		}
		w.unnamed = unnamedBytes(w.ns, w.dev, w.procs, w.base, named)
	}
	return nil
}

func (w *Watcher) recount() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.recountLocked()
}

// walkLocked measures the tree under rel (relative to root), entries of rel itself excluded,
// through w.dir: a directory swapped for a symlink while it is walked is not followed out.
func (w *Watcher) walkLocked(rel string) error {
	return fs.WalkDir(w.dir.FS(), filepath.ToSlash(rel), func(r string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed while walking: the events will say so
		}
		if errors.Is(err, fs.ErrPermission) && d != nil && d.IsDir() {
			// The sandbox can make a directory it then closes (mode 000). Unless this process is
			// root, it owns what the sandbox made, and opens it again.
			if cerr := w.dir.Chmod(r, 0o700); cerr == nil {
				return w.walkLocked(r)
			}
		}
		if replaced(err) {
			return nil // the events, or the next count, will see what is there now
		}
		if err != nil {
			return err
		}
		if d.IsDir() {
			if err := w.addWatchLocked(r); err != nil {
				return err
			}
		}
		if r == "." {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		w.setLocked(filepath.FromSlash(r), fi)
		return nil
	})
}

func (w *Watcher) addWatchLocked(rel string) error {
	if w.inote == nil || w.closing {
		return nil
	}
	// The watch goes on the directory opened through w.dir, by its descriptor: a path would be
	// resolved again, from the host's root, through whatever the job has swapped in meanwhile.
	f, err := w.dir.Open(rel)
	if replaced(err) {
		return nil // gone, or no longer a directory of the tree, since it was listed
	}
	if err != nil {
		return fmt.Errorf("watch %s: %w", rel, err)
	}
	defer f.Close()
	wd, err := unix.InotifyAddWatch(w.inoteFD, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), watchMask|unix.IN_ONLYDIR)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil // replaced by a file since it was listed
	}
	if errors.Is(err, unix.ENOSPC) {
		// Out of watches (fs.inotify.max_user_watches): the periodic recount still measures
		// this directory, only less promptly.
		return nil
	}
	if err != nil {
		return fmt.Errorf("watch %s: %w", rel, err)
	}
	w.dirs[wd] = rel
	return nil
}

// entry is what one path counts for.
type entry struct {
	bytes int64 // its usage, or for a staged file what it grew by
	added bool  // not a staged file (a new inode)
	ino   uint64
}

// staged is what the staged files held when the watch began, by inode.
type staged map[uint64]int64

// grown is what a file of inode ino and n bytes counts for: a staged one what it grew by, and
// whether it is one.
func (b staged) grown(ino uint64, n int64) (int64, bool) {
	if was, ok := b[ino]; ok && ino != 0 {
		return max(0, n-was), true
	}
	return n, false
}

// setLocked records rel as fi now finds it.
func (w *Watcher) setLocked(rel string, fi fs.FileInfo) {
	e := entry{bytes: usage(fi), added: true}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		e.ino = st.Ino
	}
	if n, isStaged := w.base.grown(e.ino, e.bytes); isStaged {
		// A staged file counts what it grew by; a new link to one, or one moved, is an entry
		// the run made.
		e.bytes, e.added = n, !w.basePaths[rel]
	}
	w.dropLocked(rel)
	w.entries[rel] = e
	w.bytes += e.bytes
	if e.added {
		w.added++
	}
}

// dropLocked takes rel's entry out of the count.
func (w *Watcher) dropLocked(rel string) {
	if e, ok := w.entries[rel]; ok {
		w.bytes -= e.bytes
		if e.added {
			w.added--
		}
		delete(w.entries, rel)
	}
}

func (w *Watcher) forgetLocked(rel string, isDir bool) {
	w.dropLocked(rel)
	if !isDir {
		return
	}
	prefix := rel + string(filepath.Separator)
	for k := range w.entries {
		if strings.HasPrefix(k, prefix) {
			w.dropLocked(k)
		}
	}
}

func (w *Watcher) checkLocked() {
	if w.exceeded != nil || w.err != nil {
		return
	}
	bytes, files := w.addedLocked()
	switch {
	case w.caps.Files > 0 && files > w.caps.Files:
		w.exceeded = &Exceeded{Limit: JobFiles, Max: w.caps.Files, Seen: files}
	case w.caps.Bytes > 0 && bytes > w.caps.Bytes:
		w.exceeded = &Exceeded{Limit: JobBytes, Max: w.caps.Bytes, Seen: bytes}
	default:
		return
	}
	w.stopOnceLocked()
}

// failLocked ends the run when the directory can no longer be measured: a run that cannot be
// measured cannot be held to its caps.
func (w *Watcher) failLocked(err error) {
	if w.err == nil && w.exceeded == nil {
		w.err = fmt.Errorf("workcap: measure %s: %w", w.root, err)
		w.stopOnceLocked()
	}
}

func (w *Watcher) stopOnceLocked() {
	if !w.stopped {
		w.stopped = true
		w.stop()
	}
}

// replaced reports whether err, from reading a path through the work directory's os.Root, says
// the path is no longer what was listed: removed, or it or a directory on its way swapped for a
// file or a symlink (os.Root follows none out of the directory: "path escapes from parent", or
// ELOOP where it would not follow at all). The events that change brought, or the next count,
// measure what is there now.
func replaced(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ELOOP) ||
		(err != nil && strings.HasSuffix(err.Error(), "path escapes from parent"))
}

// usage is the larger of an entry's length and the disk it holds.
func usage(fi fs.FileInfo) int64 {
	n := fi.Size()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		n = max(n, st.Blocks*512)
	}
	return n
}

// Measure is what the caps count under dir, dir itself excluded: the bytes (each entry the
// larger of its length and the disk it holds) and the entries. A job of several runs in one
// directory measures between them, so that the caps span the job and not each run.
func Measure(dir string) (bytes, files int64, err error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return 0, 0, err
	}
	defer root.Close()
	err = fs.WalkDir(root.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == "." {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		bytes += usage(fi)
		files++
		return nil
	})
	return bytes, files, err
}
