package runner_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/blobfs"
	"github.com/mediajobs/mediajobs/adapters/runner"
	"github.com/mediajobs/mediajobs/adapters/safehttp"
	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/adapters/transcribe"
	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/workqueue"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

const (
	frameW, frameH = 320, 240
	// speechText is spoken from 0 s; the clip lasts 4 s, so its end is silent.
	speechText = "hello world this is a test"
)

// media is the test's real media, made once: a flat grey 320x240 clip of 4 s with espeak-ng
// speech, served over TLS on loopback under the name example.com.
type media struct {
	dir    string
	srv    *httptest.Server
	client *http.Client
	err    error
}

var (
	mediaOnce sync.Once
	shared    media
)

func sharedMedia(t *testing.T) *media {
	t.Helper()
	if err := sandbox.Available(); err != nil {
		testenv.Missing(t, "the bubblewrap sandbox (scripts/deps.sh installs bubblewrap)", err)
	}
	if _, err := exec.LookPath("espeak-ng"); err != nil {
		testenv.Missing(t, "espeak-ng (scripts/deps.sh installs it)", err)
	}
	mediaOnce.Do(func() {
		dir, err := os.MkdirTemp("", "captions-media-")
		if err != nil {
			shared.err = err
			return
		}
		shared.dir = dir
		if out, err := exec.Command("espeak-ng", "-w", filepath.Join(dir, "speech.wav"), speechText).CombinedOutput(); err != nil {
			shared.err = &exec.ExitError{Stderr: out}
			return
		}
		cmd := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "color=c=0x808080:s=320x240:r=10:d=4",
			"-i", filepath.Join(dir, "speech.wav"), "-af", "apad", "-t", "4", "-c:v", "libx264", "-preset", "ultrafast",
			"-pix_fmt", "yuv420p", "-c:a", "aac", "-metadata:s:a:0", "language=eng", "-metadata", "title=caption test", filepath.Join(dir, "source.mp4"))
		if out, err := cmd.CombinedOutput(); err != nil {
			shared.err = &exec.ExitError{Stderr: out}
			return
		}
		shared.srv = httptest.NewTLSServer(http.FileServer(http.Dir(dir)))
		pool := x509.NewCertPool()
		pool.AddCert(shared.srv.Certificate())
		addr := netip.MustParseAddrPort(shared.srv.Listener.Addr().String())
		shared.client = safehttp.NewClient(safehttp.Config{RootCAs: pool, AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
			LookupIP: func(context.Context, string) ([]netip.Addr, error) { return []netip.Addr{addr.Addr()}, nil }})
	})
	if shared.err != nil {
		t.Fatalf("making test media: %v", shared.err)
	}
	return &shared
}

