package redact_test

import (
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/core/redact"
)

func TestText(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"no URL here", "no URL here"},
		{"https://cdn.example.com/a.mp4", "https://cdn.example.com/a.mp4"},
		{"input https://b.s3.amazonaws.com/k.mp4?X-Amz-Signature=abc123&X-Amz-Credential=AK could not be fetched: 403",
			"input https://b.s3.amazonaws.com/k.mp4?X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED could not be fetched: 403"},
		{"ffmpeg -i 'https://user:pw@h.example/x.mp4?token=s3cret' out.mp4", "ffmpeg -i 'https://h.example/x.mp4?token=REDACTED' out.mp4"},
		{"two: http://a/?k=1 and https://b/?t=2.", "two: http://a/?k=REDACTED and https://b/?t=REDACTED."},
		{"file:///etc/passwd?x=1", "file:///etc/passwd?x=1"},
	}
	for _, tt := range tests {
		got, changed := redact.Text(tt.in)
		if got != tt.want || changed != (tt.in != tt.want) {
			t.Errorf("Text(%q) = %q, %v; want %q", tt.in, got, changed, tt.want)
		}
	}
}

// FuzzText: a secret in a URL's query never survives, whatever text stands around the URL.
func FuzzText(f *testing.F) {
	f.Add("input ", "X-Amz-Signature", "abc123secret", " could not be fetched")
	f.Add("ffmpeg -i '", "token", "s3cretvalue", "' out.mp4")
	f.Add("", "k", "zzzzzz", "#frag")
	f.Fuzz(func(t *testing.T, prefix, key, secret, suffix string) {
		if len(secret) < 6 || !alnum(secret) || !alnum(key) || key == "" || strings.Contains(prefix+suffix, secret) {
			return
		}
		if prefix != "" && !strings.ContainsAny(prefix[len(prefix)-1:], " '\"\t\n<>") {
			prefix += " "
		}
		in := prefix + "https://h.example/p?" + key + "=" + secret + suffix
		if strings.Contains(prefix+"https://h.example/p?"+key+"=REDACTED"+suffix, secret) {
			return // the text kept around the value holds it too (a key equal to it)
		}
		if out, _ := redact.Text(in); strings.Contains(out, secret) {
			t.Fatalf("Text(%q) = %q keeps the secret", in, out)
		}
	})
}

func alnum(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
