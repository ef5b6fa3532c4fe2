package blobstore_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/adapters/blobfs"
	"github.com/mediajobs/mediajobs/adapters/blobs3"
	"github.com/mediajobs/mediajobs/adapters/blobs3/s3test"
	"github.com/mediajobs/mediajobs/adapters/blobstore"
	"github.com/mediajobs/mediajobs/core/blob"
)

// put stores one blob through s, so that where it went can be looked at.
func put(t *testing.T, s blob.Store) {
	t.Helper()
	if _, err := s.Put(context.Background(), blob.AssetKey("acc_1", "ast_1"), strings.NewReader("x"), 0); err != nil {
		t.Fatal(err)
	}
}

func TestOpenDirectory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	data := t.TempDir()
	abs := t.TempDir()
	for _, tc := range []struct {
		raw, dir string
	}{
		{"", filepath.Join(data, "blobs")},
		{"file://" + filepath.ToSlash(abs), abs},
		{"FILE://" + filepath.ToSlash(abs) + "/x", filepath.Join(abs, "x")},
	} {
		s, err := blobstore.Open(ctx, tc.raw, data)
		if err != nil {
			t.Fatalf("Open(%q): %v", tc.raw, err)
		}
		if _, ok := s.(*blobfs.Store); !ok {
			t.Fatalf("Open(%q) is a %T", tc.raw, s)
		}
		put(t, s)
		if _, err := os.Stat(filepath.Join(tc.dir, "accounts", "acc_1", "assets", "ast_1")); err != nil {
			t.Fatalf("Open(%q) did not keep blobs in %s: %v", tc.raw, tc.dir, err)
		}
	}
}

// A relative file:// directory is relative to the working directory. Not parallel: it changes
// the working directory.
func TestOpenRelativeDirectory(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	s, err := blobstore.Open(context.Background(), "file://var/blobs", "unused")
	if err != nil {
		t.Fatal(err)
	}
	put(t, s)
	if _, err := os.Stat(filepath.Join(dir, "var", "blobs", "accounts", "acc_1", "assets", "ast_1")); err != nil {
		t.Fatal(err)
	}
}

// Not parallel: the credentials come from the environment, as in production.
func TestOpenBucket(t *testing.T) {
	srv := s3test.Start(t)
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	s, err := blobstore.Open(context.Background(), srv.URL(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*blobs3.Store); !ok {
		t.Fatalf("Open(%q) is a %T", srv.URL(), s)
	}
	put(t, s)
	if _, err := os.Stat(filepath.Join(srv.Dir, srv.Bucket, "accounts", "acc_1", "assets", "ast_1")); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw, want string
	}{
		{"/var/blobs", `blobs "/var/blobs": want file://DIR`},
		{"ftp://host/x", `blobs "ftp://host/x": want file://DIR`},
		{"ftp://user:hunter2@host/x", `blobs "ftp://user:xxxxx@host/x"`},
		{"gs://bucket", `blobs "gs://bucket"`},
		{"file://", "the directory is missing"},
		{"file:///x?y=1", "no query"},
		{"s3://Bad_Bucket", `bucket "Bad_Bucket"`},
		{"s3://media?regio=x", `parameter "regio" is unknown`},
	} {
		if _, err := blobstore.Open(context.Background(), tc.raw, t.TempDir()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q): %v, want an error with %q", tc.raw, err, tc.want)
		}
	}
}
