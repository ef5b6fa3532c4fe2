package runner_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/blobfs"
	"github.com/mediajobs/mediajobs/adapters/runner"
	"github.com/mediajobs/mediajobs/adapters/safehttp"
	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/workqueue"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

// outputsOnly is a fake control plane for the executors' own tests: outputs go to a blob
// directory under their account's and job's key, no asset exists, and the queue calls an
// executor never makes fail. The real control plane is tested with the agent and end to end.
type outputsOnly struct {
	blobs *blobfs.Store
}

func (outputsOnly) Claim(context.Context, workqueue.ClaimParams) ([]workqueue.Assignment, error) {
	return nil, errors.New("outputsOnly: no claims")
}
func (outputsOnly) Heartbeat(context.Context, workqueue.Beat) (workqueue.Ack, error) {
	return workqueue.Ack{}, errors.New("outputsOnly: no heartbeats")
}
func (outputsOnly) Report(context.Context, workqueue.Lease, workqueue.Result) error {
	return errors.New("outputsOnly: no reports")
}
func (outputsOnly) OpenAsset(context.Context, workqueue.Lease, string) (io.ReadCloser, error) {
	return nil, problem.ErrNotFound
}
func (q outputsOnly) PutOutput(ctx context.Context, l workqueue.Lease, name string, r io.Reader, max int64) (int64, error) {
	return q.blobs.Put(ctx, blob.OutputKey("acc_1", l.JobID, name), r, max)
}

// hooks records an executor's progress.
func hooks(last *atomic.Value) runner.Hooks {
	return runner.Hooks{Progress: func(p float64) { last.Store(p) }, Executing: func() {}}
}

type testBundle struct {
	exec  *runner.FFmpeg
	blobs *blobfs.Store
	root  string
}

func setup(t *testing.T) testBundle {
	t.Helper()
	exec, blobs, root := newExecutor(t, safehttp.NewClient(safehttp.Config{}), 1<<20)
	return testBundle{root: root, blobs: blobs, exec: exec}
}

