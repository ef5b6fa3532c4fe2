package servicetest

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"io"
	"sync"

	"github.com/mediajobs/mediajobs/core/destination"
)

// FakeDeliverer is a fake destination.Deliverer: it keeps what is put in memory, by bucket and
// key, and fails with Fail when set. The real S3 path (adapters/s3deliver) is tested end to end.
type FakeDeliverer struct {
	mu      sync.Mutex
	objects map[string][]byte // bucket + "/" + key
	fail    error
	targets []destination.Target
}

// NewFakeDeliverer returns an empty fake.
func NewFakeDeliverer() *FakeDeliverer { return &FakeDeliverer{objects: map[string][]byte{}} }

// Fail makes every later Put and Check fail with err; nil makes them succeed again.
func (f *FakeDeliverer) Fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = err
}

// Object returns what was put under key in bucket.
func (f *FakeDeliverer) Object(bucket, key string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.objects[bucket+"/"+key]
	return b, ok
}

// Keys are the bucket/key names of the objects held.
func (f *FakeDeliverer) Keys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for k := range f.objects {
		out = append(out, k)
	}
	return out
}

// Targets are the targets of every call, in order: what the fake was asked to reach.
func (f *FakeDeliverer) Targets() []destination.Target {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]destination.Target(nil), f.targets...)
}

// Put implements destination.Deliverer; the ETag is the quoted MD5 of the bytes, as S3's of
// a single-part upload.
func (f *FakeDeliverer) Put(_ context.Context, t destination.Target, key string, r io.ReadSeeker, size int64) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, size))
	f.mu.Lock()
	defer f.mu.Unlock()
	f.targets = append(f.targets, t)
	if f.fail != nil {
		return "", f.fail
	}
	if err != nil {
		return "", err
	}
	f.objects[t.Bucket+"/"+key] = b
	sum := md5.Sum(b)
	return `"` + hex.EncodeToString(sum[:]) + `"`, nil
}

// Check implements destination.Deliverer: it writes nothing.
func (f *FakeDeliverer) Check(_ context.Context, t destination.Target, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.targets = append(f.targets, t)
	return f.fail
}
