package blobs3_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mediajobs/mediajobs/adapters/blobs3"
	"github.com/mediajobs/mediajobs/adapters/blobs3/s3test"
	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/blob/blobtest"
	"github.com/mediajobs/mediajobs/core/problem"
)

// The shared suite of the port, on a real S3-compatible server.
func TestSuite(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	blobtest.TestStore(t, blobtest.Features{}, func(t *testing.T) blob.Store {
		return newStore(t, srv, nil)
	})
}

// newStore opens a store of srv's bucket; edit changes the configuration first.
func newStore(t testing.TB, srv *s3test.Server, edit func(*blobs3.Config)) *blobs3.Store {
	t.Helper()
	c := blobs3.Config{
		Bucket:      srv.Bucket,
		Endpoint:    srv.Endpoint,
		Region:      s3test.Region,
		PathStyle:   true,
		Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, ""),
	}
	if edit != nil {
		edit(&c)
	}
	s, err := blobs3.New(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// pattern is n bytes in which every offset holds a different run, so a misplaced range shows.
func pattern(n int) []byte {
	b := make([]byte, 0, n+16)
	for i := 0; len(b) < n; i += 16 {
		b = append(b, []byte(strconv.FormatInt(int64(i), 36) + strings.Repeat(".", 16))[:16]...)
	}
	return b[:n]
}

// countingTransport counts the response bytes the store reads from S3.
type countingTransport struct {
	read atomic.Int64
	gets atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		if r.Method == http.MethodGet {
			c.gets.Add(1)
		}
		resp.Body = countingBody{resp.Body, &c.read}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// http.ServeContent, as /dl and /v/ use it, serves ranges, HEAD and conditional requests of an
// S3 blob, and a range costs about its own size from S3, not the whole object.
func TestServeContentOverS3(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	ct := &countingTransport{}
	s := newStore(t, srv, func(c *blobs3.Config) { c.HTTPClient = &http.Client{Transport: ct} })
	ctx := context.Background()
	data := pattern(1_000_000)
	key := blob.OutputKey("acc_1", "job_1", "out.mp4")
	if _, err := s.Put(ctx, key, bytes.NewReader(data), 0); err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := s.Open(r.Context(), key)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer b.Close()
		w.Header().Set("Content-Type", "video/mp4")
		http.ServeContent(w, r, "", b.ModTime(), b)
	}))
	defer web.Close()

	do := func(method string, header ...string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, web.URL, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}

	before := ct.read.Load()
	resp, body := do(http.MethodGet, "Range", "bytes=500000-500099")
	if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(body, data[500000:500100]) {
		t.Fatalf("range: %d, %d bytes, equal %v", resp.StatusCode, len(body), bytes.Equal(body, data[500000:500100]))
	}
	if got := resp.Header.Get("Content-Range"); got != "bytes 500000-500099/1000000" {
		t.Fatalf("Content-Range %q", got)
	}
	// A small range fetches one small window (plus the answers' own bytes), not the megabyte.
	if read := ct.read.Load() - before; read > 300_000 {
		t.Fatalf("a 100-byte range read %d bytes from S3", read)
	}

	resp, body = do(http.MethodGet, "Range", "bytes=-10")
	if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(body, data[len(data)-10:]) {
		t.Fatalf("suffix range: %d %q", resp.StatusCode, body)
	}

	resp, body = do(http.MethodHead)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Length") != "1000000" || len(body) != 0 {
		t.Fatalf("HEAD: %d, Content-Length %q, %d body bytes", resp.StatusCode, resp.Header.Get("Content-Length"), len(body))
	}
	if resp.Header.Get("Accept-Ranges") != "bytes" || resp.Header.Get("Last-Modified") == "" {
		t.Fatalf("HEAD headers: %v", resp.Header)
	}

	gets := ct.gets.Load()
	resp, body = do(http.MethodGet)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) {
		t.Fatalf("whole GET: %d, %d bytes", resp.StatusCode, len(body))
	}
	// Windows of 256 KiB, 512 KiB, then the rest: three GETs for a megabyte.
	if n := ct.gets.Load() - gets; n != 3 {
		t.Errorf("a whole megabyte took %d GETs from S3, want 3 (windows 256K, 512K, rest)", n)
	}

	resp, _ = do(http.MethodGet, "If-Modified-Since", resp.Header.Get("Last-Modified"))
	if resp.StatusCode != http.StatusNotModified {
		t.Fatalf("If-Modified-Since: %d", resp.StatusCode)
	}
	resp, _ = do(http.MethodGet, "Range", "bytes=2000000-")
	if resp.StatusCode != http.StatusRequestedRangeNotSatisfiable {
		t.Fatalf("range past the end: %d", resp.StatusCode)
	}
}

