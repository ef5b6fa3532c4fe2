package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/contracts/client"
	"github.com/mediajobs/mediajobs/core/webhook"
)

// The fake servers here check what the client sends and play back answers the real service
// gives rarely (413, 403 on a download); the same helpers run against the real binary in
// integration (TestClientAgainstServer).

func newClient(t *testing.T, h http.Handler) *client.ClientWithResponses {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, "mj_test")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func TestUpload(t *testing.T) {
	t.Parallel()
	content := strings.Repeat("0123456789", 100_000) // a megabyte: streamed, in many writes
	c := newClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/uploads" {
			t.Errorf("%s %s, want POST /uploads", r.Method, r.URL.Path)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer mj_test" {
			t.Errorf("Authorization = %q", got)
		}
		mr, err := r.MultipartReader()
		if err != nil {
			t.Errorf("not multipart: %v", err)
			return
		}
		var parts []string
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Errorf("next part: %v", err)
				return
			}
			b, _ := io.ReadAll(p)
			parts = append(parts, fmt.Sprintf("%s %s %s %d", p.FormName(), p.FileName(), p.Header.Get("Content-Type"), len(b)))
			if string(b) != content {
				t.Errorf("part %s holds %d bytes, not the file", p.FormName(), len(b))
			}
		}
		if diff := cmp.Diff([]string{"file clip.mp4 video/mp4 1000000"}, parts); diff != "" {
			t.Errorf("parts (-want +got):\n%s", diff)
		}
		writeJSON(w, http.StatusCreated, map[string]any{"data": client.Upload{ID: "ast_1", URL: "http://x/assets/ast_1/content", Name: "clip.mp4", ContentType: "video/mp4", Size: int64(len(content))}})
	}))

	path := filepath.Join(t.TempDir(), "clip.mp4")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	up, err := c.UploadFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if up.ID != "ast_1" || up.URL != "http://x/assets/ast_1/content" {
		t.Errorf("UploadFile = %+v", up)
	}
}

func TestUploadErrors(t *testing.T) {
	t.Parallel()
	c := newClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Answer before reading the body, as the service does past its size cap.
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"error": map[string]string{"code": "PAYLOAD_TOO_LARGE", "message": "upload exceeds the 10 byte limit"}})
	}))
	tests := []struct {
		name     string
		file     string
		wantCode client.Code
		wantMsg  string
	}{
		{name: "refused by the server", file: "a.wav", wantCode: client.CodePAYLOADTOOLARGE, wantMsg: "10 byte limit"},
		{name: "not a plain name", file: "dir/a.wav", wantMsg: `"dir/a.wav" is not a plain file name`},
		{name: "empty name", file: "", wantMsg: "is not a plain file name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// An endless body: the upload must stop when the server has answered.
			_, err := c.Upload(context.Background(), tt.file, endless{})
			if err == nil || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("Upload error = %v, want one saying %q", err, tt.wantMsg)
			}
			var apiErr *client.APIError
			if tt.wantCode != "" && (!errors.As(err, &apiErr) || apiErr.Code != tt.wantCode) {
				t.Fatalf("Upload error = %#v, want an APIError %s", err, tt.wantCode)
			}
		})
	}
}

type endless struct{}

func (endless) Read(p []byte) (int, error) { return len(p), nil }

func TestDownload(t *testing.T) {
	t.Parallel()
	c := newClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			t.Errorf("the API key went with a signed URL")
		}
		switch r.URL.Path {
		case "/v/job_1/tok/seg_001.ts":
			_, _ = io.WriteString(w, "segment bytes")
		default:
			writeJSON(w, http.StatusForbidden, map[string]any{"error": map[string]string{"code": "FORBIDDEN", "message": "the URL has expired"}})
		}
	}))
	base := strings.TrimSuffix(c.ClientInterface.(*client.Client).Server, "/")
	dir := filepath.Join(t.TempDir(), "out")

	got, err := c.Download(context.Background(), client.File{Path: "seg_001.ts", URL: base + "/v/job_1/tok/seg_001.ts"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(got); err != nil || string(b) != "segment bytes" || got != filepath.Join(dir, "seg_001.ts") {
		t.Errorf("Download wrote %s = %q, %v", got, b, err)
	}

	tests := []struct {
		name, path, url, want string
	}{
		{name: "expired", path: "x.mp4", url: base + "/dl/job_1?token=old", want: "FORBIDDEN: the URL has expired"},
		{name: "escapes the directory", path: "../x.mp4", url: base + "/dl/job_1", want: `output path "../x.mp4" is not a local file name`},
		{name: "absolute path", path: "/etc/x", url: base + "/dl/job_1", want: "is not a local file name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Download(context.Background(), client.File{Path: tt.path, URL: tt.url}, dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Download error = %v, want %q", err, tt.want)
			}
		})
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the failed downloads left files: %v", entries)
	}
}

