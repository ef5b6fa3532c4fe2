package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// A memory cgroup per run holds what RLIMIT_AS cannot: the memory the job really holds
// (resident pages, the page cache it dirties, the kernel's memory on its behalf) rather than
// the address space it reserves, and every process of the job together. When it is passed the
// kernel kills the job, and the run reports LimitExceeded{Limit: LimitMemory}.

const (
	// workerCgroup is the leaf a cgroup v2 worker moves itself into, so that the cgroup it was
	// started in holds no process and may hand the memory controller to job cgroups.
	workerCgroup = "mediajobs-worker"
	// jobCgroupPrefix names the job cgroups: the worker's pid, a random word of the process
	// and a sequence number follow.
	jobCgroupPrefix = "mediajobs-job-"
	// cgroupDrain bounds the wait for a job cgroup to empty after its run ended.
	cgroupDrain = 5 * time.Second
)

// cgroupParent is the cgroup job cgroups are made in.
type cgroupParent struct {
	dir string
	v2  bool
}

var jobCgroupSeq atomic.Int64

// jobCgroupNonce tells this process's job cgroups from those a killed process of the same pid
// left behind (SIGKILL leaves them; the pid is reused): without it the next job's mkdir found
// "file exists" and the run failed.
var jobCgroupNonce = func() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms.
	return hex.EncodeToString(b[:])
}()

// findMemoryCgroup finds where this process (pid) can make job cgroups with a memory limit,
// readies it, and makes one to be sure; or says why it cannot.
func findMemoryCgroup(pid int) (*cgroupParent, error) {
	p, err := locateMemoryCgroup("/")
	if err != nil {
		return nil, err
	}
	if p.v2 {
		if err := p.prepareV2(pid); err != nil {
			return nil, err
		}
	}
	if err := p.probe(); err != nil {
		return nil, err
	}
	p.sweepDead()
	return p, nil
}

// sweepDead removes the job cgroups that processes killed before they could remove them left
// behind (a worker's SIGKILL): those whose pid is no process now. A cgroup still holding a
// process, or children, is not removed (rmdir refuses), so nothing live is touched.
func (p *cgroupParent) sweepDead() {
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), jobCgroupPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		_ = os.Remove(filepath.Join(p.dir, e.Name()))
	}
}

// locateMemoryCgroup finds this process's cgroup in the hierarchy that has the memory
// controller: cgroup v2's, or a cgroup v1 memory hierarchy where the controller is bound there
// instead (a hybrid host). root prefixes every path read; tests point it at a fake tree.
func locateMemoryCgroup(root string) (*cgroupParent, error) {
	self, err := os.ReadFile(filepath.Join(root, "/proc/self/cgroup"))
	if err != nil {
		return nil, fmt.Errorf("read /proc/self/cgroup: %w", err)
	}
	mountinfo, err := os.ReadFile(filepath.Join(root, "/proc/self/mountinfo"))
	if err != nil {
		return nil, fmt.Errorf("read /proc/self/mountinfo: %w", err)
	}
	mounts := parseCgroupMounts(mountinfo)

	var why []string
	if path, ok := ownCgroup(self, ""); ok {
		dir, err := cgroupDir(root, mounts, path, "")
		switch {
		case err != nil:
			why = append(why, "cgroup v2: "+err.Error())
		case !hasWord(readTrimmed(filepath.Join(dir, "cgroup.controllers")), "memory"):
			why = append(why, fmt.Sprintf("cgroup v2: the memory controller is not available in %s", dir))
		default:
			return &cgroupParent{dir: dir, v2: true}, nil
		}
	}
	if path, ok := ownCgroup(self, "memory"); ok {
		dir, err := cgroupDir(root, mounts, path, "memory")
		if err != nil {
			return nil, errors.New(strings.Join(append(why, "cgroup v1: "+err.Error()), "; "))
		}
		return &cgroupParent{dir: dir}, nil
	}
	return nil, errors.New(strings.Join(append(why, "no cgroup v1 memory hierarchy either"), "; "))
}