// url serves content under name and returns its https URL.
func (m *media) url(t *testing.T, name string, content []byte) string {
	t.Helper()
	if content != nil {
		if err := os.WriteFile(filepath.Join(m.dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, port, _ := strings.Cut(m.srv.Listener.Addr().String(), ":")
	return "https://example.com:" + port + "/" + name
}

type captionBundle struct {
	*media
	ff    *runner.FFmpeg
	blobs *blobfs.Store
	root  string
}

func captionSetup(t *testing.T) captionBundle {
	t.Helper()
	m := sharedMedia(t)
	ff, blobs, root := newExecutor(t, m.client, 32<<20)
	return captionBundle{media: m, ff: ff, blobs: blobs, root: root}
}

// run executes a job of type typ and returns its result and, when it wrote one, the output's path.
func (b captionBundle) run(t *testing.T, exec runner.Executor, typ string, inputs map[string]string, params map[string]any) (workqueue.Result, string) {
	t.Helper()
	in, _ := json.Marshal(inputs)
	p, _ := json.Marshal(params)
	a := workqueue.Assignment{Lease: workqueue.Lease{JobID: job.NewID("job"), Attempt: 1}, AccountID: "acc_1", Type: typ, Inputs: in, Params: p,
		Timeout: 60 * time.Second, AssetURLPrefix: "https://api.test/assets/"}
	work, err := os.MkdirTemp(b.root, "work-")
	if err != nil {
		t.Fatal(err)
	}
	res := exec.Execute(context.Background(), a, work, runner.Hooks{Progress: func(float64) {}, Executing: func() {}})
	if len(res.Files) != 1 {
		return res, ""
	}
	blob, err := b.blobs.Open(context.Background(), blob.OutputKey("acc_1", a.Lease.JobID, res.Files[0].Path))
	if err != nil {
		t.Fatal(err)
	}
	defer blob.Close()
	out := filepath.Join(t.TempDir(), res.Files[0].Path)
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(blob); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return res, out
}

// frame grabs the frame at second at as raw pixels (gray: one byte each; rgb24: three).
func frame(t *testing.T, path string, at float64, pixFmt string) []byte {
	t.Helper()
	out, err := exec.Command("ffmpeg", "-v", "error", "-ss", strconv.FormatFloat(at, 'f', 3, 64), "-i", path,
		"-frames:v", "1", "-f", "rawvideo", "-pix_fmt", pixFmt, "-").Output()
	if err != nil {
		t.Fatalf("grab frame of %s at %v: %v", path, at, err)
	}
	return out
}

// bands counts, per third of the frame (top, middle, bottom), the pixels that differ by more
// than 48 grey levels.
func bands(a, b []byte) [3]int {
	var n [3]int
	for i := range min(len(a), len(b)) {
		d := int(a[i]) - int(b[i])
		if d > 48 || d < -48 {
			n[min(2, i/frameW/(frameH/3))]++
		}
	}
	return n
}

// onlyBand fails unless the pixels that changed all lie in band want.
func onlyBand(t *testing.T, diff [3]int, want int) {
	t.Helper()
	for i, n := range diff {
		if i == want && n < 30 {
			t.Errorf("band %d: only %d pixels changed; the caption is missing (%v)", i, n, diff)
		}
		if i != want && n > 0 {
			t.Errorf("band %d: %d pixels changed outside the caption's band (%v)", i, n, diff)
		}
	}
}

const srt = "1\n00:00:00,500 --> 00:00:03,000\nHELLO WORLD\n"

func TestCaptionBurnPositions(t *testing.T) {
	t.Parallel()
	b := captionSetup(t)
	exec := &runner.Captions{FFmpeg: b.ff}
	plain := frame(t, filepath.Join(b.dir, "source.mp4"), 1, "gray")
	tests := []struct {
		name, file, content, position string
		band                          int
	}{
		{"srt top", "top.srt", srt, "top", 0},
		{"vtt center", "center.vtt", "WEBVTT\n\n00:00.500 --> 00:03.000 align:start\n<b>HELLO</b> <c.x>WORLD</c>\n", "center", 1},
		{"srt bottom with CRLF and BOM", "bottom.srt", "\ufeff" + strings.ReplaceAll(srt, "\n", "\r\n"), "bottom", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, out := b.run(t, exec, "caption.burn", map[string]string{"source": b.url(t, "source.mp4", nil),
				"subtitles": b.url(t, tc.file, []byte(tc.content))}, map[string]any{"position": tc.position, "fontSize": 32, "marginV": 10})
			if failed(res) != nil {
				t.Fatalf("job failed: %+v %s", failed(res), deref(failed(res).Detail))
			}
			f := res.Files[0]
			if f.Path != runner.CaptionOutput || f.Type != job.FileVideo || f.Meta == nil || f.Meta.Width != frameW || f.Meta.Height != frameH || res.ComputeMs <= 0 {
				t.Fatalf("output: %+v meta %+v", f, f.Meta)
			}
			onlyBand(t, bands(plain, frame(t, out, 1, "gray")), tc.band)
			// After the cue the frame is the plain one again.
			onlyBand(t, bands(plain, frame(t, out, 3.5, "gray")), -1)
		})
	}
}

func TestCaptionBurnASSAsIs(t *testing.T) {
	t.Parallel()
	b := captionSetup(t)
	// Its own style (top, \an8) and an override reaching for a font file by path: libass only
	// asks fontconfig, which knows the system's fonts, so the line renders in a fallback font.
	ass := "[Script Info]\nScriptType: v4.00+\nPlayResX: 320\nPlayResY: 240\n\n[V4+ Styles]\n" +
		"Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding\n" +
		"Style: Default,DejaVu Sans,28,&H00FFFFFF,&H000000FF,&H00000000,&H00000000,0,0,0,0,100,100,0,0,1,2,0,8,10,10,10,1\n\n" +
		"[Events]\nFormat: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\n" +
		"Dialogue: 0,0:00:00.50,0:00:03.00,Default,,0,0,0,,{\\fn/etc/passwd}HELLO {\\fn/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf}ASS\n"
	res, out := b.run(t, &runner.Captions{FFmpeg: b.ff}, "caption.burn", map[string]string{"source": b.url(t, "source.mp4", nil),
		"subtitles": b.url(t, "own.ass", []byte(ass))}, nil)
	if failed(res) != nil {
		t.Fatalf("job failed: %+v %s", failed(res), deref(failed(res).Detail))
	}
	onlyBand(t, bands(frame(t, filepath.Join(b.dir, "source.mp4"), 1, "gray"), frame(t, out, 1, "gray")), 0)
}

func TestCaptionBurnBoxAndColours(t *testing.T) {
	t.Parallel()
	b := captionSetup(t)
	res, out := b.run(t, &runner.Captions{FFmpeg: b.ff}, "caption.burn", map[string]string{"source": b.url(t, "source.mp4", nil),
		"subtitles": b.url(t, "box.srt", []byte("1\n00:00:00,500 --> 00:00:03,000\nMMMM MMMM\n"))},
		map[string]any{"fontColor": "#FF0000", "boxEnabled": true, "boxColor": "#0000FF", "boxOpacity": 1, "outlineWidth": 6,
			"shadow": 0, "fontSize": 40, "marginV": 20})
	if failed(res) != nil {
		t.Fatalf("job failed: %+v %s", failed(res), deref(failed(res).Detail))
	}
	px := frame(t, out, 1, "rgb24")
	var red, blue, other int
	for y := frameH * 2 / 3; y < frameH; y++ {
		for x := range frameW {
			r, g, bl := int(px[(y*frameW+x)*3]), int(px[(y*frameW+x)*3+1]), int(px[(y*frameW+x)*3+2])
			switch {
			case r > 180 && g < 80 && bl < 80:
				red++
			case bl > 180 && r < 80 && g < 80:
				blue++
			case (r-128)*(r-128)+(g-128)*(g-128)+(bl-128)*(bl-128) > 40*40:
				other++
			}
		}
	}
	if red < 200 || blue < 1000 {
		t.Fatalf("bottom band: %d red text pixels, %d blue box pixels, %d others", red, blue, other)
	}
	// The top of the frame keeps the source's grey.
	if top := px[(10*frameW+10)*3 : (10*frameW+10)*3+3]; absDiff(top[0], 128) > 8 || absDiff(top[2], 128) > 8 {
		t.Fatalf("top pixel %v is not the source's grey", top)
	}
}

func absDiff(a byte, b int) int {
	if d := int(a) - b; d > 0 {
		return d
	} else {
		return -d
	}
}

func TestCaptionBurnTranscribed(t *testing.T) {
	t.Parallel()
	b := captionSetup(t)
	sb, err := transcribe.NewSandbox()
	if err != nil {
		t.Fatal(err)
	}
	tr := transcribe.Router{Fast: transcribe.Pocketsphinx{Sandbox: sb}}
	res, out := b.run(t, &runner.Captions{FFmpeg: b.ff, Transcriber: tr}, "caption.burn",
		map[string]string{"source": b.url(t, "source.mp4", nil)}, map[string]any{"language": "en", "fontSize": 24, "maxCharsPerLine": 20})
	if failed(res) != nil {
		t.Fatalf("job failed: %+v %s", failed(res), deref(failed(res).Detail))
	}
	// The speech lasts under two seconds: captions appear during it and are gone after it.
	plain := frame(t, filepath.Join(b.dir, "source.mp4"), 1, "gray")
	during := bands(plain, frame(t, out, 1, "gray"))
	if during[2] < 30 {
		t.Errorf("no caption during the speech: %v", during)
	}
	onlyBand(t, bands(plain, frame(t, out, 3.5, "gray")), -1)
}

func TestCaptionBurnBadSubtitles(t *testing.T) {
	t.Parallel()
	b := captionSetup(t)
	cue := "1\n00:00:00,500 --> 00:00:03,000\nspam\n\n"
	tests := []struct {
		name    string
		content []byte
		want    string
	}{
		{"binary junk", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe"), "not text"},
		{"10 MB of cues", []byte(strings.Repeat(cue, 10<<20/len(cue))), "too large"},
		{"no cues", []byte("<html><body>not found</body></html>"), "no cues"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := b.run(t, &runner.Captions{FFmpeg: b.ff}, "caption.burn", map[string]string{"source": b.url(t, "source.mp4", nil),
				"subtitles": b.url(t, strings.ReplaceAll(tc.name, " ", "_")+".srt", tc.content)}, nil)
			if failed(res) == nil || failed(res).Code != problem.CodeValidation || !strings.Contains(failed(res).Message, "inputs.subtitles") ||
				!strings.Contains(failed(res).Message, tc.want) || len(res.Files) != 0 {
				t.Fatalf("result: %+v", res)
			}
		})
	}
}

func TestCaptionBurnOverrideNeutralised(t *testing.T) {
	t.Parallel()
	b := captionSetup(t)
	// In an SRT the override block is stripped: the text renders in the job's font and position.
	res, out := b.run(t, &runner.Captions{FFmpeg: b.ff}, "caption.burn", map[string]string{"source": b.url(t, "source.mp4", nil),
		"subtitles": b.url(t, "evil.srt", []byte("1\n00:00:00,500 --> 00:00:03,000\n{\\fn/etc/passwd\\an8\\fs200}HELLO \\N {\\pos(10,10)}\n"))},
		map[string]any{"fontSize": 24, "marginV": 10})
	if failed(res) != nil {
		t.Fatalf("job failed: %+v %s", failed(res), deref(failed(res).Detail))
	}
	onlyBand(t, bands(frame(t, filepath.Join(b.dir, "source.mp4"), 1, "gray"), frame(t, out, 1, "gray")), 2)
}

func TestCaptionsAnimate(t *testing.T) {
	t.Parallel()
	b := captionSetup(t)
	words := `[{"word":"ONE","start":0.5,"end":1.0},{"word":"TWO","start":1.5,"end":2.0},{"word":"THREE","start":2.0,"end":3.0}]`
	res, out := b.run(t, &runner.Animate{FFmpeg: b.ff}, "captions.animate", map[string]string{"source": b.url(t, "source.mp4", nil),
		"transcript": b.url(t, "words.json", []byte(words))}, map[string]any{"preset": "pop", "fontSize": 32, "highlightColor": "#FF0000"})
	if failed(res) != nil {
		t.Fatalf("job failed: %+v %s", failed(res), deref(failed(res).Detail))
	}
	plain := frame(t, filepath.Join(b.dir, "source.mp4"), 1, "gray")
	first, second := frame(t, out, 1.2, "gray"), frame(t, out, 1.7, "gray")
	// The pop preset shows one line in the middle; across the ONE/TWO boundary the highlight moves.
	onlyBand(t, bands(plain, first), 1)
	if d := bands(first, second); d[1] < 20 || d[0] != 0 || d[2] != 0 {
		t.Fatalf("frames across a word boundary: changed pixels %v", d)
	}
	onlyBand(t, bands(plain, frame(t, out, 3.5, "gray")), -1)
}

func TestExtractMetadata(t *testing.T) {
	t.Parallel()
	b := captionSetup(t)
	res, _ := b.run(t, &runner.Metadata{FFmpeg: b.ff}, "extract.metadata", map[string]string{"source": b.url(t, "source.mp4", nil)}, nil)
	if failed(res) != nil || len(res.Files) != 0 || res.ComputeMs <= 0 {
		t.Fatalf("result: %+v", res)
	}
	var md struct {
		Format     string            `json:"format"`
		DurationMs int64             `json:"durationMs"`
		Size       int64             `json:"size"`
		BitRate    int64             `json:"bitRate"`
		Tags       map[string]string `json:"tags"`
		Streams    []map[string]any  `json:"streams"`
	}
	if err := json.Unmarshal(res.Data, &md); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(filepath.Join(b.dir, "source.mp4"))
	if md.Format != "mov" && md.Format != "mp4" || md.DurationMs < 3900 || md.DurationMs > 4200 || md.Size != st.Size() || md.BitRate <= 0 ||
		md.Tags["title"] != "caption test" || len(md.Streams) != 2 {
		t.Fatalf("metadata: %s", res.Data)
	}
	v, a := md.Streams[0], md.Streams[1]
	if v["type"] != "video" || v["codec"] != "h264" || v["width"] != 320.0 || v["height"] != 240.0 || v["frameRate"] != 10.0 || v["pixelFormat"] != "yuv420p" {
		t.Errorf("video stream: %v", v)
	}
	if a["type"] != "audio" || a["codec"] != "aac" || a["sampleRate"] != 22050.0 || a["channels"] != 1.0 || a["language"] != "eng" {
		t.Errorf("audio stream: %v", a)
	}
}

func TestFonts(t *testing.T) {
	t.Parallel()
	f, err := runner.LoadFonts(context.Background())
	if err != nil {
		testenv.Missing(t, "fonts (scripts/deps.sh installs fonts-inter and fontconfig)", err)
	}
	for fam, want := range map[string]bool{"Inter": true, "inter": true, "DejaVu Sans": true, "Comic Sans Nope": false, "/etc/passwd": false} {
		if f.Has(fam) != want {
			t.Errorf("Has(%q) = %v", fam, !want)
		}
	}
}

// TestTypesValidateWithTheRunnersAllowList: every job type's executor validates its inputs
// again with its FFmpeg's AllowPrivateNetworks, the ranges its fetcher may reach: a source on a
// loopback address is refused, naming it, unless the runner opens loopback, and then it runs.
func TestTypesValidateWithTheRunnersAllowList(t *testing.T) {
	t.Parallel()
	b := captionSetup(t)
	b.url(t, "source.mp4", nil)
	_, port, _ := strings.Cut(b.srv.Listener.Addr().String(), ":")
	source := "https://127.0.0.1:" + port + "/source.mp4"
	words := b.url(t, "allow-words.json", []byte(`[{"word":"ONE","start":0.5,"end":1.0}]`))
	subs := b.url(t, "allow.srt", []byte(srt))
	opened := captionSetup(t)
	opened.ff.AllowPrivateNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	tests := []struct {
		typ    string
		exec   func(ff *runner.FFmpeg) runner.Executor
		inputs map[string]string
	}{
		{"extract.metadata", func(ff *runner.FFmpeg) runner.Executor { return &runner.Metadata{FFmpeg: ff} },
			map[string]string{"source": source}},
		{"caption.burn", func(ff *runner.FFmpeg) runner.Executor { return &runner.Captions{FFmpeg: ff} },
			map[string]string{"source": source, "subtitles": subs}},
		{"captions.animate", func(ff *runner.FFmpeg) runner.Executor { return &runner.Animate{FFmpeg: ff} },
			map[string]string{"source": source, "transcript": words}},
	}
	for _, tc := range tests {
		t.Run(tc.typ, func(t *testing.T) {
			t.Parallel()
			res, _ := b.run(t, tc.exec(b.ff), tc.typ, tc.inputs, nil)
			if e := failed(res); e == nil || e.Code != problem.CodeValidation || !strings.Contains(e.Message, "non-public address 127.0.0.1 (loopback)") {
				t.Errorf("without the allow list: %+v, want VALIDATION_ERROR naming 127.0.0.1", e)
			}
			res, _ = opened.run(t, tc.exec(opened.ff), tc.typ, tc.inputs, nil)
			if e := failed(res); e != nil {
				t.Errorf("with loopback opened: %+v %s", e, deref(e.Detail))
			}
		})
	}
}