// newExecutor makes an ffmpeg executor over a blob directory in a fresh root that the sandbox
// user can reach (t.TempDir's parent is 0700), fetching with client; it skips without the sandbox.
func newExecutor(t *testing.T, client *http.Client, maxBytes int64) (*runner.FFmpeg, *blobfs.Store, string) {
	t.Helper()
	t.Cleanup(client.CloseIdleConnections)
	if err := sandbox.Available(); err != nil {
		testenv.Missing(t, "the bubblewrap sandbox (scripts/deps.sh installs bubblewrap)", err)
	}
	root := t.TempDir()
	for _, dir := range []string{filepath.Dir(root), root} {
		if err := os.Chmod(dir, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	blobs, err := blobfs.New(filepath.Join(root, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.New(sandbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	q := outputsOnly{blobs: blobs}
	exec := &runner.FFmpeg{Sandbox: sb, Queue: q,
		Fetch: runner.Fetcher{Client: client, Queue: q, MaxBytes: maxBytes}}
	return exec, blobs, root
}

func (b testBundle) run(t *testing.T, inputs, command string, timeout time.Duration) workqueue.Result {
	t.Helper()
	return b.runCapped(t, inputs, command, timeout, workqueue.Limits{})
}

func (b testBundle) runCapped(t *testing.T, inputs, command string, timeout time.Duration, caps workqueue.Limits) workqueue.Result {
	t.Helper()
	return b.runParams(t, inputs, map[string]any{"command": command}, timeout, caps)
}

// runParams executes a job of these params and checks that every output it reports is stored.
func (b testBundle) runParams(t *testing.T, inputs string, p map[string]any, timeout time.Duration, caps workqueue.Limits) workqueue.Result {
	t.Helper()
	params, _ := json.Marshal(p)
	a := workqueue.Assignment{Lease: workqueue.Lease{JobID: job.NewID("job"), Attempt: 1}, AccountID: "acc_1", Type: "ffmpeg", Params: params,
		Timeout: timeout, AssetURLPrefix: "https://api.test/assets/", Limits: caps}
	if inputs != "" {
		a.Inputs = json.RawMessage(inputs)
	}
	work, err := os.MkdirTemp(b.root, "work-")
	if err != nil {
		t.Fatal(err)
	}
	var last atomic.Value
	res := b.exec.Execute(context.Background(), a, work, hooks(&last))
	for _, f := range res.Files {
		blob, err := b.blobs.Open(context.Background(), blob.OutputKey("acc_1", a.Lease.JobID, f.Path))
		if err != nil {
			t.Fatalf("output %s not stored: %v", f.Path, err)
		}
		if blob.Size() != f.Size || f.Size == 0 {
			t.Fatalf("output %s: stored %d bytes, reported %d", f.Path, blob.Size(), f.Size)
		}
		blob.Close()
	}
	return res
}

func TestSingleFileWithMeta(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.run(t, "", "ffmpeg -f lavfi -i testsrc=duration=1:size=320x240:rate=10 -pix_fmt yuv420p out.mp4", 60*time.Second)
	if failed(res) != nil {
		t.Fatalf("job failed: %+v %s", failed(res), deref(failed(res).Detail))
	}
	if len(res.Files) != 1 || res.Files[0].Path != "out.mp4" || res.Files[0].Type != job.FileVideo {
		t.Fatalf("files: %+v", res.Files)
	}
	m := res.Files[0].Meta
	if m == nil || m.Width != 320 || m.Height != 240 || m.DurationMs < 900 || m.DurationMs > 1100 || !strings.Contains(m.Format, "mp4") {
		t.Fatalf("meta: %+v", m)
	}
	if res.ComputeMs <= 0 {
		t.Fatalf("compute ms %d", res.ComputeMs)
	}
}

func TestHLSStream(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.run(t, "", "ffmpeg -f lavfi -i testsrc=duration=4:size=160x120:rate=10 -c:v libx264 -g 10 -f hls -hls_time 1 -hls_list_size 0 -hls_segment_filename seg_%03d.ts index.m3u8", 60*time.Second)
	if failed(res) != nil {
		t.Fatalf("job failed: %+v %s", failed(res), deref(failed(res).Detail))
	}
	out, err := job.NewOutput(res.Files, res.Data, "")
	if err != nil || out.Pattern() != job.PatternStream || out.File.Path != "index.m3u8" || len(out.Files) < 3 {
		t.Fatalf("output: %+v %v", out, err)
	}
}

// TestHLSSegmentsPastTheProbeCap: ffprobe reads DefaultMaxProbes files of a job; the other
// segments of an HLS stream still show their container, duration (from the playlist) and
// picture size (from a probed segment of the same playlist).
func TestHLSSegmentsPastTheProbeCap(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.run(t, "", "ffmpeg -f lavfi -i testsrc=duration=12:size=160x120:rate=10 -c:v libx264 -g 10 -f hls -hls_time 1 -hls_list_size 0 -hls_segment_filename seg_%03d.ts index.m3u8", 60*time.Second)
	if failed(res) != nil {
		t.Fatalf("job failed: %+v %s", failed(res), deref(failed(res).Detail))
	}
	segments, total := 0, int64(0)
	for _, f := range res.Files {
		if !strings.HasSuffix(f.Path, ".ts") {
			continue
		}
		segments++
		if f.Meta == nil || f.Meta.Format != "ts" || f.Meta.DurationMs <= 0 || f.Meta.Width != 160 || f.Meta.Height != 120 {
			t.Errorf("segment %s: meta %+v, want ts 160x120 with its duration", f.Path, f.Meta)
			continue
		}
		total += f.Meta.DurationMs
	}
	if segments <= runner.DefaultMaxProbes {
		t.Fatalf("%d segments: the test needs more than the %d probed", segments, runner.DefaultMaxProbes)
	}
	if total < 11_500 || total > 12_500 {
		t.Errorf("the segments' durations add up to %d ms, want the stream's 12 s", total)
	}
}

func TestFailureKeepsStderrTail(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.run(t, `{"bad.mp4":{"content":"this is not a video"}}`, "ffmpeg -i bad.mp4 out.mp4", 30*time.Second)
	if failed(res) == nil || failed(res).Code != problem.CodeRunnerError || failed(res).Detail == nil || len(*failed(res).Detail) > job.DetailLimit {
		t.Fatalf("error: %+v", failed(res))
	}
	if !strings.Contains(*failed(res).Detail, "bad.mp4") {
		t.Fatalf("detail does not show ffmpeg's complaint: %q", *failed(res).Detail)
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.run(t, "", "ffmpeg -f lavfi -i testsrc=duration=600:size=1280x720 -c:v libx264 out.mp4", time.Second)
	if failed(res) == nil || failed(res).Code != problem.CodeRunnerTimeout || len(res.Files) != 0 {
		t.Fatalf("result: %+v", res)
	}
}

// The plan's per-job caps reach the sandbox: a job past one fails LIMIT_EXCEEDED, naming it.
func TestPerJobCaps(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name    string
		command string
		caps    workqueue.Limits
		limit   string
	}{
		{"files", "ffmpeg -f lavfi -i testsrc=duration=100:size=32x32:rate=50 -f image2 img_%05d.png", workqueue.Limits{Files: 50, Bytes: 1 << 30}, "job_files"},
		{"bytes", "ffmpeg -f lavfi -i testsrc=duration=600:size=640x480:rate=25 -c:v rawvideo -f segment -segment_time 1 seg_%03d.avi",
			workqueue.Limits{Files: 1000, Bytes: 20 << 20}, "job_bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := b.runCapped(t, "", tc.command, time.Minute, tc.caps)
			e := failed(res)
			if e == nil || e.Code != problem.CodeLimitExceeded || !strings.Contains(e.Message, tc.limit) || len(res.Files) != 0 {
				t.Fatalf("result %+v, error %+v; want LIMIT_EXCEEDED naming %s", res, e, tc.limit)
			}
		})
	}
}

// Two walls keep a job's inputs off private addresses, and each holds alone: the runner's own
// validation refuses a URL that names one, before anything is fetched, and the fetcher refuses
// to dial one whatever the URL says (a name that resolves there, or a range the validator was
// told to open but the fetcher was not). The operator's allow list opens both.
func TestRefusedInputRange(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		_, _ = io.WriteString(w, "1\n00:00:00,000 --> 00:00:01,000\nhi\n")
	}))
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	_, port, _ := strings.Cut(srv.Listener.Addr().String(), ":")
	tests := []struct {
		name string
		// host is the URL's: 127.0.0.1, or the test certificate's name, which the fetcher's
		// resolver answers with 127.0.0.1.
		host string
		// validatorAllows and fetcherAllows are the runner's allow lists: FFmpeg's and its client's.
		validatorAllows, fetcherAllows []netip.Prefix
		code                           problem.Code // "" completes
		message                        string
	}{
		{name: "literal address, refused by the validator", host: "127.0.0.1",
			code: problem.CodeValidation, message: "non-public address 127.0.0.1 (loopback)"},
		{name: "name resolving to loopback, refused by the fetcher", host: "example.com",
			code: problem.CodeInputFetchFailed, message: "refused"},
		{name: "literal address the validator allows, refused by the fetcher", host: "127.0.0.1", validatorAllows: loopback,
			code: problem.CodeInputFetchFailed, message: "refused"},
		{name: "the operator's range, opened to both", host: "127.0.0.1", validatorAllows: loopback, fetcherAllows: loopback},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := safehttp.NewClient(safehttp.Config{RootCAs: pool, AllowPrivate: tc.fetcherAllows,
				LookupIP: func(context.Context, string) ([]netip.Addr, error) {
					return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
				}})
			exec, blobs, root := newExecutor(t, client, 1<<20)
			exec.AllowPrivateNetworks = tc.validatorAllows
			b := testBundle{exec: exec, blobs: blobs, root: root}
			path := fmt.Sprintf("/%d/in.srt", i)
			res := b.run(t, `{"in.srt":"https://`+tc.host+":"+port+path+`"}`, "ffmpeg -i in.srt out.vtt", 30*time.Second)
			e := failed(res)
			mu.Lock()
			reached := hits[path]
			mu.Unlock()
			if tc.code == "" {
				if e != nil || reached == 0 {
					t.Fatalf("error %+v, server reached %d times; want a completed job", e, reached)
				}
				return
			}
			if e == nil || e.Code != tc.code || !strings.Contains(e.Message, tc.message) {
				t.Fatalf("error %+v, want %s with %q", e, tc.code, tc.message)
			}
			if reached != 0 {
				t.Fatalf("the refused server was reached %d times", reached)
			}
		})
	}
}