func TestFFmpegJobRequest(t *testing.T) {
	t.Parallel()
	req, err := client.FFmpegJob{
		Command: "ffmpeg -i in.mp4 out.mp4",
		Inputs:  map[string]any{"in.mp4": "https://example.com/a.mp4", "subs.srt": map[string]string{"content": "1\n"}},
		Timeout: 60, Compute: "cpu", Split: "auto",
	}.Request()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	_ = json.Unmarshal(b, &got)
	_ = json.Unmarshal([]byte(`{"type":"ffmpeg",
		"inputs":{"in.mp4":"https://example.com/a.mp4","subs.srt":{"content":"1\n"}},
		"params":{"command":"ffmpeg -i in.mp4 out.mp4","timeout":60,"compute":"cpu","split":"auto"}}`), &want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request JSON (-want +got):\n%s", diff)
	}
}

func TestVerifyWebhook(t *testing.T) {
	t.Parallel()
	body := []byte(`{"event":"job.completed","jobId":"job_1"}`)
	now := time.Now()
	headers := func(ts int64, sig, prev string) http.Header {
		h := http.Header{}
		h.Set("X-Service-Timestamp", strconv.FormatInt(ts, 10))
		if sig != "" {
			h.Set("X-Service-Signature", sig)
		}
		if prev != "" {
			h.Set("X-Service-Signature-Previous", prev)
		}
		return h
	}
	ts := now.Unix()
	tests := []struct {
		name    string
		h       http.Header
		body    []byte
		secrets []string
		want    error
	}{
		{name: "current secret", h: headers(ts, webhook.Sign("whsec_new", ts, body), ""), body: body, secrets: []string{"whsec_new"}},
		{name: "previous secret during a rotation", h: headers(ts, webhook.Sign("whsec_new", ts, body), webhook.Sign("whsec_old", ts, body)), body: body, secrets: []string{"whsec_old"}},
		{name: "wrong secret", h: headers(ts, webhook.Sign("whsec_other", ts, body), ""), body: body, secrets: []string{"whsec_new"}, want: client.ErrSignatureMismatch},
		{name: "body changed", h: headers(ts, webhook.Sign("whsec_new", ts, body), ""), body: append([]byte(" "), body...), secrets: []string{"whsec_new"}, want: client.ErrSignatureMismatch},
		{name: "timestamp changed", h: headers(ts+1, webhook.Sign("whsec_new", ts, body), ""), body: body, secrets: []string{"whsec_new"}, want: client.ErrSignatureMismatch},
		{name: "too old", h: headers(ts-600, webhook.Sign("whsec_new", ts-600, body), ""), body: body, secrets: []string{"whsec_new"}, want: client.ErrSignatureTimestamp},
		{name: "no signature", h: headers(ts, "", ""), body: body, secrets: []string{"whsec_new"}, want: client.ErrNoSignature},
		{name: "no sha256= prefix", h: headers(ts, strings.TrimPrefix(webhook.Sign("whsec_new", ts, body), "sha256="), ""), body: body, secrets: []string{"whsec_new"}, want: client.ErrSignatureMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := client.VerifyWebhook(tt.h, tt.body, tt.secrets...); !errors.Is(err, tt.want) {
				t.Fatalf("VerifyWebhook = %v, want %v", err, tt.want)
			}
		})
	}

	// A saved delivery verifies later with the clock set to when it came.
	old := ts - 86400
	v := client.WebhookVerifier{Secrets: []string{"whsec_new"}, Now: func() time.Time { return time.Unix(old, 0) }}
	if err := v.Verify(headers(old, webhook.Sign("whsec_new", old, body), ""), body); err != nil {
		t.Fatalf("a day-old delivery checked at its own time: %v", err)
	}
}