// Seeks and reads in any order agree with the bytes, across window boundaries.
func TestSeekAcrossWindows(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	s := newStore(t, srv, nil)
	ctx := context.Background()
	data := pattern(3 << 20)
	key := blob.OutputKey("acc_1", "job_1", "big.ts")
	if _, err := s.Put(ctx, key, bytes.NewReader(data), 0); err != nil {
		t.Fatal(err)
	}
	b, err := s.Open(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, tc := range []struct {
		off    int64
		whence int
		n      int
	}{
		{0, io.SeekStart, 1 << 20},       // across the first windows
		{256<<10 - 5, io.SeekStart, 10},  // straddles where the first window ends
		{-100, io.SeekEnd, 100},          // the tail
		{-(2 << 20), io.SeekCurrent, 5},  // back again
		{100, io.SeekCurrent, 1<<20 + 3}, // forward, long
		{int64(len(data)) - 1, io.SeekStart, 1},
	} {
		pos, err := b.Seek(tc.off, tc.whence)
		if err != nil {
			t.Fatalf("Seek(%d, %d): %v", tc.off, tc.whence, err)
		}
		got := make([]byte, tc.n)
		if _, err := io.ReadFull(b, got); err != nil || !bytes.Equal(got, data[pos:pos+int64(tc.n)]) {
			t.Fatalf("at %d: %d bytes differ, %v", pos, tc.n, err)
		}
	}
	if n, err := b.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Fatalf("read at the end: %d %v", n, err)
	}
	if _, err := b.Seek(-1, io.SeekStart); err == nil {
		t.Fatal("a seek before the start succeeded")
	}
}