func TestInlineSubtitlesBurned(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srt := "1\n00:00:00,000 --> 00:00:01,000\nHello\n"
	inputs, _ := json.Marshal(map[string]any{"subs.srt": map[string]string{"content": srt}})
	res := b.run(t, string(inputs), "ffmpeg -f lavfi -i color=c=black:s=320x240:d=1 -vf subtitles=subs.srt out.mp4", 60*time.Second)
	if failed(res) != nil {
		t.Fatalf("job failed: %+v %s", failed(res), deref(failed(res).Detail))
	}
	if len(res.Files) != 1 || res.Files[0].Path != "out.mp4" {
		t.Fatalf("inputs were returned as outputs or output missing: %+v", res.Files)
	}
}

// output reads the stored output of that name (unique among the test's jobs).
func (b testBundle) output(t *testing.T, name string) string {
	t.Helper()
	found, err := os.ReadFile(b.outputPath(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(found)
}

// outputPath is where the stored output of that name (unique among the test's jobs) lies.
func (b testBundle) outputPath(t *testing.T, name string) string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(filepath.Join(b.root, "blobs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == name {
			found = append(found, p)
		}
		return err
	})
	if err != nil || len(found) != 1 {
		t.Fatalf("stored outputs called %s: %v (%v), want one", name, found, err)
	}
	return found[0]
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// failed is the job error a result's failure becomes, by the core's rule; nil on success.
func failed(r workqueue.Result) *job.Error {
	if r.Failure == nil {
		return nil
	}
	return r.Failure.Error()
}

// unavailableFor fails the first n output uploads as a control plane that is down would, after
// reading part of the body and closing it, as net/http's transport closes a request body that
// has a Close: the executor sends the whole file again.
type unavailableFor struct {
	outputsOnly
	n atomic.Int32
}

func (q *unavailableFor) PutOutput(ctx context.Context, l workqueue.Lease, name string, r io.Reader, max int64) (int64, error) {
	if q.n.Add(-1) >= 0 {
		_, _ = io.CopyN(io.Discard, r, 100)
		if c, ok := r.(io.Closer); ok {
			_ = c.Close()
		}
		return 0, fmt.Errorf("put: %w: connection refused", workqueue.ErrUnavailable)
	}
	return q.outputsOnly.PutOutput(ctx, l, name, r, max)
}

func TestOutputUploadOutlastsAnUnavailableControlPlane(t *testing.T) {
	t.Parallel()
	b := setup(t)
	q := &unavailableFor{outputsOnly: b.exec.Queue.(outputsOnly)}
	q.n.Store(2)
	exec := *b.exec
	exec.Queue, exec.Fetch.Queue = q, q
	b.exec = &exec
	res := b.run(t, "", "ffmpeg -f lavfi -i testsrc=duration=1:size=64x48:rate=10 -pix_fmt yuv420p out.mp4", 60*time.Second)
	if failed(res) != nil {
		t.Fatalf("job failed: %+v", failed(res))
	}
	if q.n.Load() >= 0 {
		t.Fatalf("uploads left to fail: %d; the executor did not retry", q.n.Load())
	}
}

// TestSmallOutputsGoWithTheReport: the outputs that fit the assignment's InlineBytes go with the
// result (Result.Inline), in name order while they fit, and are not uploaded; the rest are.
// Against a control plane that allows none (an older one), every output is uploaded.
func TestSmallOutputsGoWithTheReport(t *testing.T) {
	t.Parallel()
	b := setup(t)
	params, _ := json.Marshal(map[string]any{"command": "ffmpeg -f lavfi -i testsrc=duration=2:size=320x240:rate=25 -c:v mpeg4 -q:v 1 big.mp4 -vf scale=64:48 -frames:v 1 small.png"})
	for _, inline := range []int64{0, 32 << 10} {
		a := workqueue.Assignment{Lease: workqueue.Lease{JobID: job.NewID("job"), Attempt: 1}, AccountID: "acc_1", Type: "ffmpeg", Params: params,
			Timeout: time.Minute, AssetURLPrefix: "https://api.test/assets/", InlineBytes: inline}
		work, err := os.MkdirTemp(b.root, "work-")
		if err != nil {
			t.Fatal(err)
		}
		var last atomic.Value
		res := b.exec.Execute(context.Background(), a, work, hooks(&last))
		if failed(res) != nil {
			t.Fatalf("inline %d: job failed: %+v", inline, failed(res))
		}
		carried := map[string][]byte{}
		for _, f := range res.Inline {
			carried[f.Name] = f.Data
		}
		if len(res.Files) != 2 {
			t.Fatalf("inline %d: files %+v, want big.mp4 and small.png", inline, res.Files)
		}
		for _, f := range res.Files {
			stored, err := b.blobs.Open(context.Background(), blob.OutputKey("acc_1", a.Lease.JobID, f.Path))
			if err == nil {
				stored.Close()
			}
			wantInline := inline > 0 && f.Path == "small.png"
			switch data, ok := carried[f.Path]; {
			case ok != wantInline:
				t.Errorf("inline %d: %s carried in the report: %v, want %v", inline, f.Path, ok, wantInline)
			case ok && (int64(len(data)) != f.Size || !bytes.HasPrefix(data, []byte("\x89PNG"))):
				t.Errorf("inline %d: %s carries %d bytes (%q...), reported %d", inline, f.Path, len(data), data[:min(len(data), 8)], f.Size)
			case ok == (err == nil):
				t.Errorf("inline %d: %s carried %v, uploaded %v: want one of the two", inline, f.Path, ok, err == nil)
			}
		}
	}
}

// Staged inputs are what their names say: a list under another name is refused before FFmpeg
// runs, a list under its own name is checked entry by entry, and a staged file is read with the
// demuxer its extension names. The inputs are downloaded, so these are the runner's checks of
// the bytes (inline content meets the same rules at submit, through the validator's plan).
func TestStagedInputsAreWhatTheirNamesSay(t *testing.T) {
	t.Parallel()
	files := map[string][]byte{}
	var mu sync.Mutex
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		b, ok := files[r.URL.Path]
		mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	addr := netip.MustParseAddrPort(srv.Listener.Addr().String())
	client := safehttp.NewClient(safehttp.Config{RootCAs: pool, AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		LookupIP: func(context.Context, string) ([]netip.Addr, error) { return []netip.Addr{addr.Addr()}, nil }})
	exec, blobs, root := newExecutor(t, client, 1<<20)
	b := testBundle{exec: exec, blobs: blobs, root: root}

	playlist := "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n/etc/passwd\n#EXT-X-ENDLIST\n"
	srt := func(text string) string { return "1\n00:00:00,000 --> 00:00:01,000\n" + text + "\n" }
	tests := []struct {
		name    string
		inputs  map[string]string // name -> content, served over https
		command string
		code    problem.Code // "" completes
		message string
		// absent must not be in the output notIn.
		notIn, absent string
	}{
		{name: "playlist named .srt", inputs: map[string]string{"m.srt": playlist},
			command: "ffmpeg -i m.srt out.srt", code: problem.CodeValidation, message: `input "m.srt" holds an HLS playlist, not what its name says`},
		{name: "playlist named .srt read by a filter", inputs: map[string]string{"m.srt": playlist},
			command: "ffmpeg -f lavfi -i color=s=64x48:d=1 -vf subtitles=m.srt out.mp4", code: problem.CodeValidation, message: "HLS playlist"},
		{name: "concat list named .vtt", inputs: map[string]string{"l.vtt": "ffconcat version 1.0\nfile /etc/passwd\n"},
			command: "ffmpeg -i l.vtt out.srt", code: problem.CodeValidation, message: `input "l.vtt" holds a concat list`},
		{name: "-f concat on a .vtt", inputs: map[string]string{"l.vtt": "file a.srt\n", "a.srt": srt("a")},
			command: "ffmpeg -f concat -i l.vtt out.srt", code: problem.CodeValidation, message: "must be named .txt or .ffconcat"},
		{name: "concat entry on the host", inputs: map[string]string{"list.txt": "file 'a.srt'\nfile '/etc/passwd'\n", "a.srt": srt("a")},
			command: "ffmpeg -f concat -i list.txt out.srt", code: problem.CodeValidation, message: `list.txt line 2: entry "/etc/passwd" is an absolute path`},
		{name: "concat entry not staged", inputs: map[string]string{"list.txt": "file 'a.srt'\nfile 'c.srt'\n", "a.srt": srt("a")},
			command: "ffmpeg -f concat -i list.txt out.srt", code: problem.CodeValidation, message: `entry "c.srt" is not a staged input`},
		{name: "headerless list named .vtt is read as WebVTT", inputs: map[string]string{"x.vtt": "file '/etc/passwd'\n"},
			command: "ffmpeg -i x.vtt list.vtt", notIn: "list.vtt", absent: "passwd"},
		// FFmpeg's probe would read SubRip here and keep the cue; WebVTT's demuxer finds none.
		{name: "SubRip named .vtt is read as WebVTT", inputs: map[string]string{"x.vtt": srt("HELLO")},
			command: "ffmpeg -i x.vtt srt.vtt", notIn: "srt.vtt", absent: "HELLO"},
		// A playlist under its own name reaches FFmpeg through a filter that opens files by
		// probing; its entries are checked like a command.
		{name: "playlist under its own name read by a filter", inputs: map[string]string{"p.m3u8": playlist},
			command: "ffmpeg -f lavfi -i color=s=64x48:d=1 -vf subtitles=p.m3u8 out.mp4", code: problem.CodeValidation,
			message: `p.m3u8 line 4: entry "/etc/passwd" is an absolute path`},
		{name: "concat list of staged subtitles", inputs: map[string]string{"list.txt": "file 'a.srt'\nfile b.srt\n", "a.srt": srt("a"), "b.srt": srt("b")},
			command: "ffmpeg -f concat -i list.txt out.srt"},
		{name: "subtitles under their own name", inputs: map[string]string{"s.srt": srt("hello")}, command: "ffmpeg -i s.srt out.vtt"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, port, _ := strings.Cut(srv.Listener.Addr().String(), ":")
			inputs := map[string]string{}
			mu.Lock()
			for name, content := range tc.inputs {
				// No extension in the URL: a playlist's own would be refused there already.
				path := fmt.Sprintf("/%d/%s", i, strings.ReplaceAll(name, ".", "_"))
				files[path] = []byte(content)
				inputs[name] = "https://example.com:" + port + path // the test certificate's name
			}
			mu.Unlock()
			raw, _ := json.Marshal(inputs)
			res := b.run(t, string(raw), tc.command, 30*time.Second)
			e := failed(res)
			if tc.code == "" {
				if e != nil {
					t.Fatalf("failed: %+v %s", e, deref(e.Detail))
				}
				if tc.notIn != "" {
					if out := b.output(t, tc.notIn); strings.Contains(out, tc.absent) {
						t.Errorf("%s holds %q: %q", tc.notIn, tc.absent, out)
					}
				}
				return
			}
			if e == nil || e.Code != tc.code || !strings.Contains(e.Message, tc.message) {
				t.Fatalf("error %+v, want %s with %q", e, tc.code, tc.message)
			}
			if tc.code == problem.CodeValidation && res.ComputeMs != 0 {
				t.Errorf("refused before the run, yet %d ms of compute", res.ComputeMs)
			}
		})
	}
}

