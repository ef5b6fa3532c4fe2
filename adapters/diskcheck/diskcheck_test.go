package diskcheck

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

const mountinfo = `22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard
23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
24 22 0:22 / /dev/shm rw,nosuid,nodev shared:3 - tmpfs tmpfs rw
25 22 254:16 / /srv rw,relatime shared:30 - ext4 /dev/mapper/vg-srv rw
26 22 7:0 / /mnt/x rw,relatime shared:31 - ext4 /dev/loop0 rw
27 22 8:1 / /mnt/old rw,relatime shared:32 - ext4 /dev/sdb1 rw
`

// fakeSys is a /sys with the devices of mountinfo above: vda without a journal, dm-1 with one,
// loop0 without, sdb1 (8:1) of a kernel that tells no journal_task.
func fakeSys(t *testing.T) string {
	t.Helper()
	sys := t.TempDir()
	for _, d := range []struct{ dev, name, task string }{
		{"254:0", "vda", "<none>\n"},
		{"254:16", "dm-1", "1234\n"},
		{"7:0", "loop0", "<none>\n"},
		{"8:1", "sdb1", ""},
	} {
		if err := os.MkdirAll(filepath.Join(sys, "dev", "block"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../../devices/virtual/block/"+d.name, filepath.Join(sys, "dev", "block", d.dev)); err != nil {
			t.Fatal(err)
		}
		if d.task == "" {
			continue
		}
		dir := filepath.Join(sys, "fs", "ext4", d.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "journal_task"), []byte(d.task), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return sys
}

func TestUnjournaledReadsTheMountAndTheDevice(t *testing.T) {
	sys := fakeSys(t)
	for _, tc := range []struct {
		name         string
		major, minor uint32
		device       string
		unjournaled  bool
		err          string
	}{
		{"ext4 without a journal", 254, 0, "vda", true, ""},
		{"device-mapper volume with a journal", 254, 16, "dm-1", false, ""},
		{"loop device without a journal", 7, 0, "loop0", true, ""},
		{"tmpfs", 0, 22, "", false, ""},
		{"no journal_task (an older kernel)", 8, 1, "sdb1", false, "journal_task"},
		{"not mounted", 9, 9, "", false, "not in the mount table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			device, ok, err := unjournaled(tc.major, tc.minor, strings.NewReader(mountinfo), sys)
			if device != tc.device || ok != tc.unjournaled {
				t.Errorf("unjournaled(%d:%d) = %q, %v; want %q, %v", tc.major, tc.minor, device, ok, tc.device, tc.unjournaled)
			}
			if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("unjournaled(%d:%d) error = %v; want one saying %q", tc.major, tc.minor, err, tc.err)
			}
		})
	}
}

// TestUnjournaledOnRealFilesystems makes two small ext4 filesystems, with a journal and without,
// mounts each on a loop device, and asks about a directory in each; and about /dev/shm, a tmpfs.
func TestUnjournaledOnRealFilesystems(t *testing.T) {
	for _, tc := range []struct {
		name        string
		unjournaled bool
	}{
		{"journaled", false},
		{"without a journal", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mnt := filepath.Join(t.TempDir(), "mnt")
			testenv.MountExt4(t, mnt, !tc.unjournaled)
			dir := filepath.Join(mnt, "work")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, d := range []string{dir, filepath.Join(dir, "not", "made", "yet")} {
				device, ok, err := Unjournaled(d)
				if err != nil || ok != tc.unjournaled || !strings.HasPrefix(device, "loop") {
					t.Fatalf("Unjournaled(%s) = %q, %v, %v; want a loop device, %v", d, device, ok, err, tc.unjournaled)
				}
			}
			var logged bytes.Buffer
			Warn(slog.New(slog.NewTextHandler(&logged, nil)), dir, "work directory")
			if warned := strings.Contains(logged.String(), "level=WARN msg=\"the work directory is on an ext4 filesystem without a journal"); warned != tc.unjournaled || (warned && !strings.Contains(logged.String(), "dir="+dir)) {
				t.Errorf("Warn(%s) logged %q", dir, logged.String())
			}
		})
	}
	if _, ok, err := Unjournaled("/dev/shm"); err != nil || ok {
		t.Errorf("Unjournaled(/dev/shm) = %v, %v; want a tmpfs, not flagged", ok, err)
	}
}