// prepareV2 makes p.dir able to hold job cgroups with a memory limit. Under cgroup v2 a cgroup
// that holds processes cannot give controllers to children, so the worker's own cgroup serves
// only when the worker is its one process: it then moves itself into a leaf of it
// (workerCgroup) and enables the memory controller for the children, as container runtimes
// nest. A worker not running as root needs that cgroup delegated to it (systemd: Delegate=yes).
func (p *cgroupParent) prepareV2(pid int) error {
	control := filepath.Join(p.dir, "cgroup.subtree_control")
	if hasWord(readTrimmed(control), "memory") {
		return nil
	}
	procs, err := os.ReadFile(filepath.Join(p.dir, "cgroup.procs"))
	if err != nil {
		return fmt.Errorf("cgroup v2: %w", err)
	}
	if others := slices.DeleteFunc(strings.Fields(string(procs)), func(s string) bool { return s == strconv.Itoa(pid) }); len(others) > 0 {
		return fmt.Errorf("cgroup v2: %s holds %d processes besides this one, so it cannot give job cgroups the memory controller; "+
			"run the worker in a cgroup of its own (systemd: a unit with Delegate=yes)", p.dir, len(others))
	}
	leaf := filepath.Join(p.dir, workerCgroup)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("cgroup v2: make %s: %w", leaf, err)
	}
	if err := writeCgroupFile(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
		return fmt.Errorf("cgroup v2: move the worker into %s: %w", leaf, err)
	}
	if err := writeCgroupFile(control, "+memory"); err != nil {
		return fmt.Errorf("cgroup v2: enable the memory controller for %s's children: %w", p.dir, err)
	}
	return nil
}

// probe makes and removes one job cgroup, so a cgroup that cannot be written (a read-only
// mount, no delegation) is found before the first job.
func (p *cgroupParent) probe() error {
	j, err := p.newJob(DefaultMemoryBytes)
	if err != nil {
		return err
	}
	if err := os.Remove(j.dir); err != nil {
		return fmt.Errorf("remove %s: %w", j.dir, err)
	}
	return nil
}

// jobCgroup is the memory cgroup of one run.
type jobCgroup struct {
	dir   string
	v2    bool
	limit int64
}

// newJob makes a job cgroup limited to limit bytes of memory, and no swap beyond it.
func (p *cgroupParent) newJob(limit int64) (*jobCgroup, error) {
	dir := filepath.Join(p.dir, fmt.Sprintf("%s%d-%s-%d", jobCgroupPrefix, os.Getpid(), jobCgroupNonce, jobCgroupSeq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make memory cgroup: %w", err)
	}
	j := &jobCgroup{dir: dir, v2: p.v2, limit: limit}
	type setting struct {
		file, value string
		optional    bool // absent where the kernel lacks the feature (swap accounting)
	}
	n := strconv.FormatInt(limit, 10)
	settings := []setting{
		{"memory.limit_in_bytes", n, false},
		// memsw counts memory and swap together; set to the same, no swap is left.
		{"memory.memsw.limit_in_bytes", n, true},
	}
	if p.v2 {
		settings = []setting{
			{"memory.max", n, false},
			{"memory.swap.max", "0", true},
			// One OOM kill takes the whole job, not the largest process and leaves the rest.
			{"memory.oom.group", "1", true},
		}
	}
	for _, s := range settings {
		err := writeCgroupFile(filepath.Join(dir, s.file), s.value)
		if err != nil && !(s.optional && errors.Is(err, os.ErrNotExist)) {
			_ = os.Remove(dir)
			return nil, fmt.Errorf("set %s of %s: %w", s.file, dir, err)
		}
	}
	return j, nil
}

// join moves bwrap's namespaced child into the job cgroup as soon as bwrap reports its pid,
// and returns the pid; 0 when bwrap ended before it cloned, or ctx before the pid came.
func (j *jobCgroup) join(ctx context.Context, status *statusReader) (int, error) {
	pid := status.waitPID(ctx)
	if pid <= 0 {
		return 0, nil
	}
	if err := writeCgroupFile(filepath.Join(j.dir, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
		return 0, fmt.Errorf("move pid %d into %s: %w", pid, j.dir, err)
	}
	return pid, nil
}

// remove removes the job cgroup of a run that never started; nil does nothing.
func (j *jobCgroup) remove() {
	if j != nil {
		_ = os.Remove(j.dir)
	}
}

// counters reads whether the cgroup's OOM killer ended a process of the run, and the run's peak
// memory, while processes may still be in it: after its program exited, before the teardown.
func (j *jobCgroup) counters() (oomKilled bool, peak int64) {
	events, peakFile := "memory.oom_control", "memory.max_usage_in_bytes"
	if j.v2 {
		events, peakFile = "memory.events", "memory.peak"
	}
	oomKilled = cgroupCounter(filepath.Join(j.dir, events), "oom_kill") > 0
	peak, _ = strconv.ParseInt(readTrimmed(filepath.Join(j.dir, peakFile)), 10, 64)
	return oomKilled, peak
}

// finish ends what is left of the run in the cgroup, reads whether the kernel killed for
// memory and the most the run held, and removes the cgroup. A run ends with its pid namespace,
// but a sandbox killed from outside may still be dying when Run's wait returns.
func (j *jobCgroup) finish() (oomKilled bool, peak int64, err error) {
	if j.v2 {
		// cgroup.kill (Linux 5.14) kills every process of the cgroup at once.
		_ = writeCgroupFile(filepath.Join(j.dir, "cgroup.kill"), "1")
	}
	deadline := time.Now().Add(cgroupDrain)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		pids := strings.Fields(readTrimmed(filepath.Join(j.dir, "cgroup.procs")))
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return false, 0, fmt.Errorf("memory cgroup %s still holds pids %v after %v", j.dir, pids, cgroupDrain)
		}
		for _, p := range pids {
			// Only the run's own processes are in its cgroup.
			if pid, err := strconv.Atoi(p); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		<-tick.C
	}
	oomKilled, peak = j.counters()
	if err := os.Remove(j.dir); err != nil {
		return oomKilled, peak, fmt.Errorf("remove memory cgroup: %w", err)
	}
	return oomKilled, peak, nil
}

// cgroupMount is a mounted cgroup hierarchy: where, which of the hierarchy's cgroups is at the
// mount point, and for v1 its controllers.
type cgroupMount struct {
	point, root string
	v2          bool
	controllers []string
}

// parseCgroupMounts picks the cgroup mounts out of /proc/self/mountinfo, whose lines read
// "id parent major:minor root mount-point options [optional...] - type source super-options".
func parseCgroupMounts(mountinfo []byte) []cgroupMount {
	var mounts []cgroupMount
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, after := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(after) < 1 {
			continue
		}
		m := cgroupMount{root: fields[3], point: fields[4]}
		switch after[0] {
		case "cgroup2":
			m.v2 = true
		case "cgroup":
			if len(after) >= 3 {
				m.controllers = strings.Split(after[2], ",")
			}
		default:
			continue
		}
		mounts = append(mounts, m)
	}
	return mounts
}

