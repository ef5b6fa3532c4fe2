// Package blobtest is the shared suite every blob.Store passes, and an in-memory store for the
// core's own tests.
//
// A new adapter's test calls TestStore once, with the Features the adapter has and a Constructor
// that returns the store under test:
//
//	blobtest.TestStore(t, blobtest.Features{}, func(t *testing.T) blob.Store { return open(t) })
//
// Each test of the suite is an exported function too (TestPutReplaces, …), so a failure names the
// function to read, and -run selects it by that name.
package blobtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Memory is a blob.Store in memory.
type Memory struct {
	mu    sync.Mutex
	blobs map[string]stored
}

type stored struct {
	data []byte
	at   time.Time
}

var _ blob.Store = (*Memory)(nil)

// NewMemory returns an empty store.
func NewMemory() *Memory { return &Memory{blobs: map[string]stored{}} }

// Put keeps r's bytes under key.
func (m *Memory) Put(ctx context.Context, key string, r io.Reader, max int64) (int64, error) {
	if key == "" {
		return 0, fmt.Errorf("blobtest: empty key")
	}
	src := r
	if max > 0 {
		src = io.LimitReader(r, max+1)
	}
	data, err := io.ReadAll(src)
	if err != nil {
		return 0, err
	}
	if max > 0 && int64(len(data)) > max {
		return 0, blob.ErrTooLarge
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.blobs[key] = stored{data: data, at: time.Now()}
	return int64(len(data)), nil
}

// Open returns the blob under key.
func (m *Memory) Open(_ context.Context, key string) (blob.Blob, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.blobs[key]
	if !ok {
		return nil, fmt.Errorf("blob %s: %w", key, problem.ErrNotFound)
	}
	return &reader{Reader: bytes.NewReader(s.data), size: int64(len(s.data)), at: s.at}, nil
}

// Delete removes the blob under key.
func (m *Memory) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.blobs, key)
	return nil
}

// Keys lists the stored keys, for tests.
func (m *Memory) Keys() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.blobs))
	for k := range m.blobs {
		out = append(out, k)
	}
	return out
}

type reader struct {
	*bytes.Reader
	size int64
	at   time.Time
}

func (r *reader) Close() error       { return nil }
func (r *reader) Size() int64        { return r.size }
func (r *reader) ModTime() time.Time { return r.at }
