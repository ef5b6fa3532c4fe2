package job_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
)

type fakeSigner struct{}

func (fakeSigner) SignFile(jobID string, p job.Pattern, file string, exp time.Time) string {
	if p == job.PatternSingle {
		return fmt.Sprintf("https://x/dl/%s?token=t%d", jobID, exp.Unix())
	}
	return fmt.Sprintf("https://x/v/%s/t%d/%s", jobID, exp.Unix(), file)
}

func files(names ...string) []job.File {
	out := make([]job.File, len(names))
	for i, n := range names {
		out[i] = job.File{Path: n, Size: int64(i + 1)}
	}
	return out
}

func TestNewOutputPatterns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		files     []job.File
		data      string
		want      job.Pattern // the pattern the command asks for; "" lets the files decide
		pattern   job.Pattern
		headline  string // "" for a null file
		headType  job.FileType
		wantFiles int
	}{
		{"single mp4", files("out.mp4"), "", "", job.PatternSingle, "out.mp4", job.FileVideo, 1},
		{"single audio", files("out.mp3"), "", "", job.PatternSingle, "out.mp3", job.FileAudio, 1},
		{"hls stream", files("seg_000.ts", "index.m3u8", "seg_001.ts"), "", "", job.PatternStream, "index.m3u8", job.FilePlaylist, 3},
		{"hls master and variants", files("v0/x.ts", "master.m3u8", "stream_0.m3u8", "stream_1.m3u8"), "", "", job.PatternStream, "master.m3u8", job.FilePlaylist, 4},
		{"dash stream", files("manifest.mpd", "init-0.m4s", "chunk-0-00001.m4s"), "", "", job.PatternStream, "manifest.mpd", job.FilePlaylist, 3},
		{"image sequence set", files("frame_001.png", "frame_002.png", "frame_003.png"), "", "", job.PatternSet, "", "", 3},
		{"segment muxer set", files("seg_000.mp4", "seg_001.mp4"), "", "", job.PatternSet, "", "", 2},
		{"data only", nil, `{"durationMs":1000}`, "", job.PatternData, "", "", 0},
		{"an image sequence of one image is a set", files("frame_001.png"), "", job.PatternSet, job.PatternSet, "", "", 1},
		{"a segment command of one segment is a set", files("seg_000.mp4"), "", job.PatternSet, job.PatternSet, "", "", 1},
		{"a set command's playlist heads nothing", files("seg_000.ts", "list.m3u8"), "", job.PatternSet, job.PatternSet, "", "", 2},
		{"single asked, single written", files("out.mp4"), "", job.PatternSingle, job.PatternSingle, "out.mp4", job.FileVideo, 1},
		{"stream asked, stream written", files("index.m3u8", "seg_000.ts"), "", job.PatternStream, job.PatternStream, "index.m3u8", job.FilePlaylist, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var data json.RawMessage
			if tc.data != "" {
				data = json.RawMessage(tc.data)
			}
			out, err := job.NewOutput(tc.files, data, tc.want)
			if err != nil {
				t.Fatalf("NewOutput: %v", err)
			}
			if out.Pattern() != tc.pattern {
				t.Fatalf("pattern %s, want %s", out.Pattern(), tc.pattern)
			}
			if len(out.Files) != tc.wantFiles {
				t.Fatalf("%d files, want %d", len(out.Files), tc.wantFiles)
			}
			if tc.headline == "" {
				if out.File != nil {
					t.Fatalf("file = %q, want null", out.File.Path)
				}
			} else if out.File == nil || out.File.Path != tc.headline || out.File.Type != tc.headType {
				t.Fatalf("file = %+v, want %s typed %s", out.File, tc.headline, tc.headType)
			}
			if tc.pattern != job.PatternData && out.Data != nil {
				t.Fatalf("a job that writes files has data %s", out.Data)
			}
			now := time.Unix(1_700_000_000, 0)
			signed := out.Sign("job_1", fakeSigner{}, now.Add(time.Hour))
			if err := signed.Check(now); err != nil {
				t.Fatalf("signed output breaks an invariant: %v", err)
			}
			raw, _ := json.Marshal(signed)
			for _, key := range []string{`"data":`, `"file":`, `"files":`, `"expiresAt":`} {
				if !strings.Contains(string(raw), key) {
					t.Fatalf("JSON %s lacks %s", raw, key)
				}
			}
			if tc.pattern == job.PatternData && !strings.Contains(string(raw), `"files":[],"expiresAt":null`) {
				t.Fatalf("data-only JSON %s: want files [] and expiresAt null", raw)
			}
		})
	}
}

func TestNewOutputRejects(t *testing.T) {
	t.Parallel()
	if _, err := job.NewOutput(nil, nil, ""); !errors.Is(err, job.ErrEmptyOutput) {
		t.Errorf("no files, no data: %v", err)
	}
	if _, err := job.NewOutput(nil, json.RawMessage("null"), ""); !errors.Is(err, job.ErrEmptyOutput) {
		t.Errorf("no files, null data: %v", err)
	}
	if _, err := job.NewOutput(files("a.mp4", "a.mp4"), nil, ""); err == nil {
		t.Error("duplicate paths accepted")
	}
	if _, err := job.NewOutput([]job.File{{Path: ""}}, nil, ""); err == nil {
		t.Error("empty path accepted")
	}
}

