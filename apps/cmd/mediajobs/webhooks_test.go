package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/webhook"
)

// TestWebhooksVerify is not parallel: some cases set MEDIAJOBS_WEBHOOK_SECRET.
func TestWebhooksVerify(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	body := `{"event":"job.completed","jobId":"job_1","cost":{"amount":1}}` + "\n"
	now := time.Now().Unix()
	old := now - 86400
	sig := webhook.Sign("whsec_new", now, []byte(body))
	oldSig := webhook.Sign("whsec_new", old, []byte(body))
	prevSig := webhook.Sign("whsec_old", now, []byte(body))
	lines := func(ts int64, sig string, extra ...string) string {
		return strings.Join(append([]string{
			"X-Service-Event: job.completed", "X-Service-Delivery: del_1",
			"X-Service-Timestamp: " + strconv.FormatInt(ts, 10), "X-Service-Signature: " + sig,
		}, extra...), "\r\n") + "\r\n"
	}
	bodyFile := write("body.json", body)
	headersJSON, _ := json.Marshal(map[string]any{
		"X-Service-Timestamp": strconv.FormatInt(now, 10), "X-Service-Signature": []string{sig},
		"X-Service-Event": "job.completed",
	})
	request := "POST /hooks HTTP/1.1\r\nHost: receiver.example\r\nContent-Type: application/json\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n" + lines(now, sig) + "\r\n" + body

	tests := []struct {
		name     string
		args     []string
		env      string // MEDIAJOBS_WEBHOOK_SECRET
		wantCode int
		want     string
	}{
		{name: "raw request", args: []string{"--secret", "whsec_new", "--request", write("req.http", request)}, wantCode: 0, want: "valid: job.completed del_1"},
		{name: "headers lines and body", args: []string{"--secret", "whsec_new", "--headers", write("h.txt", lines(now, sig)), "--body", bodyFile}, wantCode: 0, want: "valid:"},
		{name: "headers lines after a request line", args: []string{"--secret", "whsec_new", "--headers", write("h2.txt", "POST /hooks HTTP/1.1\n"+lines(now, sig)), "--body", bodyFile}, wantCode: 0, want: "valid:"},
		{name: "headers JSON", args: []string{"--secret", "whsec_new", "--headers", write("h.json", string(headersJSON)), "--body", bodyFile}, wantCode: 0, want: "valid:"},
		{name: "header flags", args: []string{"--secret", "whsec_new", "--body", bodyFile, "--header", "X-Service-Timestamp: " + strconv.FormatInt(now, 10), "--header", "X-Service-Signature: " + sig}, wantCode: 0, want: "valid:"},
		{name: "secret from the environment", env: "whsec_new", args: []string{"--request", write("req2.http", request)}, wantCode: 0, want: "valid:"},
		{name: "previous secret during a rotation", args: []string{"--secret", "whsec_old", "--headers", write("h3.txt", lines(now, sig, "X-Service-Signature-Previous: "+prevSig)), "--body", bodyFile}, wantCode: 0, want: "valid:"},
		{name: "wrong secret", args: []string{"--secret", "whsec_other", "--request", write("req3.http", request)}, wantCode: 1, want: "invalid: no signature matches"},
		{name: "body changed", args: []string{"--secret", "whsec_new", "--headers", write("h4.txt", lines(now, sig)), "--body", write("b2.json", strings.TrimSpace(body))}, wantCode: 1, want: "invalid: no signature matches"},
		{name: "old delivery", args: []string{"--secret", "whsec_new", "--headers", write("h5.txt", lines(old, oldSig)), "--body", bodyFile}, wantCode: 1, want: "too far from now"},
		{name: "old delivery, age not checked", args: []string{"--secret", "whsec_new", "--tolerance", "0", "--headers", write("h6.txt", lines(old, oldSig)), "--body", bodyFile}, wantCode: 0, want: "valid:"},
		{name: "no signature header", args: []string{"--secret", "whsec_new", "--body", bodyFile, "--header", "X-Service-Timestamp: 1"}, wantCode: 1, want: "no X-Service-Signature header"},
		{name: "no secret", args: []string{"--request", write("req4.http", request)}, wantCode: 2, want: "no secret"},
		{name: "no delivery", args: []string{"--secret", "whsec_new"}, wantCode: 2, want: "give the delivery"},
		{name: "request and body", args: []string{"--secret", "whsec_new", "--request", bodyFile, "--body", bodyFile}, wantCode: 2, want: "give it alone"},
		{name: "not a request", args: []string{"--secret", "whsec_new", "--request", bodyFile}, wantCode: 2, want: "not an HTTP request"},
		{name: "bad headers JSON", args: []string{"--secret", "whsec_new", "--headers", write("h7.json", `{"X-Service-Timestamp": 5}`), "--body", bodyFile}, wantCode: 2, want: `header "X-Service-Timestamp": want a string`},
		{name: "bad header flag", args: []string{"--secret", "whsec_new", "--body", bodyFile, "--header", "nocolon"}, wantCode: 2, want: "want 'Name: value'"},
		{name: "missing file", args: []string{"--secret", "whsec_new", "--body", filepath.Join(dir, "nope")}, wantCode: 2, want: "--body:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("MEDIAJOBS_WEBHOOK_SECRET", tt.env)
			var stdout, stderr bytes.Buffer
			code := runWebhooks(context.Background(), append([]string{"verify"}, tt.args...), &stdout, &stderr)
			out := stdout.String() + stderr.String()
			if code != tt.wantCode || !strings.Contains(out, tt.want) {
				t.Fatalf("exit %d, output %q; want %d and %q", code, out, tt.wantCode, tt.want)
			}
		})
	}
}

// FuzzParseHeaders: a saved headers file is whatever the user saved. Parsing never panics, and
// no header value it returns spans lines.
func FuzzParseHeaders(f *testing.F) {
	f.Add([]byte("X-Service-Timestamp: 1\r\nX-Service-Signature: sha256=00\r\n"))
	f.Add([]byte("POST /hooks HTTP/1.1\nHost: x\n\nbody"))
	f.Add([]byte(`{"X-Service-Signature": ["a", "b"], "X-Service-Timestamp": "1"}`))
	f.Add([]byte(`{"a": {}}`))
	f.Add([]byte(": no name\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		h, err := parseHeaders(raw)
		if err != nil {
			return
		}
		if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
			return // JSON strings may hold anything; they are compared, never sent
		}
		for k, vs := range h {
			for _, v := range vs {
				if strings.ContainsAny(v, "\r\n") {
					t.Fatalf("header %s: value %q spans lines", k, v)
				}
			}
		}
	})
}
