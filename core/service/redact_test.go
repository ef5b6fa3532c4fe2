package service

import (
	"encoding/json"
	"testing"
)

func TestRedactJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"no url", `{"a.srt":{"content":"1\n00:00"}}`, `{"a.srt":{"content":"1\n00:00"}}`},
		{"url without query kept byte for byte", `{ "in.mp4": "https://example.com/a.mp4" }`, `{ "in.mp4": "https://example.com/a.mp4" }`},
		{"presigned shorthand", `{"in.mp4":"https://bucket.s3.amazonaws.com/a.mp4?X-Amz-Signature=abc&X-Amz-Expires=300"}`,
			`{"in.mp4":"https://bucket.s3.amazonaws.com/a.mp4?X-Amz-Expires=REDACTED&X-Amz-Signature=REDACTED"}`},
		{"object form and user info", `{"in.mp4":{"url":"https://u:p@example.com/a.mp4?token=s3cret"}}`,
			`{"in.mp4":{"url":"https://example.com/a.mp4?token=REDACTED"}}`},
		{"caption source", `{"source":"https://cdn.example.com/v.mp4?sig=1","subtitles":"https://example.com/s.srt"}`,
			`{"source":"https://cdn.example.com/v.mp4?sig=REDACTED","subtitles":"https://example.com/s.srt"}`},
		{"command urls", `{"command":"ffmpeg -i 'https://x.example/a.mp4?token=t' -i https://y.example/b.mp4 out.mp4","timeout":30}`,
			`{"command":"ffmpeg -i 'https://x.example/a.mp4?token=REDACTED' -i https://y.example/b.mp4 out.mp4","timeout":30}`},
	}
	for _, tt := range tests {
		got := string(redactJSON(json.RawMessage(tt.in)))
		if got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
	}
}
