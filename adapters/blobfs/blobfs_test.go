package blobfs_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mediajobs/mediajobs/adapters/blobfs"
	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/blob/blobtest"
	"github.com/mediajobs/mediajobs/core/problem"
)

func TestSuite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	blobtest.TestStore(t, blobtest.Features{}, func(t *testing.T) blob.Store {
		s, err := blobfs.New(dir)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// Blobs are the service's alone: directories 0700, files 0600.
func TestPrivateModes(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "blobs")
	s, err := blobfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	key := blob.OutputKey("acc_1", "job_1", "out.mp4")
	if _, err := s.Put(context.Background(), key, strings.NewReader("x"), 0); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, "accounts", "acc_1", "jobs", "job_1")} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want 0700", p, st.Mode().Perm(), err)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(key))); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("blob mode %v %v, want 0600", st.Mode().Perm(), err)
	}
}

func TestPutOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := blobfs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.Put(ctx, "jobs/job_1/out.mp4", strings.NewReader("hello"), 10)
	if err != nil || n != 5 {
		t.Fatalf("Put: %d %v", n, err)
	}
	b, err := s.Open(ctx, "jobs/job_1/out.mp4")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got, _ := io.ReadAll(b)
	if string(got) != "hello" || b.Size() != 5 {
		t.Fatalf("read %q size %d", got, b.Size())
	}
	if _, err := b.Seek(1, io.SeekStart); err != nil {
		t.Fatal(err)
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s, _ := blobfs.New(filepath.Join(dir, "root"))
	if _, err := s.Put(ctx, "assets/big", strings.NewReader(strings.Repeat("x", 11)), 10); !errors.Is(err, blob.ErrTooLarge) {
		t.Fatalf("over cap: %v", err)
	}
	if _, err := s.Open(ctx, "assets/big"); !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("a refused Put left a blob: %v", err)
	}
	if _, err := s.Open(ctx, "assets/none"); !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	for _, key := range []string{"../escape", "/etc/passwd", "a/../../b", "", "a\\b", "./x"} {
		if _, err := s.Put(ctx, key, strings.NewReader("x"), 0); err == nil {
			t.Errorf("Put(%q) accepted", key)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("something escaped the root: %v", entries)
	}
}

// Deleting a directory's last blob removes that directory, and only it: deleted outputs leave
// no directory of theirs behind, and an account's directories stay for its other jobs.
func TestDeletePrunesEmptyDirectories(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	s, err := blobfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{
		blob.OutputKey("acc_1", "job_1", "a.mp4"), blob.OutputKey("acc_1", "job_1", "b.mp4"),
		blob.AttemptOutputKey("acc_1", "job_1", 2, "a.mp4"), blob.OutputKey("acc_2", "job_2", "a.mp4"),
	}
	for _, k := range keys {
		if _, err := s.Put(ctx, k, strings.NewReader("x"), 0); err != nil {
			t.Fatal(err)
		}
	}
	exists := func(rel string) bool {
		_, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
		return err == nil
	}
	for _, step := range []struct {
		del      string
		gone     []string
		standing []string
	}{
		{keys[0], nil, []string{"accounts/acc_1/jobs/job_1"}},
		{keys[2], []string{"accounts/acc_1/jobs/job_1.2"}, []string{"accounts/acc_1/jobs/job_1"}},
		{keys[1], []string{"accounts/acc_1/jobs/job_1"}, []string{"accounts/acc_1/jobs", "accounts/acc_2/jobs/job_2"}},
		{keys[3], []string{"accounts/acc_2/jobs/job_2"}, []string{"accounts/acc_2/jobs", "."}},
		{keys[3], nil, []string{"accounts/acc_2/jobs", "."}}, // deleting again: nothing to prune
	} {
		if err := s.Delete(ctx, step.del); err != nil {
			t.Fatalf("delete %s: %v", step.del, err)
		}
		for _, d := range step.gone {
			if exists(d) {
				t.Errorf("after deleting %s, %s is still there", step.del, d)
			}
		}
		for _, d := range step.standing {
			if !exists(d) {
				t.Errorf("after deleting %s, %s is gone", step.del, d)
			}
		}
	}
}

// Puts and Deletes of many jobs of one account, at once, all land: none finds a directory it
// made removed under it.
func TestPutsBesideDeletesOfOneAccount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := blobfs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	var first atomic.Value
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				k := blob.OutputKey("acc_1", fmt.Sprintf("job_%d_%d", g, i), "out.mp4")
				if _, err := s.Put(ctx, k, strings.NewReader("x"), 0); err != nil {
					failed.Add(1)
					first.CompareAndSwap(nil, err.Error())
				}
				if err := s.Delete(ctx, k); err != nil {
					failed.Add(1)
					first.CompareAndSwap(nil, err.Error())
				}
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Errorf("%d of 8,000 calls failed; first: %v", n, first.Load())
	}
}

// A Put into a directory that a Delete is pruning at the same moment still stores its blob.
func TestPutBesideDeleteOfTheSameDirectory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := blobfs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		a, b := blob.OutputKey("acc", fmt.Sprint("job_", i), "a"), blob.OutputKey("acc", fmt.Sprint("job_", i), "b")
		if _, err := s.Put(ctx, a, strings.NewReader("a"), 0); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- s.Delete(ctx, a) }()
		if _, err := s.Put(ctx, b, strings.NewReader("b"), 0); err != nil {
			t.Fatalf("put beside a delete: %v", err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if r, err := s.Open(ctx, b); err != nil {
			t.Fatalf("open after put beside a delete: %v", err)
		} else {
			r.Close()
		}
	}
}
