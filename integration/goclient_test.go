package integration

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mjclient "github.com/mediajobs/mediajobs/contracts/client"
)

// recorder notes the status of every answer the Go client gets, after the contract check.
type recorder struct {
	next     http.RoundTripper
	mu       sync.Mutex
	statuses []string // "GET /jobs/job_... 429"
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err == nil {
		r.mu.Lock()
		r.statuses = append(r.statuses, req.Method+" "+req.URL.Path+" "+http.StatusText(resp.StatusCode))
		r.mu.Unlock()
	}
	return resp, err
}

func (r *recorder) saw(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range r.statuses {
		if x == s {
			return true
		}
	}
	return false
}

// goClient is the generated client of contracts/client on server s as key; every answer is
// checked against the contract and recorded.
func goClient(t *testing.T, s *server, key string) (*mjclient.ClientWithResponses, *recorder) {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	rec := &recorder{next: validating{t: t, next: tr}}
	c, err := mjclient.New(s.Base, key, mjclient.WithHTTPClient(&http.Client{Transport: rec}))
	if err != nil {
		t.Fatal(err)
	}
	return c, rec
}

// TestClientAgainstServer runs the Go client's helpers against the real service: Upload a local
// file, Submit a job on it, Wait, Download, and Wait through a real 429.
func TestClientAgainstServer(t *testing.T) {
	t.Parallel()
	t.Run("upload, submit, wait, download", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s := startServer(t, serverOpts{Backend: sqliteBackend, Unthrottled: true})
		c, _ := goClient(t, s, createAccount(t, s, "pro").APIKey)

		src := filepath.Join(t.TempDir(), "clip.mp4")
		if err := os.WriteFile(src, makeMedia(t, 1), 0o644); err != nil {
			t.Fatal(err)
		}
		up, err := c.UploadFile(ctx, src)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(up.ID, "ast_") || up.Name != "clip.mp4" || up.ContentType != "video/mp4" || !strings.HasSuffix(up.URL, "/assets/"+up.ID+"/content") {
			t.Fatalf("UploadFile = %+v", up)
		}
		req, err := mjclient.FFmpegJob{
			Command: "ffmpeg -i in.mp4 -vf scale=64:-2 -c:v libx264 -preset ultrafast small.mp4",
			Inputs:  map[string]any{"in.mp4": up.URL},
			Timeout: 60, Compute: "cpu",
		}.Request()
		if err != nil {
			t.Fatal(err)
		}
		created, err := c.Submit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		var progress []mjclient.Status
		j, err := c.Wait(ctx, created.ID, mjclient.WithProgress(func(j mjclient.Job) { progress = append(progress, j.Status) }))
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != mjclient.StatusComplete || j.Output == nil || len(j.Output.Files) != 1 || j.Cost == nil || j.Cost.Amount < 1 {
			t.Fatalf("Wait = %+v, want a complete, charged job with one file", j)
		}
		if progress[len(progress)-1] != mjclient.StatusComplete {
			t.Errorf("progress calls %v do not end with complete", progress)
		}
		dir := filepath.Join(t.TempDir(), "out")
		path, err := c.Download(ctx, j.Output.Files[0], dir)
		if err != nil {
			t.Fatal(err)
		}
		if p := ffprobe(t, path); len(p.Streams) != 1 || p.Streams[0].Width != 64 {
			t.Errorf("downloaded %s: streams %+v, want one 64 pixels wide", path, p.Streams)
		}

		// Refusals come back as *APIError with the service's code and message.
		_, err = c.Upload(ctx, "empty.txt", bytes.NewReader(nil))
		var apiErr *mjclient.APIError
		if !errors.As(err, &apiErr) || apiErr.Code != mjclient.CodeVALIDATIONERROR || apiErr.StatusCode != http.StatusBadRequest {
			t.Errorf("Upload of nothing: %v, want a 400 VALIDATION_ERROR", err)
		}
		bad, _ := mjclient.FFmpegJob{Command: "ffmpeg -i https://example.com/a.mp4 -filter_script x out.mp4"}.Request()
		if _, err := c.Submit(ctx, bad); !errors.As(err, &apiErr) || apiErr.Code != mjclient.CodeVALIDATIONERROR || !strings.Contains(apiErr.Message, "-filter_script") {
			t.Errorf("Submit of a refused flag: %v, want VALIDATION_ERROR naming it", err)
		}
		if _, err := c.Wait(ctx, "job_nosuchjob"); !errors.As(err, &apiErr) || apiErr.Code != mjclient.CodeNOTFOUND {
			t.Errorf("Wait for an unknown job: %v, want NOT_FOUND", err)
		}
	})

	t.Run("Wait honours a real Retry-After", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s := startServer(t, serverOpts{Backend: sqliteBackend})
		key := createAccount(t, s, "free").APIKey
		c, rec := goClient(t, s, key)
		req, _ := mjclient.FFmpegJob{Command: "ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=5 -frames:v 1 one.png"}.Request()
		created, err := c.Submit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		// Spend the rest of the Free plan's minute, so that Wait's first read is refused.
		for i := 0; ; i++ {
			if rawGet(t, s.Base, key, "/account").StatusCode == http.StatusTooManyRequests {
				break
			}
			if i > 40 {
				t.Fatal("no 429 after 40 requests on the Free plan")
			}
		}
		j, err := c.Wait(ctx, created.ID)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != mjclient.StatusComplete {
			t.Fatalf("Wait = %s, want complete", j.Status)
		}
		if !rec.saw("GET /jobs/" + created.ID + " Too Many Requests") {
			t.Fatalf("Wait met no 429 (answers %v): the test did not test Retry-After", rec.statuses)
		}
	})
}