// ownCgroup is this process's cgroup in the v2 hierarchy (controller "") or in the v1
// hierarchy of controller, from /proc/self/cgroup ("id:controllers:path" lines).
func ownCgroup(self []byte, controller string) (string, bool) {
	for line := range strings.Lines(string(self)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if controller == "" && parts[0] == "0" && parts[1] == "" {
			return parts[2], true
		}
		if controller != "" && slices.Contains(strings.Split(parts[1], ","), controller) {
			return parts[2], true
		}
	}
	return "", false
}

// cgroupDir is where cgroup path appears on a mount of its hierarchy (v2 when controller is "").
func cgroupDir(root string, mounts []cgroupMount, path, controller string) (string, error) {
	for _, m := range mounts {
		if (controller == "") != m.v2 || (controller != "" && !slices.Contains(m.controllers, controller)) {
			continue
		}
		rel, err := filepath.Rel(m.root, path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		return filepath.Join(root, m.point, rel), nil
	}
	name := "cgroup2"
	if controller != "" {
		name = controller + " cgroup"
	}
	return "", fmt.Errorf("no %s mount shows this process's cgroup %s", name, path)
}

// cgroupCounter reads the "key value" line of a flat-keyed cgroup file; 0 when absent.
func cgroupCounter(file, key string) int64 {
	for line := range strings.Lines(readTrimmed(file)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok && k == key {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

func hasWord(s, word string) bool { return slices.Contains(strings.Fields(s), word) }

func readTrimmed(file string) string {
	data, _ := os.ReadFile(file)
	return strings.TrimSpace(string(data))
}

// writeCgroupFile writes value to an existing cgroup file in one write, as cgroupfs needs.
func writeCgroupFile(file, value string) error {
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, werr := f.Write([]byte(value))
	if err := f.Close(); werr == nil {
		werr = err
	}
	return werr
}

// setLimit changes the memory limit of a job cgroup made ahead (a warm sandbox's) to the run's,
// before the run's command is released. Under cgroup v1 the memory limit may not pass the
// memory+swap limit, so the two are written in the order that keeps that true.
func (j *jobCgroup) setLimit(limit int64) error {
	if limit == j.limit {
		return nil
	}
	n := strconv.FormatInt(limit, 10)
	files := []string{"memory.max"}
	if !j.v2 {
		files = []string{"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"}
		if limit > j.limit {
			files = []string{"memory.memsw.limit_in_bytes", "memory.limit_in_bytes"}
		}
	}
	for _, f := range files {
		err := writeCgroupFile(filepath.Join(j.dir, f), n)
		if err != nil && !(f == "memory.memsw.limit_in_bytes" && errors.Is(err, os.ErrNotExist)) {
			return fmt.Errorf("set %s of %s: %w", f, j.dir, err)
		}
	}
	j.limit = limit
	return nil
}
