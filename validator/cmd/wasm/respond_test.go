package main

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/validator"
)

// nativeJSON is the answer the module must give: the native Validate's, as JSON.
func nativeJSON(t *testing.T, command string, opts validator.Options) string {
	t.Helper()
	b, err := json.Marshal(validator.Validate(command, opts))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRespond(t *testing.T) {
	t.Parallel()
	native := func(command string, opts validator.Options) string { return nativeJSON(t, command, opts) }

	tests := []struct {
		name    string
		request string
		want    string // the response, when wantErr is empty
		wantErr string
	}{
		{
			name:    "bare command",
			request: `{"command":"ffmpeg -i in.mp4 out.mp4"}`,
			want:    native("ffmpeg -i in.mp4 out.mp4", validator.Options{}),
		},
		{
			name:    "with options",
			request: `{"command":"ffmpeg -i in.mp4 out.webm","options":{"inputs":{"in.mp4":{"url":"https://example.com/a.mp4"}},"compute":"cpu","timeout":60}}`,
			want: native("ffmpeg -i in.mp4 out.webm", validator.Options{
				Inputs:  map[string]validator.Input{"in.mp4": {URL: "https://example.com/a.mp4"}},
				Compute: "cpu",
				Timeout: 60,
			}),
		},
		{
			name:    "job-shaped inputs",
			request: `{"command":"ffmpeg -i in.mp4 -vf subtitles=s.srt out.mp4","inputs":{"in.mp4":"https://example.com/a.mp4","s.srt":{"content":"1"}}}`,
			want: native("ffmpeg -i in.mp4 -vf subtitles=s.srt out.mp4", validator.Options{Inputs: map[string]validator.Input{
				"in.mp4": {URL: "https://example.com/a.mp4"}, "s.srt": {Inline: true, ContentSize: 1}}}),
		},
		{
			name:    "allow list",
			request: `{"command":"ffmpeg -i https://127.0.0.1:8443/a.mp4 -i https://10.0.0.1/b.mp4 out.mp4","options":{"allowPrivateNetworks":["127.0.0.0/8"]}}`,
			want: native("ffmpeg -i https://127.0.0.1:8443/a.mp4 -i https://10.0.0.1/b.mp4 out.mp4", validator.Options{
				AllowPrivateNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}),
		},
		{name: "malformed allow list", request: `{"command":"ffmpeg","options":{"allowPrivateNetworks":["10/8"]}}`, wantErr: "decode request"},
		{
			name:    "required inputs",
			request: `{"command":"ffmpeg -i in.mp4 -vf subtitles=s.srt out.mp4"}`,
			want:    native("ffmpeg -i in.mp4 -vf subtitles=s.srt out.mp4", validator.Options{}),
		},
		{
			name:    "malformed inputs",
			request: `{"command":"ffmpeg -i in.mp4 out.mp4","inputs":{"in.mp4":5}}`,
			want:    `{"valid":false,"error":"inputs.in.mp4 must be a URL string, {url} or {content}"}`,
		},
		{
			name:    "empty command is validated, not refused",
			request: `{"command":""}`,
			want:    native("", validator.Options{}),
		},
		{name: "not JSON", request: `ffmpeg -i a b`, wantErr: "decode request"},
		{name: "command missing", request: `{"options":{}}`, wantErr: `"command" is missing`},
		{name: "null", request: `null`, wantErr: `"command" is missing`},
		{name: "command not a string", request: `{"command":1}`, wantErr: "decode request"},
		{name: "trailing data", request: `{"command":"ffmpeg"} {}`, wantErr: "data after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := respond([]byte(tt.request))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("respond(%s) error = %v, want it to contain %q", tt.request, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("respond(%s): %v", tt.request, err)
			}
			if string(got) != tt.want {
				t.Errorf("respond(%s)\n got %s\nwant %s", tt.request, got, tt.want)
			}
		})
	}
}

func TestCheckRequest(t *testing.T) {
	t.Parallel()
	native := func(command string, opts validator.Options) string { return nativeJSON(t, command, opts) }
	tests := []struct {
		name, command, rest string
		want, wantErr       string
	}{
		{name: "bare", command: "ffmpeg -i in.mp4 out.mp4", want: native("ffmpeg -i in.mp4 out.mp4", validator.Options{})},
		{name: "options", command: "ffmpeg -i in.mp4 out.webm", rest: `{"options":{"compute":"cpu","inputs":{"in.mp4":{"url":"https://example.com/a.mp4"}}}}`,
			want: native("ffmpeg -i in.mp4 out.webm", validator.Options{Compute: "cpu", Inputs: map[string]validator.Input{"in.mp4": {URL: "https://example.com/a.mp4"}}})},
		{name: "job inputs", command: "ffmpeg -i in.mp4 -vf subtitles=s.srt out.mp4", rest: `{"inputs":{"s.srt":{"content":"12"}}}`,
			want: native("ffmpeg -i in.mp4 -vf subtitles=s.srt out.mp4", validator.Options{Inputs: map[string]validator.Input{"s.srt": {Inline: true, ContentSize: 2}}})},
		{name: "invalid command", command: "ffmpeg -i /etc/passwd out.mp4", want: native("ffmpeg -i /etc/passwd out.mp4", validator.Options{})},
		{name: "not UTF-8", command: "ffmpeg -i \xff out.mp4", want: native("ffmpeg -i \xff out.mp4", validator.Options{})},
		{name: "bad inputs", command: "ffmpeg -i a.mp4 b.mp4", rest: `{"inputs":[]}`, want: `{"valid":false,"error":"inputs must be an object of names to a URL string, {url} or {content}"}`},
		{name: "compact options", command: "ffmpeg -i in.mp4 -vf subtitles=s.srt out.mkv", rest: string(validator.AppendOptions(nil, &validator.Options{Compute: "cpu", Inputs: map[string]validator.Input{"s.srt": {Inline: true, ContentSize: 3}}})),
			want: native("ffmpeg -i in.mp4 -vf subtitles=s.srt out.mkv", validator.Options{Compute: "cpu", Inputs: map[string]validator.Input{"s.srt": {Inline: true, ContentSize: 3}}})},
		{name: "bad compact options", command: "ffmpeg", rest: "\x01z", wantErr: "malformed compact options"},
		{name: "bad options", command: "ffmpeg", rest: `{"options":5}`, wantErr: "decode options"},
		{name: "trailing data", command: "ffmpeg", rest: `{} {}`, wantErr: "data after"},
	}
	for _, tt := range tests {
		// Not parallel: checkRequest answers from the module's one Checker, and the module runs
		// one call at a time.
		t.Run(tt.name, func(t *testing.T) {
			got, err := checkRequest([]byte("stale"), []byte(tt.command), []byte(tt.rest))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := "stale" + tt.want; string(got) != want {
				t.Errorf("checkRequest appended\n %s\nwant\n %s", got, want)
			}
		})
	}
}
