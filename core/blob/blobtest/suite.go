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
	"github.com/mediajobs/mediajobs/core/porttest"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Features says what a blob.Store adapter can do. Every adapter (memory, a directory, an S3
// bucket) does all the suite asks, so it has no field yet: a new adapter passes every test, and a
// field is added here only when a real adapter cannot do something the others can.
type Features struct{}

// Constructor returns the store under test. Keys are unique per test, so the stores it returns
// may share a backing bucket or directory.
type Constructor func(t *testing.T) blob.Store

// TestStore runs the shared blob.Store suite: each test below, in parallel, against stores that
// newStore makes. An adapter's own test calls it once.
func TestStore(t *testing.T, f Features, newStore Constructor) {
	t.Helper()
	tests := []func(t *testing.T, f Features, newStore Constructor){
		TestPutOpenRoundTrip,
		TestEmptyBlob,
		TestSeekServesRanges,
		TestOverTheCapKeepsNothing,
		TestPutReplaces,
		TestMissingIsNotFound,
		TestDeleteRemoves,
		TestKeysDoNotCollide,
		TestConcurrentPutsOfOneKeyLeaveOneWholeBlob,
		TestCancelledPutKeepsNothing,
	}
	porttest.Run(t, f, newStore, tests...)
}

var keySeq atomic.Int64

// key is a key no other test uses, in any process that shares the store's backing.
func key(t *testing.T, name string) string {
	return blob.OutputKey(fmt.Sprintf("acc_%d_%d", time.Now().UnixNano(), keySeq.Add(1)), "job_"+strings.ReplaceAll(t.Name(), "/", "_"), name)
}

// TestPutOpenRoundTrip: what Put writes, Open reads back whole, with its size and a modification
// time.
func TestPutOpenRoundTrip(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	ctx := context.Background()
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
}

// TestEmptyBlob: an empty blob is stored and opens with size 0.
func TestEmptyBlob(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	ctx := context.Background()
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
}

// TestSeekServesRanges: an opened blob seeks from its start, its end and where it is, and reads on
// from there.
func TestSeekServesRanges(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	ctx := context.Background()
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
}

// TestOverTheCapKeepsNothing: a Put past its cap fails with blob.ErrTooLarge and keeps nothing; one
// at the cap is stored.
func TestOverTheCapKeepsNothing(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	ctx := context.Background()
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
}

// TestPutReplaces: a second Put of a key replaces the first.
func TestPutReplaces(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	ctx := context.Background()
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
}

// TestMissingIsNotFound: opening a missing key is problem.ErrNotFound; deleting one is no error.
func TestMissingIsNotFound(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	if _, err := s.Open(ctx, key(t, "none")); !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("Open missing: %v", err)
	}
	if err := s.Delete(ctx, key(t, "none")); err != nil {
		t.Fatalf("Delete missing: %v", err)
	}
}

// TestDeleteRemoves: a deleted blob is not found.
func TestDeleteRemoves(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	ctx := context.Background()
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
}

// TestKeysDoNotCollide: an account's asset key and its jobs' output keys, even of one name, hold
// blobs of their own.
func TestKeysDoNotCollide(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	acc := fmt.Sprintf("acc_%d", keySeq.Add(1))
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
}

// TestConcurrentPutsOfOneKeyLeaveOneWholeBlob: concurrent Puts of one key leave one writer's whole
// blob, never a mix.
func TestConcurrentPutsOfOneKeyLeaveOneWholeBlob(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	ctx := context.Background()
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
}

// TestCancelledPutKeepsNothing: a Put whose context ends mid-way fails and keeps nothing.
func TestCancelledPutKeepsNothing(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	ctx := context.Background()
	s, k := newStore(t), key(t, "cut.bin")
	cctx, cancel := context.WithCancel(ctx)
	r := &cancelAfter{r: bytes.NewReader(make([]byte, 1<<20)), after: 64 << 10, cancel: cancel}
	if _, err := s.Put(cctx, k, r, 0); err == nil {
		t.Fatal("a Put whose context ended mid-way succeeded")
	}
	if _, err := s.Open(ctx, k); !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("Open after a cancelled Put: %v", err)
	}
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
