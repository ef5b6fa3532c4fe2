package ffmpegjob_test

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/problem"
)

const prefix = "https://api.test/assets/"

func TestPrepare(t *testing.T) {
	t.Parallel()
	tests := []prepareCase{
		{name: "lavfi to mp4", params: `{"command":"ffmpeg -f lavfi -i testsrc=d=1 out.mp4"}`,
			want: jobtype.Spec{Class: job.ClassCPU, Timeout: 120 * time.Second, Pattern: job.PatternSingle}},
		{name: "timeout and url shorthand", inputs: `{"in.mp4":"https://example.com/a.mp4"}`,
			params: `{"command":"ffmpeg -i in.mp4 -c:v libx264 out.mp4","timeout":30}`,
			want:   jobtype.Spec{Class: job.ClassCPU, Timeout: 30 * time.Second, Pattern: job.PatternSingle}},
		{name: "inline content", inputs: `{"subs.srt":{"content":"1\n00:00:00,000 --> 00:00:01,000\nhi\n"}}`,
			params: `{"command":"ffmpeg -f lavfi -i testsrc=d=1 -vf subtitles=subs.srt out.mp4"}`,
			want:   jobtype.Spec{Class: job.ClassCPU, Timeout: 120 * time.Second, Pattern: job.PatternSingle}},
		{name: "inputs inside params", params: `{"command":"ffmpeg -i a.mp4 out.mp4","inputs":{"a.mp4":{"url":"https://example.com/a.mp4"}}}`,
			want: jobtype.Spec{Class: job.ClassCPU, Timeout: 120 * time.Second, Pattern: job.PatternSingle}},
		{name: "asset input", params: `{"command":"ffmpeg -i ` + prefix + `ast_abc/content out.mp4"}`,
			want: jobtype.Spec{Class: job.ClassCPU, Timeout: 120 * time.Second, Assets: []string{"ast_abc"}, Pattern: job.PatternSingle}},
		{name: "an image sequence asks for the set pattern", params: `{"command":"ffmpeg -f lavfi -i testsrc=d=1 -frames:v 1 img_%03d.png"}`,
			want: jobtype.Spec{Class: job.ClassCPU, Timeout: 120 * time.Second, Pattern: job.PatternSet}},
		{name: "a segment command asks for the set pattern", params: `{"command":"ffmpeg -f lavfi -i testsrc=d=1 -f segment -segment_time 10 seg_%03d.ts"}`,
			want: jobtype.Spec{Class: job.ClassCPU, Timeout: 120 * time.Second, Pattern: job.PatternSet}},
		{name: "hls asks for the stream pattern", params: `{"command":"ffmpeg -f lavfi -i testsrc=d=1 -f hls index.m3u8"}`,
			want: jobtype.Spec{Class: job.ClassCPU, Timeout: 120 * time.Second, Pattern: job.PatternStream}},
		{name: "nvenc routes to gpu", params: `{"command":"ffmpeg -f lavfi -i testsrc=d=1 -c:v h264_nvenc out.mp4"}`,
			want: jobtype.Spec{Class: job.ClassGPU, Timeout: 120 * time.Second, Pattern: job.PatternSingle}},
		{name: "nvenc with cpu", params: `{"command":"ffmpeg -f lavfi -i testsrc=d=1 -c:v h264_nvenc out.mp4","compute":"cpu"}`,
			wantErr: "h264_nvenc"},
		{name: "no params", wantErr: "params is required"},
		{name: "no command", params: `{"timeout":5}`, wantErr: "params.command is required"},
		{name: "blank command", params: `{"command":"  "}`, wantErr: "params.command is required"},
		{name: "unknown param", params: `{"command":"ffmpeg -i a out.mp4","fast":true}`, wantErr: `"params.fast"`},
		{name: "timeout wrong type", params: `{"command":"ffmpeg -f lavfi -i testsrc out.mp4","timeout":"60"}`, wantErr: "params.timeout must be an integer"},
		{name: "timeout fractional", params: `{"command":"ffmpeg -f lavfi -i testsrc out.mp4","timeout":1.5}`, wantErr: "params.timeout must be an integer"},
		{name: "timeout too big", params: `{"command":"ffmpeg -f lavfi -i testsrc out.mp4","timeout":901}`, wantErr: "params.timeout 901"},
		{name: "timeout zero", params: `{"command":"ffmpeg -f lavfi -i testsrc out.mp4","timeout":0}`, wantErr: "params.timeout 0"},
		{name: "inputs twice", inputs: `{"a.mp4":"https://x.test/a.mp4"}`, params: `{"command":"ffmpeg -i a.mp4 o.mp4","inputs":{}}`, wantErr: "both in the body and in params"},
		{name: "input url and content", inputs: `{"a.srt":{"url":"https://x.test/a","content":"x"}}`, params: `{"command":"ffmpeg -f lavfi -i testsrc o.mp4"}`, wantErr: "inputs.a.srt has both"},
		{name: "input empty object", inputs: `{"a.srt":{}}`, params: `{"command":"ffmpeg -f lavfi -i testsrc o.mp4"}`, wantErr: "inputs.a.srt needs url or content"},
		{name: "input unknown field", inputs: `{"a.srt":{"path":"/etc/passwd"}}`, params: `{"command":"ffmpeg -f lavfi -i testsrc o.mp4"}`, wantErr: `"inputs.a.srt.path"`},
		{name: "input number", inputs: `{"a.srt":5}`, params: `{"command":"ffmpeg -f lavfi -i testsrc o.mp4"}`, wantErr: "inputs.a.srt"},
		{name: "disallowed flag named", params: `{"command":"ffmpeg -f lavfi -i testsrc -filter_script x out.mp4"}`, wantErr: "-filter_script"},
		{name: "input not in inputs", params: `{"command":"ffmpeg -i in.mp4 -vf scale=640:-2 out.mp4"}`, wantErr: `the command reads input "in.mp4", which inputs does not provide`},
		{name: "subtitles not in inputs", inputs: `{"in.mp4":"https://example.com/a.mp4"}`,
			params: `{"command":"ffmpeg -i in.mp4 -vf subtitles=subs.srt out.mp4"}`, wantErr: `"subs.srt"`},
		{name: "image sequence staged", inputs: `{"img001.png":"https://example.com/1.png","img002.png":"https://example.com/2.png"}`,
			params: `{"command":"ffmpeg -framerate 1 -i img%03d.png -c:v libx264 out.mp4"}`,
			want:   jobtype.Spec{Class: job.ClassCPU, Timeout: 120 * time.Second, Pattern: job.PatternSingle}},
		{name: "image sequence not staged", params: `{"command":"ffmpeg -framerate 1 -i img%03d.png out.mp4"}`, wantErr: `"img%03d.png"`},
		{name: "endless input", inputs: `{"a.png":"https://example.com/a.png"}`, params: `{"command":"ffmpeg -loop 1 -i a.png out.mp4"}`, wantErr: "never ends"},
		{name: "host file input", params: `{"command":"ffmpeg -i /etc/passwd out.mp4"}`, wantErr: "/etc/passwd"},
		{name: "content over 64 KB", inputs: `{"a.srt":{"content":"` + strings.Repeat("x", 65537) + `"}}`,
			params: `{"command":"ffmpeg -f lavfi -i testsrc -vf subtitles=a.srt out.mp4"}`, wantErr: "a.srt"},
		{name: "inline playlist named .srt", inputs: `{"m.srt":{"content":"#EXTM3U\n#EXTINF:1,\n/etc/passwd\n"}}`,
			params: `{"command":"ffmpeg -i m.srt out.srt"}`, wantErr: `input "m.srt" holds an HLS playlist`},
		{name: "inline concat list named .vtt", inputs: `{"l.vtt":{"content":"ffconcat version 1.0\nfile a.mp4\n"}}`,
			params: `{"command":"ffmpeg -i l.vtt out.srt"}`, wantErr: `input "l.vtt" holds a concat list`},
		{name: "inline concat list naming a host file", inputs: `{"list.txt":{"content":"file '/etc/passwd'\n"}}`,
			params: `{"command":"ffmpeg -f concat -i list.txt -c copy out.mp4"}`, wantErr: "is an absolute path"},
		{name: "inline concat list of staged inputs", inputs: `{"list.txt":{"content":"file a.mp4\nfile b.mp4\n"},"a.mp4":"https://x.test/a.mp4","b.mp4":"https://x.test/b.mp4"}`,
			params: `{"command":"ffmpeg -f concat -i list.txt -c copy out.mp4"}`, want: jobtype.Spec{Class: job.ClassCPU, Timeout: 120 * time.Second, Pattern: job.PatternSingle}},
		{name: "loopback input", inputs: `{"in.mp4":"https://127.0.0.1:8443/a.mp4"}`, params: `{"command":"ffmpeg -i in.mp4 out.mp4"}`,
			wantErr: "non-public address 127.0.0.1 (loopback)"},
		{name: "loopback input the operator opened", inputs: `{"in.mp4":"https://127.0.0.1:8443/a.mp4"}`, params: `{"command":"ffmpeg -i in.mp4 out.mp4"}`,
			allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, want: jobtype.Spec{Class: job.ClassCPU, Timeout: 120 * time.Second, Pattern: job.PatternSingle}},
		{name: "private input outside the opened range", inputs: `{"in.mp4":"https://192.168.1.10/a.mp4"}`, params: `{"command":"ffmpeg -i in.mp4 out.mp4"}`,
			allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, wantErr: "192.168.1.10"},
		{name: "path-unsafe input name", inputs: `{"../a.srt":{"content":"x"}}`, params: `{"command":"ffmpeg -f lavfi -i testsrc out.mp4"}`, wantErr: "../a.srt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

// prepareCase is one request for Prepare and what it must answer: a spec, or a VALIDATION_ERROR
// whose message holds wantErr (and whose Field is wantField, when given).
type prepareCase struct {
	name, inputs, params string
	want                 jobtype.Spec
	wantErr, wantField   string
	// allow is the operator's Env.AllowPrivateNetworks.
	allow []netip.Prefix
}

func (tc prepareCase) run(t *testing.T) {
	t.Parallel()
	req := jobtype.Request{Type: ffmpegjob.Name}
	if tc.inputs != "" {
		req.Inputs = json.RawMessage(tc.inputs)
	}
	if tc.params != "" {
		req.Params = json.RawMessage(tc.params)
	}
	spec, err := ffmpegjob.Type{}.Prepare(req, jobtype.Env{AssetURLPrefix: prefix, AllowPrivateNetworks: tc.allow})
	if tc.wantErr != "" {
		p, ok := problem.As(err)
		if !ok || p.Code != problem.CodeValidation || !strings.Contains(p.Message, tc.wantErr) {
			t.Fatalf("got %v, want VALIDATION_ERROR containing %q", err, tc.wantErr)
		}
		if tc.wantField != "" && p.Field != tc.wantField {
			t.Errorf("field %q, want %q", p.Field, tc.wantField)
		}
		return
	}
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if d := cmp.Diff(tc.want, spec); d != "" {
		t.Fatalf("spec (-want +got):\n%s", d)
	}
}

func TestAssetID(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]string{
		prefix + "ast_1/content":                 "ast_1",
		prefix + "ast_1/content?x=1":             "",
		prefix + "ast_1/other":                   "",
		prefix + "/content":                      "",
		prefix + "a/b/content":                   "",
		"https://evil.test/assets/ast_1/content": "",
	} {
		got, ok := ffmpegjob.AssetID(url, prefix)
		if got != want || ok != (want != "") {
			t.Errorf("AssetID(%q) = %q %v, want %q", url, got, ok, want)
		}
	}
}
