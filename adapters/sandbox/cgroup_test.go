package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeCgroupRoot writes files (path → content) under a fresh root: /proc/self/cgroup,
// /proc/self/mountinfo and cgroupfs files, as a host would show them (a fake: these tests
// look at the discovery, not the kernel).
func fakeCgroupRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const (
	hybridMountinfo = `30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	v2Mountinfo = `25 30 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
26 25 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:8 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`
	// A container without a cgroup namespace: the mount's root is the container's cgroup.
	dockerV1Mountinfo = `700 690 0:31 /docker/abc /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory
`
)

func TestLocateMemoryCgroup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		files   map[string]string
		wantDir string // under the fake root
		wantV2  bool
		wantErr string
	}{
		{
			name: "hybrid host: memory is v1's",
			files: map[string]string{
				"proc/self/cgroup":                         "9:name=systemd:/\n4:memory:/process_api/x\n1:cpu:/\n0::/\n",
				"proc/self/mountinfo":                      hybridMountinfo,
				"sys/fs/cgroup/unified/cgroup.controllers": "hugetlb\n",
			},
			wantDir: "sys/fs/cgroup/memory/process_api/x",
		},
		{
			name: "cgroup v2 with the memory controller",
			files: map[string]string{
				"proc/self/cgroup":    "0::/system.slice/mediajobs.service\n",
				"proc/self/mountinfo": v2Mountinfo,
				"sys/fs/cgroup/system.slice/mediajobs.service/cgroup.controllers": "cpu io memory pids\n",
			},
			wantDir: "sys/fs/cgroup/system.slice/mediajobs.service",
			wantV2:  true,
		},
		{
			name: "cgroup v2 without the memory controller",
			files: map[string]string{
				"proc/self/cgroup":                            "0::/user.slice\n",
				"proc/self/mountinfo":                         v2Mountinfo,
				"sys/fs/cgroup/user.slice/cgroup.controllers": "cpu pids\n",
			},
			wantErr: "the memory controller is not available in",
		},
		{
			name: "v1 in a container without a cgroup namespace",
			files: map[string]string{
				"proc/self/cgroup":    "4:memory:/docker/abc\n",
				"proc/self/mountinfo": dockerV1Mountinfo,
			},
			wantDir: "sys/fs/cgroup/memory",
		},
		{
			name: "v1 cgroup the mount does not show",
			files: map[string]string{
				"proc/self/cgroup":    "4:memory:/elsewhere\n",
				"proc/self/mountinfo": dockerV1Mountinfo,
			},
			wantErr: "no memory cgroup mount shows this process's cgroup /elsewhere",
		},
	}
	for _, tt := range tests {
		root := fakeCgroupRoot(t, tt.files)
		p, err := locateMemoryCgroup(root)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error = %v, want one containing %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if diff := cmp.Diff(cgroupParent{dir: filepath.Join(root, tt.wantDir), v2: tt.wantV2}, *p, cmp.AllowUnexported(cgroupParent{})); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tt.name, diff)
		}
	}
}

func TestPrepareV2(t *testing.T) {
	t.Parallel()
	const pid = 4242
	tests := []struct {
		name        string
		procs       string
		subtree     string
		wantErr     string
		wantSubtree string
		wantMoved   bool
	}{
		{"memory already given to children", "", "cpu memory", "", "cpu memory", false},
		{"the worker alone: it moves into a leaf", "4242\n", "", "", "+memory", true},
		{"other processes beside it", "1\n4242\n77\n", "", "holds 2 processes besides this one", "", false},
	}
	for _, tt := range tests {
		root := fakeCgroupRoot(t, map[string]string{
			"cgroup.procs":                 tt.procs,
			"cgroup.subtree_control":       tt.subtree,
			workerCgroup + "/cgroup.procs": "",
		})
		err := (&cgroupParent{dir: root, v2: true}).prepareV2(pid)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error = %v, want one containing %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if got := readTrimmed(filepath.Join(root, "cgroup.subtree_control")); got != tt.wantSubtree {
			t.Errorf("%s: subtree_control = %q, want %q", tt.name, got, tt.wantSubtree)
		}
		if moved := readTrimmed(filepath.Join(root, workerCgroup, "cgroup.procs")) == "4242"; moved != tt.wantMoved {
			t.Errorf("%s: worker moved = %v, want %v", tt.name, moved, tt.wantMoved)
		}
	}
}

func TestCgroupCounter(t *testing.T) {
	t.Parallel()
	root := fakeCgroupRoot(t, map[string]string{
		"memory.events":      "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n",
		"memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n",
	})
	for file, want := range map[string]int64{"memory.events": 1, "memory.oom_control": 3, "absent": 0} {
		if got := cgroupCounter(filepath.Join(root, file), "oom_kill"); got != want {
			t.Errorf("oom_kill of %s = %d, want %d", file, got, want)
		}
	}
}

// TestSweepDeadJobCgroups: a job cgroup whose pid is no process now (a worker killed before it
// could remove it) goes when the next worker readies its cgroups; this process's and anything
// not a job cgroup stay.
func TestSweepDeadJobCgroups(t *testing.T) {
	t.Parallel()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	names := map[string]bool{
		fmt.Sprintf("%s%d-abcd-1", jobCgroupPrefix, dead.Process.Pid):          false,
		fmt.Sprintf("%s%d-%s-2", jobCgroupPrefix, os.Getpid(), jobCgroupNonce): true,
		workerCgroup:       true,
		"something-else-1": true,
	}
	for n := range names {
		if err := os.Mkdir(filepath.Join(dir, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	(&cgroupParent{dir: dir}).sweepDead()
	for n, kept := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v", n, err == nil, kept)
		}
	}
}
