package integration

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDataFilesArePrivate: what the service keeps on disk is its owner's alone. With the
// in-process runner the data directory is 0711 (the sandbox user must reach the work
// directories inside; it cannot list it); the database and its WAL files, the signing key and
// every blob are 0600, every other directory 0700 (work directories aside, which the sandbox
// writes, and the warm sandboxes' root beside them). A data directory an admin command creates,
// with no runner, is 0700.
func TestDataFilesArePrivate(t *testing.T) {
	t.Parallel()
	srv := startServer(t, serverOpts{Backend: sqliteBackend, Unthrottled: true})
	c := newClient(t, srv, createAccount(t, srv, "pro").APIKey)
	up := c.uploadRaw("clip.mp4", makeMedia(t, 1))
	c.complete(ffmpegJob("ffmpeg -i clip.mp4 -frames:v 1 thumb.png", map[string]any{"clip.mp4": up.URL}, nil))

	mode := func(p string) fs.FileMode {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	if m := mode(srv.Data); m != 0o711 {
		t.Errorf("data directory %o, want 711", m)
	}
	var files int
	err := filepath.WalkDir(srv.Data, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(srv.Data, p)
		switch {
		case rel == "." || rel == "work" || strings.HasPrefix(rel, "work"+string(filepath.Separator)):
			return nil
		case rel == "work.warm" || strings.HasPrefix(rel, "work.warm"+string(filepath.Separator)):
			// The warm sandboxes' root, which the sandbox user reaches as it reaches the work
			// directories; its launcher is the service's own binary, which it executes.
			return nil
		case d.IsDir():
			if m := mode(p); m != 0o700 {
				t.Errorf("directory %s is %o, want 700", rel, m)
			}
		default:
			files++
			if m := mode(p); m != 0o600 {
				t.Errorf("file %s is %o, want 600", rel, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 4 { // the database, the signing key, the upload and the job's output at least
		t.Errorf("only %d files in the data directory; the walk saw too little to prove anything", files)
	}

	fresh := filepath.Join(t.TempDir(), "admin-data")
	cmd := exec.Command(binary, "accounts", "create", "--data", fresh, "--plan", "free")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("accounts create: %v: %s", err, out)
	}
	if m := mode(fresh); m != 0o700 {
		t.Errorf("a data directory created by an admin command is %o, want 700", m)
	}
	if m := mode(filepath.Join(fresh, "mediajobs.db")); m != 0o600 {
		t.Errorf("its database is %o, want 600", m)
	}
}
