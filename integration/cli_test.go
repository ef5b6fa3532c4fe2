package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	mjclient "github.com/mediajobs/mediajobs/contracts/client"
)

// cliResult is one finished run of a client subcommand of the binary.
type cliResult struct {
	stdout, stderr string
	code           int
}

// cliEnv is the environment of a client subcommand: the test's, without MEDIAJOBS_* (the
// server and key come from flags or from env).
func cliEnv(env ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MEDIAJOBS_") {
			out = append(out, kv)
		}
	}
	return append(out, env...)
}

// mediajobs runs the binary with args in dir (the test's working directory when empty) and
// returns what it printed and its exit status; it fails the test if it runs over two minutes.
func mediajobs(t *testing.T, dir string, env []string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = dir
	cmd.Env = cliEnv(env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("mediajobs %q ran over two minutes\nstdout %s\nstderr %s", args, stdout.String(), stderr.String())
	case errors.As(err, &exit):
	case err != nil:
		t.Fatalf("mediajobs %q: %v", args, err)
	}
	return cliResult{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
}

// probed is what ffprobe says of a file's streams.
type probed struct {
	Streams []struct {
		CodecType string `json:"codec_type"`
		Width     int    `json:"width"`
		Height    int    `json:"height"`
	} `json:"streams"`
	Programs []struct {
		Streams []struct {
			Width  int `json:"width"`
			Height int `json:"height"`
		} `json:"streams"`
	} `json:"programs"`
}

func ffprobe(t *testing.T, path string) probed {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "stream=codec_type,width,height:program",
		"-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	var p probed
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("ffprobe %s: %v\n%s", path, err, out)
	}
	return p
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// costLine is how `mediajobs run` prints what a job cost.
var costLine = regexp.MustCompile(`(?m)^cost: [1-9][0-9]* credits?$`)

// TestRunCommand runs `mediajobs run` against the real service, as a user would from a shell:
// local files are uploaded, lavfi sources go as written, outputs land in the output directory in
// their layout, a failure exits non-zero with its code, and Ctrl-C cancels the job. The command
// is a client of the API, so one store backend is enough.
func TestRunCommand(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{Backend: sqliteBackend, Unthrottled: true})
	acct := createAccount(t, s, "pro")
	api := newClient(t, s, acct.APIKey)
	env := []string{"MEDIAJOBS_SERVER=" + s.Base, "MEDIAJOBS_API_KEY=" + acct.APIKey}

	// A local file, in a directory of its own, named with a path: the command says where it is.
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "clips"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "clips", "in.mp4"), makeMedia(t, 2), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("local file and lavfi input", func(t *testing.T) {
		t.Parallel()
		out := filepath.Join(t.TempDir(), "out")
		r := mediajobs(t, work, env, "run", "--output-dir", out,
			"ffmpeg -i clips/in.mp4 -f lavfi -i sine=frequency=440:duration=2 -map 0:v -map 1:a "+
				"-c:v libx264 -preset ultrafast -pix_fmt yuv420p -c:a aac -shortest mixed.mp4")
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
		}
		// The HLS ladder below runs in parallel from the same file: whichever runs second finds
		// the first one's upload and reuses it.
		staged := strings.Contains(r.stderr, "uploaded clips/in.mp4 as in.mp4") || strings.Contains(r.stderr, "reused clips/in.mp4 as in.mp4")
		if !staged || !costLine.MatchString(r.stdout) {
			t.Errorf("output does not tell the upload and the cost:\nstdout %s\nstderr %s", r.stdout, r.stderr)
		}
		if diff := cmp.Diff([]string{"mixed.mp4"}, dirNames(t, out)); diff != "" {
			t.Fatalf("output directory (-want +got):\n%s", diff)
		}
		p := ffprobe(t, filepath.Join(out, "mixed.mp4"))
		var kinds []string
		for _, st := range p.Streams {
			kinds = append(kinds, st.CodecType)
			if st.CodecType == "video" && (st.Width != 128 || st.Height != 72) {
				t.Errorf("video %dx%d, want the local file's 128x72", st.Width, st.Height)
			}
		}
		if diff := cmp.Diff([]string{"video", "audio"}, kinds); diff != "" {
			t.Errorf("streams (-want +got):\n%s", diff)
		}
	})

	t.Run("HLS ladder", func(t *testing.T) {
		t.Parallel()
		out := filepath.Join(t.TempDir(), "ladder")
		// The arguments one by one after --, as a shell passes a command that is not quoted
		// whole, and the input staged by --input from an absolute path.
		r := mediajobs(t, "", env, "run", "--output-dir", out, "--input", "src.mp4="+filepath.Join(work, "clips", "in.mp4"), "--",
			"ffmpeg", "-i", "src.mp4", "-filter_complex", "[0:v]split=2[a][b];[a]scale=128:72[v0];[b]scale=64:36[v1]",
			"-map", "[v0]", "-map", "[v1]", "-c:v", "libx264", "-preset", "ultrafast", "-g", "10", "-b:v:0", "200k", "-b:v:1", "100k",
			"-f", "hls", "-hls_time", "1", "-hls_playlist_type", "vod", "-master_pl_name", "master.m3u8",
			"-var_stream_map", "v:0 v:1", "-hls_segment_filename", "v%v_%03d.ts", "v%v.m3u8")
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
		}
		names := dirNames(t, out)
		var segments int
		for _, n := range names {
			if strings.HasSuffix(n, ".ts") {
				segments++
			}
		}
		for _, want := range []string{"master.m3u8", "v0.m3u8", "v1.m3u8"} {
			if !strings.Contains(strings.Join(names, " "), want) {
				t.Errorf("output directory %v lacks %s", names, want)
			}
		}
		if segments < 4 {
			t.Errorf("output directory %v: %d segments, want two or more per rendition", names, segments)
		}
		// The manifest plays from the directory: ffprobe follows it to both renditions' segments.
		p := ffprobe(t, filepath.Join(out, "master.m3u8"))
		var sizes []string
		for _, prog := range p.Programs {
			for _, st := range prog.Streams {
				sizes = append(sizes, fmt.Sprintf("%dx%d", st.Width, st.Height))
			}
		}
		sort.Strings(sizes)
		if diff := cmp.Diff([]string{"128x72", "64x36"}, sizes); diff != "" {
			t.Errorf("renditions of master.m3u8 (-want +got):\n%s", diff)
		}
	})

	t.Run("image set", func(t *testing.T) {
		t.Parallel()
		out := filepath.Join(t.TempDir(), "frames")
		r := mediajobs(t, "", env, "run", "--output-dir", out, "ffmpeg -f lavfi -i testsrc=duration=1:size=64x48:rate=4 frame_%03d.png")
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
		}
		want := []string{"frame_001.png", "frame_002.png", "frame_003.png", "frame_004.png"}
		if diff := cmp.Diff(want, dirNames(t, out)); diff != "" {
			t.Fatalf("output directory (-want +got):\n%s", diff)
		}
		for _, n := range want {
			p := ffprobe(t, filepath.Join(out, n))
			if len(p.Streams) != 1 || p.Streams[0].Width != 64 || p.Streams[0].Height != 48 {
				t.Errorf("%s: streams %+v, want one 64x48 image", n, p.Streams)
			}
		}
	})

	t.Run("failing command", func(t *testing.T) {
		t.Parallel()
		out := filepath.Join(t.TempDir(), "none")
		r := mediajobs(t, "", env, "run", "--output-dir", out, "ffmpeg -f lavfi -i testsrc=duration=1 -c:v no_such_encoder broken.mp4")
		if r.code != 1 || !strings.Contains(r.stderr, "RUNNER_ERROR") || !strings.Contains(r.stderr, "no_such_encoder") {
			t.Fatalf("exit %d, stderr %s; want 1, RUNNER_ERROR and FFmpeg's complaint", r.code, r.stderr)
		}
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a failed job made the output directory: %v", err)
		}
	})

	t.Run("refused command", func(t *testing.T) {
		t.Parallel()
		r := mediajobs(t, "", env, "run", "ffmpeg -i https://example.com/a.mp4 -filter_script x out.mp4")
		if r.code != 1 || !strings.Contains(r.stderr, "VALIDATION_ERROR") || !strings.Contains(r.stderr, "-filter_script") {
			t.Fatalf("exit %d, stderr %s; want 1 and the VALIDATION_ERROR naming the flag", r.code, r.stderr)
		}
	})

	t.Run("Ctrl-C cancels the job", func(t *testing.T) {
		t.Parallel()
		cmd := exec.Command(binary, "run", "--output-dir", t.TempDir(), longCommand("interrupted.mp4"))
		cmd.Env = cliEnv(env...)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
		lines := make(chan string, 64)
		var seen strings.Builder
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		go func() {
			_ = cmd.Wait()
			close(exited)
		}()
		// Interrupt once the job runs: the progress lines say so.
		var id string
		deadline := time.After(60 * time.Second)
	follow:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("mediajobs run ended before the job ran:\n%s", seen.String())
				}
				seen.WriteString(l + "\n")
				if strings.HasSuffix(l, " submitted") {
					id = strings.TrimSuffix(l, " submitted")
				}
				if id != "" && strings.HasPrefix(l, id+" running") {
					break follow
				}
			case <-deadline:
				t.Fatalf("the job was not running after 60 s:\n%s", seen.String())
			}
		}
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		for l := range lines {
			seen.WriteString(l + "\n")
		}
		<-exited
		if code := cmd.ProcessState.ExitCode(); code != 130 {
			t.Errorf("exit %d after SIGINT, want 130\n%s", code, seen.String())
		}
		if !strings.Contains(seen.String(), "interrupted; "+id+" cancelled") {
			t.Errorf("stderr does not say the job was cancelled:\n%s", seen.String())
		}
		if j := api.job(id); j.Status != "cancelled" {
			t.Fatalf("GET /jobs/%s: status %s after Ctrl-C, want cancelled", id, j.Status)
		}
	})
}