// A blob replaced while it is read fails the read rather than mixing two versions.
func TestReplacedWhileRead(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	s := newStore(t, srv, nil)
	ctx := context.Background()
	key := blob.OutputKey("acc_1", "job_1", "out.mp4")
	if _, err := s.Put(ctx, key, bytes.NewReader(bytes.Repeat([]byte("a"), 1<<20)), 0); err != nil {
		t.Fatal(err)
	}
	b, err := s.Open(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := io.ReadFull(b, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, key, bytes.NewReader(bytes.Repeat([]byte("b"), 1<<20)), 0); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(b)
	if err == nil || !strings.Contains(err.Error(), "replaced") {
		t.Fatalf("reading on after a replace: %v", err)
	}
	if bytes.Contains(got, []byte("b")) {
		t.Fatal("a read mixed the two versions")
	}
}

// pending lists the multipart uploads under way in the bucket.
func pending(t *testing.T, srv *s3test.Server) []string {
	t.Helper()
	out, err := srv.Client().ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(srv.Bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, u := range out.Uploads {
		keys = append(keys, aws.ToString(u.Key))
	}
	return keys
}

// Large bodies go up in parts; past the cap, or when the context ends, the multipart upload is
// aborted and nothing is left: no object, no pending upload.
func TestMultipart(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	s := newStore(t, srv, nil)
	ctx := context.Background()
	data := pattern(20 << 20) // three parts of 8 MiB

	// The check of what is left sees a pending upload.
	up, err := srv.Client().CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(srv.Bucket), Key: aws.String("probe")})
	if err != nil {
		t.Fatal(err)
	}
	if p := pending(t, srv); !slices.Equal(p, []string{"probe"}) {
		t.Fatalf("pending uploads %q, want the probe", p)
	}
	if _, err := srv.Client().AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(srv.Bucket), Key: aws.String("probe"), UploadId: up.UploadId}); err != nil {
		t.Fatal(err)
	}

	t.Run("RoundTrip", func(t *testing.T) {
		key := blob.OutputKey("acc_1", "job_mp", "big.bin")
		n, err := s.Put(ctx, key, bytes.NewReader(data), int64(len(data)))
		if err != nil || n != int64(len(data)) {
			t.Fatalf("Put: %d %v", n, err)
		}
		out, err := srv.Client().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		// A multipart object's ETag ends in -<parts>.
		if etag := aws.ToString(out.ETag); !strings.HasSuffix(strings.Trim(etag, `"`), "-3") {
			t.Errorf("ETag %s: not a three-part upload", etag)
		}
		b, err := s.Open(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		got, err := io.ReadAll(b)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read back %d bytes, %v", len(got), err)
		}
	})

	for _, tc := range []struct {
		name string
		put  func(key string) error
	}{
		{"OverTheCap", func(key string) error {
			_, err := s.Put(ctx, key, bytes.NewReader(data), 18<<20)
			if !errors.Is(err, blob.ErrTooLarge) {
				t.Errorf("Put over the cap: %v, want ErrTooLarge", err)
			}
			return err
		}},
		{"Cancelled", func(key string) error {
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			_, err := s.Put(cctx, key, &cancelAt{r: bytes.NewReader(data), at: 17 << 20, cancel: cancel}, 0)
			if err == nil {
				t.Error("a Put whose context ended mid-way succeeded")
			}
			return err
		}},
		{"ReaderFails", func(key string) error {
			_, err := s.Put(ctx, key, io.MultiReader(bytes.NewReader(data[:17<<20]), errReader{}), 0)
			if !errors.Is(err, errBroken) {
				t.Errorf("Put of a failing reader: %v, want its error", err)
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := blob.OutputKey("acc_1", "job_"+tc.name, "big.bin")
			tc.put(key)
			if _, err := s.Open(ctx, key); !errors.Is(err, problem.ErrNotFound) {
				t.Fatalf("Open after a failed Put: %v, want ErrNotFound", err)
			}
			if p := pending(t, srv); slices.Contains(p, key) {
				t.Fatalf("a multipart upload of %s is left pending: %v", key, p)
			}
		})
	}
	if p := pending(t, srv); len(p) != 0 {
		t.Fatalf("multipart uploads left pending: %v", p)
	}
}

// cancelAt cancels its context once at bytes were read.
type cancelAt struct {
	r      io.Reader
	read   int
	at     int
	cancel context.CancelFunc
}

func (c *cancelAt) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += n
	if c.read >= c.at {
		c.cancel()
	}
	return n, err
}

var errBroken = errors.New("broken reader")

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errBroken }

// Keys land in the bucket as laid out by the core, under the prefix, so that lifecycle rules
// on accounts/<account>/ expire an account's blobs.
func TestKeyLayout(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	s := newStore(t, srv, func(c *blobs3.Config) { c.Prefix = "prod/" })
	ctx := context.Background()
	for _, k := range []string{blob.OutputKey("acc_7", "job_9", "out.mp4"), blob.AssetKey("acc_7", "ast_3"), blob.OutputKey("acc_8", "job_1", "seg_001.ts")} {
		if _, err := s.Put(ctx, k, strings.NewReader(k), 0); err != nil {
			t.Fatal(err)
		}
	}
	out, err := srv.Client().ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(srv.Bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	slices.Sort(keys)
	want := []string{"prod/accounts/acc_7/assets/ast_3", "prod/accounts/acc_7/jobs/job_9/out.mp4", "prod/accounts/acc_8/jobs/job_1/seg_001.ts"}
	if !slices.Equal(keys, want) {
		t.Fatalf("bucket holds %q, want %q", keys, want)
	}
	// The posix backend keeps an object as a file of the same path: the layout is the bucket's.
	if _, err := os.Stat(filepath.Join(srv.Dir, srv.Bucket, "prod", "accounts", "acc_7", "jobs", "job_9", "out.mp4")); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"../escape", "/abs", "a/../../b", "", `a\b`, "./x"} {
		if _, err := s.Put(ctx, k, strings.NewReader("x"), 0); err == nil {
			t.Errorf("Put(%q) accepted", k)
		}
	}
}

