// Package s3test starts a real S3-compatible server for tests: versitygw over a directory of
// the test's, on a loopback port, with one empty bucket. scripts/deps.sh installs versitygw;
// where it is missing, tests that need it skip and say how to install it.
package s3test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

// Version is the versitygw that scripts/deps.sh installs.
const Version = "v1.8.0"

// Region is the server's region, versitygw's default.
const Region = "us-east-1"

// Server is a running versitygw with one bucket.
type Server struct {
	// Endpoint is the base URL, http://127.0.0.1:PORT.
	Endpoint string
	// Bucket exists and is empty at start.
	Bucket string
	// AccessKey and SecretKey are the root user's credentials.
	AccessKey, SecretKey string
	// Dir is the posix backend's root: a bucket is a directory under it, an object a file.
	Dir string
}

// Start runs versitygw until the test ends, skipping the test when versitygw is not installed.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		testenv.Missing(t, "versitygw, the S3 server (scripts/deps.sh builds it)", err)
	}
	s := &Server{
		Bucket:    "mediajobs-test",
		AccessKey: "mediajobs-test-access",
		SecretKey: "mediajobs-test-secret-" + fmt.Sprint(time.Now().UnixNano()),
		Dir:       filepath.Join(t.TempDir(), "s3"),
	}
	if err := os.Mkdir(s.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// The port is chosen free and then handed to versitygw, so another process may take it in
	// between; a few tries make that race harmless.
	var lastErr error
	for range 5 {
		if lastErr = s.run(t, bin); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("s3test: %v", lastErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(s.Bucket)}); err != nil {
		t.Fatalf("s3test: create bucket %s: %v", s.Bucket, err)
	}
	return s
}

// run starts versitygw on a free port and waits until it answers HTTP. On failure the process
// is gone and the error holds its output.
func (s *Server) run(t testing.TB, bin string) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := l.Addr().String()
	l.Close()

	var out syncBuffer
	cmd := exec.Command(bin, "--access", s.AccessKey, "--secret", s.SecretKey, "--region", Region,
		"--port", addr, "--quiet", "posix", s.Dir)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}

	endpoint := "http://" + addr
	probe := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("versitygw on %s exited (%v): %s", addr, err, strings.TrimSpace(out.String()))
		default:
		}
		// Any HTTP answer (403 to an unsigned request) means it serves.
		if resp, err := probe.Get(endpoint + "/"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			stop()
			return fmt.Errorf("versitygw on %s did not answer within 20s: %s", addr, strings.TrimSpace(out.String()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Endpoint = endpoint
	t.Cleanup(func() {
		stop()
		if t.Failed() && out.Len() > 0 {
			t.Logf("versitygw output:\n%s", out.String())
		}
	})
	return nil
}

// Client returns an S3 client of the server as its root user.
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(s.Endpoint),
		Region:       Region,
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
	})
}

// URL is the blob store URL of the bucket, as the --blobs flag takes it.
func (s *Server) URL() string {
	q := url.Values{"endpoint": {s.Endpoint}, "region": {Region}, "path_style": {"true"}}
	return "s3://" + s.Bucket + "?" + q.Encode()
}

// Env is the environment that gives a process the server's credentials, to pass to a binary
// started with URL.
func (s *Server) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + s.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s.SecretKey, "AWS_REGION=" + Region}
}

// Binary finds versitygw: $MEDIAJOBS_VERSITYGW, then where scripts/deps.sh installs it (go env
// GOBIN, or GOPATH/bin), then PATH.
func Binary() (string, error) {
	if p := os.Getenv("MEDIAJOBS_VERSITYGW"); p != "" {
		return p, nil
	}
	if out, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output(); err == nil {
		gobin, gopath, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		dir := strings.TrimSpace(gobin)
		if paths := filepath.SplitList(strings.TrimSpace(gopath)); dir == "" && len(paths) > 0 {
			dir = filepath.Join(paths[0], "bin")
		}
		p := filepath.Join(dir, "versitygw")
		if st, err := os.Stat(p); dir != "" && err == nil && !st.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	return "", errors.New("versitygw is not installed (neither in go env GOBIN or GOPATH/bin nor on PATH); run scripts/deps.sh, or go install github.com/versity/versitygw/cmd/versitygw@" + Version)
}

// syncBuffer collects the output of the server, written from its copying goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func (b *syncBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Len()
}