// TestJobsCommands drives `mediajobs jobs list|get|cancel|wait` against the real service.
func TestJobsCommands(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{Backend: sqliteBackend, Unthrottled: true})
	acct := createAccount(t, s, "pro")
	api := newClient(t, s, acct.APIKey)
	flags := []string{"--server", s.Base, "--key", acct.APIKey}
	jobs := func(args ...string) cliResult {
		t.Helper()
		return mediajobs(t, "", nil, append(append([]string{"jobs"}, args[:1]...), append(flags, args[1:]...)...)...)
	}
	var job map[string]any
	decode := func(r cliResult) map[string]any {
		t.Helper()
		job = nil
		if err := json.Unmarshal([]byte(r.stdout), &job); err != nil {
			t.Fatalf("stdout is not a job: %v\n%s", err, r.stdout)
		}
		return job
	}

	quick := api.submit(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=5 -frames:v 1 one.png", nil, nil))
	r := jobs("wait", quick)
	if r.code != 0 || decode(r)["status"] != "complete" || job["id"] != quick {
		t.Fatalf("jobs wait %s: exit %d\nstdout %s\nstderr %s", quick, r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, quick+" complete") {
		t.Errorf("jobs wait printed no progress: %s", r.stderr)
	}

	long := api.submit(ffmpegJob(longCommand("long.mp4"), nil, nil))
	r = jobs("get", long)
	if r.code != 0 || decode(r)["id"] != long {
		t.Fatalf("jobs get %s: exit %d\nstdout %s\nstderr %s", long, r.code, r.stdout, r.stderr)
	}

	r = jobs("list", "--limit", "1")
	if r.code != 0 || !strings.Contains(r.stdout, long) || strings.Contains(r.stdout, quick) || !strings.Contains(r.stdout, "more: mediajobs jobs list --cursor ") {
		t.Fatalf("jobs list --limit 1: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	cursor := strings.TrimSpace(r.stdout[strings.LastIndex(r.stdout, "--cursor ")+len("--cursor "):])
	r = jobs("list", "--limit", "1", "--cursor", cursor, "--json")
	var page struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
		Pagination struct {
			NextCursor *string `json:"nextCursor"`
		} `json:"pagination"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &page); r.code != 0 || err != nil || len(page.Data) != 1 || page.Data[0].ID != quick || page.Pagination.NextCursor != nil {
		t.Fatalf("jobs list --cursor --json: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	r = jobs("list", "--status", "complete")
	if r.code != 0 || !strings.Contains(r.stdout, quick) || strings.Contains(r.stdout, long) {
		t.Fatalf("jobs list --status complete: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	r = jobs("cancel", long)
	if r.code != 0 || decode(r)["status"] != "cancelled" {
		t.Fatalf("jobs cancel %s: exit %d\nstdout %s\nstderr %s", long, r.code, r.stdout, r.stderr)
	}
	if j := api.job(long); j.Status != "cancelled" {
		t.Fatalf("GET /jobs/%s after jobs cancel: %s", long, j.Status)
	}

	refusals := []struct {
		name string
		args []string
		code int
		want string
	}{
		{name: "cancel an ended job", args: []string{"cancel", long}, code: 1, want: "CONFLICT"},
		{name: "wait for a cancelled job", args: []string{"wait", long}, code: 1, want: long + " was cancelled"},
		{name: "get an unknown job", args: []string{"get", "job_nosuchjob"}, code: 1, want: "NOT_FOUND"},
		{name: "bad status", args: []string{"list", "--status", "finished"}, code: 1, want: "VALIDATION_ERROR"},
		{name: "bad limit", args: []string{"list", "--limit", "500"}, code: 2, want: "--limit 500: want 1 to 100"},
		{name: "no job ID", args: []string{"get"}, code: 2, want: "want 1 argument"},
		{name: "unknown subcommand", args: []string{"delete", long}, code: 2, want: `unknown subcommand "delete"`},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			r := jobs(tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("jobs %q: exit %d, stderr %s; want %d and %q", tt.args, r.code, r.stderr, tt.code, tt.want)
			}
		})
	}
	t.Run("wrong key", func(t *testing.T) {
		r := mediajobs(t, "", []string{"MEDIAJOBS_SERVER=" + s.Base, "MEDIAJOBS_API_KEY=mj_wrong"}, "jobs", "list")
		if r.code != 1 || !strings.Contains(r.stderr, "UNAUTHORIZED") {
			t.Fatalf("jobs list with a wrong key: exit %d, stderr %s", r.code, r.stderr)
		}
	})
}

// TestWebhooksVerifyCommand checks a real delivery with mjclient.VerifyWebhook and, saved as a
// receiver would save it, with `mediajobs webhooks verify`.
func TestWebhooksVerifyCommand(t *testing.T) {
	t.Parallel()
	recv := newWebhookReceiver(t)
	s := startServer(t, serverOpts{Backend: sqliteBackend, Unthrottled: true, Env: map[string]string{
		"MEDIAJOBS_ALLOW_PRIVATE_NETWORKS": "127.0.0.0/8", "SSL_CERT_FILE": recv.certFile}})
	c := newClient(t, s, createAccount(t, s, "pro").APIKey)
	var ep struct {
		Secret string `json:"secret"`
	}
	c.do(http.MethodPost, "/webhook-endpoints", map[string]any{"name": "cli", "url": recv.srv.URL + "/hooks",
		"subscribedEvents": []string{"job.completed"}}, nil).decode(t, http.StatusCreated, &ep)
	c.complete(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=5 -frames:v 1 hook.png", nil, nil))
	got := recv.next(t, ep.Secret, "job.completed delivery")

	// The Go client's check, on the same delivery.
	if err := mjclient.VerifyWebhook(got.header, got.body, "whsec_old", ep.Secret); err != nil {
		t.Errorf("mjclient.VerifyWebhook of a real delivery: %v", err)
	}
	if err := mjclient.VerifyWebhook(got.header, got.body, "whsec_0000"); !errors.Is(err, mjclient.ErrSignatureMismatch) {
		t.Errorf("mjclient.VerifyWebhook with another secret: %v, want ErrSignatureMismatch", err)
	}

	dir := t.TempDir()
	var headers strings.Builder
	if err := got.header.Write(&headers); err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hFile, bFile := write("headers.txt", []byte(headers.String())), write("body.json", got.body)
	var raw bytes.Buffer
	raw.WriteString("POST /hooks HTTP/1.1\r\nHost: receiver\r\n")
	raw.WriteString(headers.String())
	raw.WriteString("Content-Length: " + strconv.Itoa(len(got.body)) + "\r\n\r\n")
	raw.Write(got.body)
	reqFile := write("request.http", raw.Bytes())

	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{name: "headers and body", args: []string{"--secret", ep.Secret, "--headers", hFile, "--body", bFile}, code: 0, want: "valid: job.completed del_"},
		{name: "raw request", args: []string{"--secret", ep.Secret, "--request", reqFile}, code: 0, want: "valid: job.completed"},
		{name: "another secret", args: []string{"--secret", "whsec_0000", "--headers", hFile, "--body", bFile}, code: 1, want: "invalid: no signature matches"},
		{name: "body edited", args: []string{"--secret", ep.Secret, "--headers", hFile, "--body", write("edited.json", append(bytes.TrimSpace(got.body), ' '))}, code: 1, want: "invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mediajobs(t, "", nil, append([]string{"webhooks", "verify"}, tt.args...)...)
			if r.code != tt.code || !strings.Contains(r.stdout, tt.want) {
				t.Fatalf("webhooks verify: exit %d\nstdout %s\nstderr %s\nwant %d and %q", r.code, r.stdout, r.stderr, tt.code, tt.want)
			}
		})
	}
}

// TestRunRateLimited: `mediajobs run` right after the account's minute is spent waits out the
// 429s of its upload, submit and polls instead of failing.
func TestRunRateLimited(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{Backend: sqliteBackend})
	key := createAccount(t, s, "free").APIKey
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "in.mp4"), makeMedia(t, 1), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; rawGet(t, s.Base, key, "/account").StatusCode != http.StatusTooManyRequests; i++ {
		if i > 40 {
			t.Fatal("no 429 after 40 requests on the Free plan")
		}
	}
	out := filepath.Join(t.TempDir(), "out")
	r := mediajobs(t, work, nil, "run", "--server", s.Base, "--key", key, "--output-dir", out,
		"ffmpeg -i in.mp4 -frames:v 1 first.png")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "rate limited; trying again in ") {
		t.Errorf("the run met no 429 (stderr %s): the test did not test the retry", r.stderr)
	}
	if diff := cmp.Diff([]string{"first.png"}, dirNames(t, out)); diff != "" {
		t.Errorf("output directory (-want +got):\n%s", diff)
	}
}

// TestRunUploadsOnce: `mediajobs run` has the service check the command before it uploads
// anything, and uploads a file the account already holds (the same bytes, by SHA-256) only once.
// Uploads are counted twice over: the server's POST /uploads counter, and GET /uploads?sha256=.
func TestRunUploadsOnce(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{Backend: sqliteBackend, Unthrottled: true})
	acct := createAccount(t, s, "pro")
	api := newClient(t, s, acct.APIKey)
	env := []string{"MEDIAJOBS_SERVER=" + s.Base, "MEDIAJOBS_API_KEY=" + acct.APIKey}
	work := t.TempDir()
	clip := makeMedia(t, 1)
	if err := os.WriteFile(filepath.Join(work, "clip.mp4"), clip, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(clip)
	uploadsOfClip := func() int {
		t.Helper()
		var found []upload
		api.do(http.MethodGet, "/uploads?sha256="+hex.EncodeToString(sum[:]), nil, nil).decode(t, http.StatusOK, &found)
		return len(found)
	}
	posts := func() float64 {
		t.Helper()
		return scrape(t, s.Base)[`mediajobs_http_requests_total{method="POST",route="/uploads",status="201"}`]
	}

	refusals := []struct {
		name, command, want string
	}{
		{"a flag the validator refuses", "ffmpeg -i clip.mp4 -filter_script x out.mp4", "-filter_script"},
		{"an input that is not here", "ffmpeg -i clip.mp4 -i missing.mp4 -map 0 -map 1 out.mkv", "missing.mp4"},
	}
	for _, tt := range refusals {
		r := mediajobs(t, work, env, "run", "--output-dir", t.TempDir(), tt.command)
		if r.code != 1 || !strings.Contains(r.stderr, "VALIDATION_ERROR") || !strings.Contains(r.stderr, tt.want) ||
			!strings.Contains(r.stderr, "nothing was uploaded") {
			t.Errorf("%s: exit %d, stderr %s; want 1 and a VALIDATION_ERROR naming %q", tt.name, r.code, r.stderr, tt.want)
		}
	}
	if n, p := uploadsOfClip(), posts(); n != 0 || p != 0 {
		t.Fatalf("after refused commands: %d uploads of clip.mp4, %v POST /uploads; want none", n, p)
	}

	command := "ffmpeg -i clip.mp4 -frames:v 1 thumb.png"
	for i, want := range []string{"uploaded clip.mp4 as clip.mp4", "reused clip.mp4 as clip.mp4"} {
		r := mediajobs(t, work, env, "run", "--output-dir", t.TempDir(), command)
		if r.code != 0 || !strings.Contains(r.stderr, want) {
			t.Fatalf("run %d: exit %d, stderr %s; want 0 and %q", i+1, r.code, r.stderr, want)
		}
	}
	// Under another name the same bytes are the same input: the job stages them as the
	// command names them.
	if err := os.WriteFile(filepath.Join(work, "copy.mp4"), clip, 0o644); err != nil {
		t.Fatal(err)
	}
	r := mediajobs(t, work, env, "run", "--output-dir", t.TempDir(), "ffmpeg -i copy.mp4 -frames:v 1 thumb.png")
	if r.code != 0 || !strings.Contains(r.stderr, "reused copy.mp4 as copy.mp4") {
		t.Fatalf("run of a copy: exit %d, stderr %s; want 0 and the upload reused", r.code, r.stderr)
	}
	if n, p := uploadsOfClip(), posts(); n != 1 || p != 1 {
		t.Errorf("after three runs of the same bytes: %d uploads of them, %v POST /uploads; want 1 and 1", n, p)
	}
}

// TestJobsListSummary: `mediajobs jobs list` tells jobs apart by more than their IDs: an FFmpeg
// job's command (without "ffmpeg", shortened to 60 characters).
func TestJobsListSummary(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{Backend: sqliteBackend, Unthrottled: true})
	acct := createAccount(t, s, "pro")
	api := newClient(t, s, acct.APIKey)
	tests := []struct {
		name, command, want string
	}{
		{"short command whole", "ffmpeg -f lavfi -i testsrc=duration=1 -frames:v 1 a.png", "-f lavfi -i testsrc=duration=1 -frames:v 1 a.png"},
		{"long command shortened", longCommand("long.mp4"), "-re -f lavfi -i testsrc=duration=600:size=32x32:rate=5 -c:v…"},
	}
	ids := map[string]string{}
	for _, tt := range tests {
		ids[tt.name] = api.submit(ffmpegJob(tt.command, nil, nil))
	}
	t.Cleanup(func() {
		api.do(http.MethodPost, "/jobs/"+ids["long command shortened"]+"/cancel", nil, nil)
	})
	r := mediajobs(t, "", nil, "jobs", "list", "--server", s.Base, "--key", acct.APIKey)
	if r.code != 0 || !strings.Contains(r.stdout, "SUMMARY") {
		t.Fatalf("jobs list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, tt := range tests {
		var row string
		for _, l := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(l, ids[tt.name]+" ") {
				row = l
			}
		}
		if !strings.HasSuffix(row, "  "+tt.want) {
			t.Errorf("%s: the row of %s is %q; want it to end with %q", tt.name, ids[tt.name], row, tt.want)
		}
	}
}
