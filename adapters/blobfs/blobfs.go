// Package blobfs is the embedded default blob.Store: a directory on local disk, written atomically
// (temporary file, then rename) so a reader never sees half a blob.
package blobfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Store keeps blobs as files under a root directory.
type Store struct {
	root string
}

var _ blob.Store = (*Store)(nil)

// New returns a store rooted at dir, creating it. Directories are 0700 and blobs 0600: only the
// service's own user reads them (downloads go through the API).
func New(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("blobfs: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("blobfs: %w", err)
	}
	return &Store{root: abs}, nil
}

// path maps a key to a file under root. Keys are the service's own (blob.AssetKey,
// blob.OutputKey), but a key that would leave root is refused all the same.
func (s *Store) path(key string) (string, error) {
	if key == "" || strings.Contains(key, "\\") || !fs.ValidPath(key) {
		return "", fmt.Errorf("blobfs: invalid key %q", key)
	}
	return filepath.Join(s.root, filepath.FromSlash(key)), nil
}

// Put writes r under key, refusing more than max bytes (max ≤ 0: no cap).
func (s *Store) Put(ctx context.Context, key string, r io.Reader, max int64) (int64, error) {
	p, err := s.path(key)
	if err != nil {
		return 0, err
	}
	tmp, err := createIn(ctx, filepath.Dir(p))
	if err != nil {
		return 0, fmt.Errorf("blobfs: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	src := r
	if max > 0 {
		src = io.LimitReader(r, max+1)
	}
	n, err := io.Copy(tmp, ctxReader{ctx, src})
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("blobfs: write %s: %w", key, err)
	}
	if max > 0 && n > max {
		return 0, blob.ErrTooLarge
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return 0, fmt.Errorf("blobfs: %w", err)
	}
	return n, nil
}

// createIn makes a temporary file in dir, making dir and its parents first. A Delete that
// emptied dir may remove it meanwhile (it prunes a blob's own directory), so the pair is tried
// again then (a removal takes an empty directory, and one holding the temporary file is not),
// up to a bound, for a directory that keeps going away for another reason (its root removed).
func createIn(ctx context.Context, dir string) (*os.File, error) {
	for try := 1; ; try++ {
		var f *os.File
		err := mkdir(dir)
		if err == nil {
			f, err = os.CreateTemp(dir, ".put-*")
		}
		if err == nil || !errors.Is(err, fs.ErrNotExist) || ctx.Err() != nil || try == 100 {
			return f, err
		}
	}
}

// mkdir makes dir and its parents. A blob's directory is most often new with its parent there
// (a job's outputs under their account's), which one mkdir makes, where MkdirAll would stat dir,
// then its parent, then make it.
func mkdir(dir string) error {
	err := os.Mkdir(dir, 0o700)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return nil
	}
	return os.MkdirAll(dir, 0o700)
}

// Open returns the blob under key, or problem.ErrNotFound.
func (s *Store) Open(_ context.Context, key string) (blob.Blob, error) {
	p, err := s.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("blob %s: %w", key, problem.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("blobfs: %w", err)
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("blob %s: %w", key, problem.ErrNotFound)
	}
	return file{f, st}, nil
}

type file struct {
	*os.File
	st fs.FileInfo
}

func (f file) Size() int64        { return f.st.Size() }
func (f file) ModTime() time.Time { return f.st.ModTime() }

// Delete removes the blob under key; a missing one is not an error.
func (s *Store) Delete(_ context.Context, key string) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blobfs: %w", err)
	}
	// A job's outputs have a directory of their own; the last one deleted takes it along, so
	// that deleted blobs leave no directory (an inode and a block each) behind. The levels
	// above it (an account's) are shared and stay. Removing a directory that is not empty
	// fails, and leaves it.
	if dir := filepath.Dir(p); dir != s.root && strings.HasPrefix(dir, s.root+string(filepath.Separator)) {
		_ = syscall.Rmdir(dir)
	}
	return nil
}

// ctxReader stops a long copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