// Presigned URLs work with a plain HTTP client, each for its own method only, and stop working
// once their time has passed.
func TestPresign(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	s := newStore(t, srv, nil)
	// An hour ago, by the clock it signs with: its URLs of a minute have expired.
	past := newStore(t, srv, func(c *blobs3.Config) { c.Now = func() time.Time { return time.Now().Add(-time.Hour) } })
	ctx := context.Background()
	key := blob.OutputKey("acc_1", "job_1", "out.mp4")

	send := func(method, url string, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body == "" {
			req.Body = nil
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(got)
	}

	put, err := s.PresignPut(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(put, srv.Endpoint+"/"+srv.Bucket+"/accounts/acc_1/jobs/job_1/out.mp4?") {
		t.Fatalf("presigned PUT URL %s", put)
	}
	if code, body := send(http.MethodPut, put, "from a runner"); code != http.StatusOK {
		t.Fatalf("PUT through the presigned URL: %d %s", code, body)
	}
	b, err := s.Open(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(b)
	b.Close()
	if string(got) != "from a runner" {
		t.Fatalf("the store reads %q", got)
	}

	get, err := s.PresignGet(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := send(http.MethodGet, get, ""); code != http.StatusOK || body != "from a runner" {
		t.Fatalf("GET through the presigned URL: %d %q", code, body)
	}
	// The signature covers the method: a GET URL does not write, a PUT URL does not read.
	if code, _ := send(http.MethodPut, get, "overwrite"); code != http.StatusForbidden {
		t.Fatalf("PUT through a GET URL: %d, want 403", code)
	}
	if code, body := send(http.MethodGet, put, ""); code != http.StatusForbidden {
		t.Fatalf("GET through a PUT URL: %d %q, want 403", code, body)
	}

	oldGet, err := past.PresignGet(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := send(http.MethodGet, oldGet, ""); code != http.StatusForbidden || strings.Contains(body, "from a runner") {
		t.Fatalf("GET through an expired URL: %d %q, want 403", code, body)
	}
	oldPut, err := past.PresignPut(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := send(http.MethodPut, oldPut, "late"); code != http.StatusForbidden {
		t.Fatalf("PUT through an expired URL: %d, want 403", code)
	}
	if code, body := send(http.MethodGet, get, ""); code != http.StatusOK || body != "from a runner" {
		t.Fatalf("after refused writes the object is %d %q", code, body)
	}

	// Keys of any name sign right: S3 signs the path as sent, escaped once.
	odd := blob.OutputKey("acc_1", "job_1", "my clip+1 (é) 100%=&?#.mp4")
	oddPut, err := s.PresignPut(ctx, odd, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := send(http.MethodPut, oddPut, "odd"); code != http.StatusOK {
		t.Fatalf("PUT of %q through its presigned URL: %d %s", odd, code, body)
	}
	oddGet, err := s.PresignGet(ctx, odd, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := send(http.MethodGet, oddGet, ""); code != http.StatusOK || body != "odd" {
		t.Fatalf("GET of %q through its presigned URL: %d %q", odd, code, body)
	}
	if b, err := s.Open(ctx, odd); err != nil {
		t.Fatalf("Open(%q): %v", odd, err)
	} else {
		b.Close()
	}

	for _, ttl := range []time.Duration{0, -time.Second, 8 * 24 * time.Hour} {
		if _, err := s.PresignGet(ctx, key, ttl); err == nil || !strings.Contains(err.Error(), "ttl") {
			t.Errorf("PresignGet with ttl %v: %v", ttl, err)
		}
	}
	if _, err := s.PresignPut(ctx, "../x", time.Minute); err == nil {
		t.Error("PresignPut of a key outside the layout succeeded")
	}
}

// A store is refused at start when its bucket is missing or its credentials are wrong, with
// an error that says which.
func TestNewRefuses(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		edit func(*blobs3.Config)
		want string
	}{
		{"MissingBucket", func(c *blobs3.Config) { c.Bucket = "no-such-bucket" }, `bucket "no-such-bucket" does not exist at ` + srv.Endpoint},
		{"WrongSecret", func(c *blobs3.Config) {
			c.Credentials = credentials.NewStaticCredentialsProvider(srv.AccessKey, "wrong", "")
		}, "refuses these credentials"},
		{"BadBucketName", func(c *blobs3.Config) { c.Bucket = "Bad_Name" }, `bucket "Bad_Name"`},
		{"BadPrefix", func(c *blobs3.Config) { c.Prefix = "../up/" }, `prefix "../up/"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := blobs3.Config{
				Bucket: srv.Bucket, Endpoint: srv.Endpoint, Region: s3test.Region, PathStyle: true,
				Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, ""),
			}
			tc.edit(&c)
			_, err := blobs3.New(ctx, c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// Open takes the URL of the --blobs flag and the credentials of the standard AWS variables.
// Not parallel: it sets the environment.
func TestOpenFromEnvironment(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	s, err := blobs3.Open(ctx, srv.URL()+"&prefix=tenant-a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "accounts/a/assets/b", strings.NewReader("x"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(srv.Dir, srv.Bucket, "tenant-a", "accounts", "a", "assets", "b")); err != nil {
		t.Fatalf("the prefix of the URL was not used: %v", err)
	}

	// The region: region= first, then AWS_REGION, then AWS_DEFAULT_REGION, then us-east-1 for
	// an endpoint. versitygw refuses a request signed for a region not its own.
	noRegion := "s3://" + srv.Bucket + "?endpoint=" + srv.Endpoint
	for _, tc := range []struct {
		url, region, defaultRegion string
		ok                         bool
	}{
		{noRegion, "", "", true},
		{noRegion, "", s3test.Region, true},
		{noRegion, "", "eu-west-3", false},
		{noRegion, "eu-west-3", s3test.Region, false},
		{noRegion, s3test.Region, "eu-west-3", true},
		{noRegion + "&region=" + s3test.Region, "eu-west-3", "eu-west-3", true},
		{noRegion + "&region=eu-west-3", s3test.Region, s3test.Region, false},
	} {
		t.Setenv("AWS_REGION", tc.region)
		t.Setenv("AWS_DEFAULT_REGION", tc.defaultRegion)
		if _, err := blobs3.Open(ctx, tc.url); (err == nil) != tc.ok {
			t.Errorf("Open(%q) with AWS_REGION=%q AWS_DEFAULT_REGION=%q: %v, want success %v", tc.url, tc.region, tc.defaultRegion, err, tc.ok)
		}
	}

	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	if _, err := blobs3.Open(ctx, srv.URL()); err == nil || !strings.Contains(err.Error(), "AWS_SECRET_ACCESS_KEY is not") {
		t.Fatalf("half a key pair: %v", err)
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	if _, err := blobs3.Open(ctx, srv.URL()); err == nil || !strings.Contains(err.Error(), "refuses these credentials") {
		t.Fatalf("a wrong secret: %v", err)
	}
	if _, err := blobs3.Open(ctx, "s3://"); err == nil || !strings.Contains(err.Error(), "bucket") {
		t.Fatalf("a bad URL: %v", err)
	}
}
