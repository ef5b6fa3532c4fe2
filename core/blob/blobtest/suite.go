package blobtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Exercise runs the suite against the stores newStore makes. Keys are unique per test, so
// stores may share a backing bucket or directory.
func Exercise(t *testing.T, newStore func(t *testing.T) blob.Store) {
	t.Helper()
	var n atomic.Int64
	key := func(t *testing.T, name string) string {
		return blob.OutputKey(fmt.Sprintf("acc_%d_%d", time.Now().UnixNano(), n.Add(1)), "job_"+strings.ReplaceAll(t.Name(), "/", "_"), name)
	}
	ctx := context.Background()

	t.Run("PutOpenRoundTrip", func(t *testing.T) {
		t.Parallel()
		s, k := newStore(t), key(t, "out.mp4")
		data := bytes.Repeat([]byte("mediajobs"), 10000)
		n, err := s.Put(ctx, k, bytes.NewReader(data), 0)
		if err != nil || n != int64(len(data)) {
			t.Fatalf("Put: %d %v", n, err)
		}
		b, err := s.Open(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if b.Size() != int64(len(data)) {
			t.Fatalf("Size %d, want %d", b.Size(), len(data))
		}
		if b.ModTime().IsZero() {
			t.Fatal("ModTime is zero")
		}
		got, err := io.ReadAll(b)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read back %d bytes, %v", len(got), err)
		}
	})

	t.Run("EmptyBlob", func(t *testing.T) {
		t.Parallel()
		s, k := newStore(t), key(t, "empty.txt")
		if n, err := s.Put(ctx, k, strings.NewReader(""), 10); err != nil || n != 0 {
			t.Fatalf("Put: %d %v", n, err)
		}
		b, err := s.Open(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if b.Size() != 0 {
			t.Fatalf("size %d", b.Size())
		}
	})

	t.Run("SeekServesRanges", func(t *testing.T) {
		t.Parallel()
		s, k := newStore(t), key(t, "seg.ts")
		data := []byte("0123456789abcdefghij")
		if _, err := s.Put(ctx, k, bytes.NewReader(data), 0); err != nil {
			t.Fatal(err)
		}
		b, err := s.Open(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		for _, tc := range []struct {
			off    int64
			whence int
			n      int
			want   string
		}{{10, io.SeekStart, 5, "abcde"}, {-3, io.SeekEnd, 3, "hij"}, {2, io.SeekStart, 2, "23"}, {1, io.SeekCurrent, 3, "567"}} {
			if _, err := b.Seek(tc.off, tc.whence); err != nil {
				t.Fatalf("Seek(%d, %d): %v", tc.off, tc.whence, err)
			}
			buf := make([]byte, tc.n)
			if _, err := io.ReadFull(b, buf); err != nil || string(buf) != tc.want {
				t.Fatalf("Seek(%d, %d) then read %q, %v; want %q", tc.off, tc.whence, buf, err, tc.want)
			}
		}
		if end, err := b.Seek(0, io.SeekEnd); err != nil || end != int64(len(data)) {
			t.Fatalf("Seek to end: %d %v", end, err)
		}
	})

	t.Run("OverTheCapKeepsNothing", func(t *testing.T) {
		t.Parallel()
		s, k := newStore(t), key(t, "big.bin")
		_, err := s.Put(ctx, k, bytes.NewReader(make([]byte, 101)), 100)
		if !errors.Is(err, blob.ErrTooLarge) {
			t.Fatalf("Put over the cap: %v, want ErrTooLarge", err)
		}
		if _, err := s.Open(ctx, k); !errors.Is(err, problem.ErrNotFound) {
			t.Fatalf("Open after a refused Put: %v, want ErrNotFound", err)
		}
		if n, err := s.Put(ctx, k, bytes.NewReader(make([]byte, 100)), 100); err != nil || n != 100 {
			t.Fatalf("Put at the cap: %d %v", n, err)
		}
	})

	t.Run("PutReplaces", func(t *testing.T) {
		t.Parallel()
		s, k := newStore(t), key(t, "a.txt")
		for _, v := range []string{"first version", "second"} {
			if _, err := s.Put(ctx, k, strings.NewReader(v), 0); err != nil {
				t.Fatal(err)
			}
		}
		b, err := s.Open(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if got, _ := io.ReadAll(b); string(got) != "second" {
			t.Fatalf("got %q", got)
		}
	})

	t.Run("MissingIsNotFound", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		if _, err := s.Open(ctx, key(t, "none")); !errors.Is(err, problem.ErrNotFound) {
			t.Fatalf("Open missing: %v", err)
		}
		if err := s.Delete(ctx, key(t, "none")); err != nil {
			t.Fatalf("Delete missing: %v", err)
		}
	})

	t.Run("DeleteRemoves", func(t *testing.T) {
		t.Parallel()
		s, k := newStore(t), key(t, "gone.txt")
		if _, err := s.Put(ctx, k, strings.NewReader("x"), 0); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Open(ctx, k); !errors.Is(err, problem.ErrNotFound) {
			t.Fatalf("Open after Delete: %v", err)
		}
	})

	t.Run("KeysDoNotCollide", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		acc := fmt.Sprintf("acc_%d", n.Add(1))
		keys := []string{blob.AssetKey(acc, "ast_1"), blob.OutputKey(acc, "job_1", "ast_1"), blob.OutputKey(acc, "job_2", "out.mp4"),
			blob.OutputKey(acc, "job_1", "out.mp4")}
		for i, k := range keys {
			if _, err := s.Put(ctx, k, strings.NewReader(fmt.Sprint(i)), 0); err != nil {
				t.Fatal(err)
			}
		}
		for i, k := range keys {
			b, err := s.Open(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(b)
			b.Close()
			if string(got) != fmt.Sprint(i) {
				t.Fatalf("%s holds %q, want %d", k, got, i)
			}
		}
	})

	t.Run("ConcurrentPutsOfOneKeyLeaveOneWholeBlob", func(t *testing.T) {
		t.Parallel()
		s, k := newStore(t), key(t, "race.bin")
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				_, _ = s.Put(ctx, k, bytes.NewReader(bytes.Repeat([]byte{byte('a' + i)}, 64<<10)), 0)
			})
		}
		wg.Wait()
		b, err := s.Open(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		got, _ := io.ReadAll(b)
		if len(got) != 64<<10 || bytes.Count(got, got[:1]) != len(got) {
			t.Fatalf("a blob mixes writers: %d bytes", len(got))
		}
	})

	t.Run("CancelledPutKeepsNothing", func(t *testing.T) {
		t.Parallel()
		s, k := newStore(t), key(t, "cut.bin")
		cctx, cancel := context.WithCancel(ctx)
		r := &cancelAfter{r: bytes.NewReader(make([]byte, 1<<20)), after: 64 << 10, cancel: cancel}
		if _, err := s.Put(cctx, k, r, 0); err == nil {
			t.Fatal("a Put whose context ended mid-way succeeded")
		}
		if _, err := s.Open(ctx, k); !errors.Is(err, problem.ErrNotFound) {
			t.Fatalf("Open after a cancelled Put: %v", err)
		}
	})
}

// cancelAfter cancels its context once after bytes were read.
type cancelAfter struct {
	r      io.Reader
	read   int
	after  int
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += n
	if c.read >= c.after {
		c.cancel()
	}
	return n, err
}