// One test per invariant of the spec: Check catches each broken one.
func TestOutputInvariants(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	valid := func() job.Output {
		o, _ := job.NewOutput(files("index.m3u8", "seg_0.ts"), nil, "")
		return o.Sign("job_1", fakeSigner{}, now.Add(time.Hour))
	}
	tests := []struct {
		name   string
		break_ func(*job.Output)
		want   string
	}{
		{"1 file is one of files", func(o *job.Output) { f := job.File{Path: "other.mp4"}; o.File = &f }, "not among"},
		{"2 expiresAt set with files", func(o *job.Output) { o.ExpiresAt = nil }, "expiresAt"},
		{"3 complete has data or files", func(o *job.Output) { *o = job.Output{Files: []job.File{}} }, "neither data nor files"},
		{"4 URLs are fresh", func(o *job.Output) { past := now.Add(-time.Second).UnixMilli(); o.ExpiresAt = &past }, "expired"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := valid()
			if err := o.Check(now); err != nil {
				t.Fatalf("valid output fails: %v", err)
			}
			tc.break_(&o)
			err := o.Check(now)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// Invariant 4 from the reader's side: signing again after expiry mints new URLs.
func TestSignMintsFreshURLs(t *testing.T) {
	t.Parallel()
	o, _ := job.NewOutput(files("out.mp4"), nil, "")
	t0 := time.Unix(1_700_000_000, 0)
	a := o.Sign("job_1", fakeSigner{}, t0.Add(time.Hour))
	b := o.Sign("job_1", fakeSigner{}, t0.Add(2*time.Hour))
	if a.File.URL == b.File.URL || *a.ExpiresAt == *b.ExpiresAt {
		t.Fatalf("URLs not refreshed: %s %s", a.File.URL, b.File.URL)
	}
	if err := b.Check(t0.Add(90 * time.Minute)); err != nil {
		t.Fatalf("fresh output after first expiry: %v", err)
	}
	if o.File.URL != "" {
		t.Fatal("Sign changed the stored output")
	}
	if !strings.Contains(a.File.URL, "/dl/job_1?token=") {
		t.Fatalf("single file URL form: %s", a.File.URL)
	}
	s, _ := job.NewOutput(files("a.png", "b.png"), nil, "")
	if u := s.Sign("job_1", fakeSigner{}, t0).Files[1].URL; !strings.HasSuffix(u, "/b.png") || !strings.Contains(u, "/v/job_1/") {
		t.Fatalf("set member URL form: %s", u)
	}
}

func TestTypeOf(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]job.FileType{
		"a.MP4": job.FileVideo, "x.webm": job.FileVideo, "p.png": job.FileImage, "t.jpg": job.FileImage,
		"s.mp3": job.FileAudio, "c.srt": job.FileCaptions, "c.vtt": job.FileCaptions, "i.m3u8": job.FilePlaylist,
		"m.mpd": job.FilePlaylist, "d.json": job.FileData, "weird.bin": job.FileOther, "noext": job.FileOther,
	} {
		if got := job.TypeOf(name); got != want {
			t.Errorf("TypeOf(%q) = %s, want %s", name, got, want)
		}
	}
}

func TestTailKeepsLast2KBOnUTF8Boundary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		input string
	}{
		{"short", "ffmpeg: error\n"},
		{"exactly the limit", strings.Repeat("a", job.DetailLimit)},
		{"ascii over", strings.Repeat("x", 5000) + "END"},
		{"two-byte cut", strings.Repeat("é", 3000)},
		{"three-byte cut", "a" + strings.Repeat("€", 2000)},
		{"four-byte cut", "ab" + strings.Repeat("🎬", 1000)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := job.NewError(problem.CodeRunnerError, "ffmpeg exited with status 1", []byte(tc.input))
			got := *e.Detail
			if len(got) > job.DetailLimit || !utf8.ValidString(got) || !strings.HasSuffix(tc.input, got) {
				t.Fatalf("tail of %d bytes is %d bytes, valid=%v", len(tc.input), len(got), utf8.ValidString(got))
			}
			if len(tc.input) <= job.DetailLimit && got != tc.input {
				t.Fatal("short stderr was cut")
			}
			if len(tc.input) > job.DetailLimit && len(got) < job.DetailLimit-3 {
				t.Fatalf("tail lost more than a character: %d bytes", len(got))
			}
		})
	}
	if e := job.NewError(problem.CodeRunnerTimeout, "timed out", nil); e.Detail != nil {
		t.Fatal("detail without stderr")
	}
}

func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	j := jobIn(t, job.StatusWaiting)
	at, id, err := job.DecodeCursor(job.EncodeCursor(j))
	if err != nil || !at.Equal(j.CreatedAt) || id != j.ID {
		t.Fatalf("round trip: %v %v %v", at, id, err)
	}
	for _, bad := range []string{"", "!!", "bm90LWEtY3Vyc29y", "MTIzfHg"} {
		if _, _, err := job.DecodeCursor(bad); problem.CodeOf(err) != problem.CodeValidation {
			t.Errorf("DecodeCursor(%q): %v", bad, err)
		}
	}
}

func TestCloneIsDeep(t *testing.T) {
	t.Parallel()
	j := jobIn(t, job.StatusComplete)
	c := j.Clone()
	if d := cmp.Diff(j, c); d != "" {
		t.Fatalf("clone differs: %s", d)
	}
	c.Output.Files[0].Path = "changed"
	c.Params = append(c.Params, 'x')
	if j.Output.Files[0].Path == "changed" {
		t.Fatal("clone shares output files")
	}
	if c.Output.File.Path != "changed" {
		t.Fatal("clone's headline does not point into its own files")
	}
}