// runWatched executes command as a job and returns the progress fractions and the media times
// written that its hooks were told, in order.
func (b testBundle) runWatched(t *testing.T, command string) (fractions []float64, processed []time.Duration) {
	t.Helper()
	return b.runWatchedParams(t, map[string]any{"command": command})
}

// runWatchedParams is runWatched for a job of these params.
func (b testBundle) runWatchedParams(t *testing.T, p map[string]any) (fractions []float64, processed []time.Duration) {
	t.Helper()
	params, _ := json.Marshal(p)
	a := workqueue.Assignment{Lease: workqueue.Lease{JobID: job.NewID("job"), Attempt: 1}, AccountID: "acc_1", Type: "ffmpeg",
		Params: params, Timeout: time.Minute, AssetURLPrefix: "https://api.test/assets/"}
	work, err := os.MkdirTemp(b.root, "work-")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	h := runner.Hooks{Executing: func() {},
		Progress: func(p float64) {
			mu.Lock()
			fractions = append(fractions, p)
			mu.Unlock()
		},
		Processed: func(d time.Duration) {
			mu.Lock()
			processed = append(processed, d)
			mu.Unlock()
		}}
	if res := b.exec.Execute(context.Background(), a, work, h); res.Failure != nil {
		t.Fatalf("the job failed: %+v", res.Failure)
	}
	mu.Lock()
	defer mu.Unlock()
	return fractions, processed
}

