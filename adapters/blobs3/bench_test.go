package blobs3_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/mediajobs/mediajobs/adapters/blobs3/s3test"
	"github.com/mediajobs/mediajobs/core/blob"
)

// Throughput of Put and of a whole read, through versitygw on loopback, for a body of 20 MiB
// (three parts) and one under a part (a single PutObject).
func BenchmarkPut(b *testing.B) {
	srv := s3test.Start(b)
	s := newStore(b, srv, nil)
	ctx := context.Background()
	for _, size := range []int{1 << 20, 20 << 20} {
		data := pattern(size)
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				if _, err := s.Put(ctx, blob.OutputKey("acc_b", "job_b", "put.bin"), bytes.NewReader(data), 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkRead(b *testing.B) {
	srv := s3test.Start(b)
	s := newStore(b, srv, nil)
	ctx := context.Background()
	data := pattern(20 << 20)
	key := blob.OutputKey("acc_b", "job_b", "read.bin")
	if _, err := s.Put(ctx, key, bytes.NewReader(data), 0); err != nil {
		b.Fatal(err)
	}
	b.Run("Whole20MiB", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			o, err := s.Open(ctx, key)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, o); err != nil {
				b.Fatal(err)
			}
			o.Close()
		}
	})
	// What a player's Range request costs: Open (a HEAD), Seek, and 64 KiB (a GET).
	b.Run("Range64KiB", func(b *testing.B) {
		buf := make([]byte, 64<<10)
		for b.Loop() {
			o, err := s.Open(ctx, key)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := o.Seek(10<<20, io.SeekStart); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(o, buf); err != nil {
				b.Fatal(err)
			}
			o.Close()
		}
	})
}