// TestFFmpegProgressOfAGeneratedInput runs a job whose only input is a lavfi source: no input is
// probed, so the progress comes from the length the command gives (the source's d=, -t). The
// source is read at its own rate (-re), so that the run outlasts FFmpeg's half-second reports
// on any machine.
func TestFFmpegProgressOfAGeneratedInput(t *testing.T) {
	t.Parallel()
	seen, _ := setup(t).runWatched(t, "ffmpeg -re -f lavfi -i testsrc=d=4:s=320x240:r=25 -t 4 -c:v libx264 -pix_fmt yuv420p out.mp4")
	if len(seen) == 0 {
		t.Fatal("no progress reported for a 4-second lavfi job")
	}
	if last := seen[len(seen)-1]; last < 0.5 || last > 0.99 {
		t.Errorf("progress ended at %v (of %v); want the run's end near 1, below it until the job completes", last, seen)
	}
}

// TestFFmpegProcessedWithoutALength: a command whose output has no length known in advance (an
// endless source bounded by -fs) gets no progress fraction, but the media time written so far.
func TestFFmpegProcessedWithoutALength(t *testing.T) {
	t.Parallel()
	fractions, processed := setup(t).runWatched(t, "ffmpeg -f lavfi -i testsrc=s=320x240:r=25 -fs 300k -c:v libx264 -pix_fmt yuv420p out.mp4")
	if len(fractions) != 0 {
		t.Errorf("progress %v for a command of no known length", fractions)
	}
	if len(processed) == 0 || processed[len(processed)-1] <= 0 {
		t.Fatalf("processed %v, want the media time written", processed)
	}
}

// assetQueue is outputsOnly that also serves uploaded assets, by ID.
type assetQueue struct {
	outputsOnly
	assets map[string][]byte
}

func (q assetQueue) OpenAsset(_ context.Context, _ workqueue.Lease, id string) (io.ReadCloser, error) {
	b, ok := q.assets[id]
	if !ok {
		return nil, problem.ErrNotFound
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// programsRun is a sandbox that records the programs it is asked to run.
type programsRun struct {
	sandbox.Runner
	mu  sync.Mutex
	ran []string
}

func (p *programsRun) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	p.mu.Lock()
	p.ran = append(p.ran, spec.Program)
	p.mu.Unlock()
	return p.Runner.Run(ctx, spec)
}

// TestFFmpegProgressOfAPart: a job whose assignment gives its length (a split's part) tells
// progress against it and does not probe its input for one; without it, the input is probed.
// The part is the last of a 6-second input cut at 2 s: 4 s, which its command does not say.
func TestFFmpegProgressOfAPart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	src := filepath.Join(t.TempDir(), "in.mp4")
	if out, err := osexec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=d=6:s=160x120:r=25", "-c:v", "libx264",
		"-preset", "ultrafast", "-g", "50", "-pix_fmt", "yuv420p", src).CombinedOutput(); err != nil {
		t.Fatalf("making the input: %v\n%s", err, out)
	}
	media, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	q := assetQueue{outputsOnly: b.exec.Queue.(outputsOnly), assets: map[string][]byte{"ast_in": media}}
	for _, tc := range []struct {
		name   string
		length time.Duration
		probes int
	}{
		{"length given", 4 * time.Second, 0},
		{"no length", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sb := &programsRun{Runner: b.exec.Sandbox}
			exec := &runner.FFmpeg{Sandbox: sb, Queue: q, Fetch: runner.Fetcher{Client: b.exec.Fetch.Client, Queue: q, MaxBytes: 1 << 20}}
			params, _ := json.Marshal(map[string]any{"command": "ffmpeg -re -ss 2.000000 -i in.mp4 -c:v libx264 -preset ultrafast -an split_part_002.mp4"})
			a := workqueue.Assignment{Lease: workqueue.Lease{JobID: job.NewID("job"), Attempt: 1}, AccountID: "acc_1", Type: "ffmpeg",
				Inputs: json.RawMessage(`{"in.mp4":"https://api.test/assets/ast_in/content"}`), Params: params, Timeout: time.Minute,
				AssetURLPrefix: "https://api.test/assets/", Length: tc.length}
			work, err := os.MkdirTemp(b.root, "work-")
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var seen []float64
			h := runner.Hooks{Executing: func() {}, Progress: func(p float64) {
				mu.Lock()
				seen = append(seen, p)
				mu.Unlock()
			}}
			if res := exec.Execute(context.Background(), a, work, h); res.Failure != nil {
				t.Fatalf("the part failed: %+v", res.Failure)
			}
			probes := 0
			for _, p := range sb.ran {
				if p == sandbox.FFprobe {
					probes++
				}
			}
			if probes != tc.probes {
				t.Errorf("ffprobe ran %d times (programs %v), want %d", probes, sb.ran, tc.probes)
			}
			mu.Lock()
			defer mu.Unlock()
			// FFmpeg reports every half second of a 4-second run read at its own rate (-re).
			if len(seen) == 0 || seen[len(seen)-1] < 0.5 || seen[len(seen)-1] > 0.99 {
				t.Errorf("progress %v; want it told against the part's 4 s, ending near 1", seen)
			}
		})
	}
}
