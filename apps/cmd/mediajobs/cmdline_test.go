package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/contracts/client"
)

func TestFindLocalInputs(t *testing.T) {
	t.Parallel()
	files := map[string]bool{
		"in.mp4": true, "clips/in.mp4": true, "/tmp/x/in.mp4": true, "my clip.mov": true,
		"-odd.wav": true, "a/b/music.mp3": true, "testsrc=duration=1": false,
	}
	exists := func(p string) bool { return files[p] }
	tests := []struct {
		name        string
		command     string
		taken       []string
		wantCommand string
		wantInputs  []localInput
	}{
		{
			name:        "a bare name stays as written",
			command:     "ffmpeg -i in.mp4 -vf scale=64:-2 out.mp4",
			wantCommand: "ffmpeg -i in.mp4 -vf scale=64:-2 out.mp4",
			wantInputs:  []localInput{{path: "in.mp4", name: "in.mp4"}},
		},
		{
			name:        "a path becomes its staged name",
			command:     "ffmpeg -i /tmp/x/in.mp4 -i a/b/music.mp3 -shortest out.mp4",
			wantCommand: "ffmpeg -i in.mp4 -i music.mp3 -shortest out.mp4",
			wantInputs:  []localInput{{path: "/tmp/x/in.mp4", name: "in.mp4"}, {path: "a/b/music.mp3", name: "music.mp3"}},
		},
		{
			name:        "two files of one base name get two names",
			command:     "ffmpeg -i in.mp4 -i clips/in.mp4 -filter_complex hstack out.mp4",
			wantCommand: "ffmpeg -i in.mp4 -i in-2.mp4 -filter_complex hstack out.mp4",
			wantInputs:  []localInput{{path: "in.mp4", name: "in.mp4"}, {path: "clips/in.mp4", name: "in-2.mp4"}},
		},
		{
			name:        "one file given twice is uploaded once",
			command:     "ffmpeg -i clips/in.mp4 -i clips/in.mp4 out.mp4",
			wantCommand: "ffmpeg -i in.mp4 -i in.mp4 out.mp4",
			wantInputs:  []localInput{{path: "clips/in.mp4", name: "in.mp4"}},
		},
		{
			name:        "quoted, with characters a staged name cannot have",
			command:     `ffmpeg -i 'my clip.mov' -i "-odd.wav" out.mp4`,
			wantCommand: "ffmpeg -i my_clip.mov -i input_-odd.wav out.mp4",
			wantInputs:  []localInput{{path: "my clip.mov", name: "my_clip.mov"}, {path: "-odd.wav", name: "input_-odd.wav"}},
		},
		{
			name:        "URLs, lavfi sources and missing files go as written",
			command:     "ffmpeg -f lavfi -i testsrc=duration=1 -i https://example.com/in.mp4 -i nothere.mp4 out.mp4",
			wantCommand: "ffmpeg -f lavfi -i testsrc=duration=1 -i https://example.com/in.mp4 -i nothere.mp4 out.mp4",
		},
		{
			name:        "a name staged by --input is left to it",
			command:     "ffmpeg -i in.mp4 out.mp4",
			taken:       []string{"in.mp4"},
			wantCommand: "ffmpeg -i in.mp4 out.mp4",
		},
		{
			name:        "a staged name already taken by --input",
			command:     "ffmpeg -i clips/in.mp4 -i subs.srt out.mp4",
			taken:       []string{"in.mp4"},
			wantCommand: "ffmpeg -i in-2.mp4 -i subs.srt out.mp4",
			wantInputs:  []localInput{{path: "clips/in.mp4", name: "in-2.mp4"}},
		},
		{
			name:        "an expansion is never a file",
			command:     "ffmpeg -i $HOME/in.mp4 out.mp4",
			wantCommand: "ffmpeg -i $HOME/in.mp4 out.mp4",
		},
		{
			name:        "a command a shell would not run as one is sent as is",
			command:     "ffmpeg -i in.mp4 out.mp4; rm -rf /",
			wantCommand: "ffmpeg -i in.mp4 out.mp4; rm -rf /",
		},
		{
			name:        "-i last",
			command:     "ffmpeg -i",
			wantCommand: "ffmpeg -i",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			taken := map[string]bool{}
			for _, n := range tt.taken {
				taken[n] = true
			}
			got, inputs := findLocalInputs(tt.command, taken, exists)
			if got != tt.wantCommand {
				t.Errorf("command = %q, want %q", got, tt.wantCommand)
			}
			if diff := cmp.Diff(tt.wantInputs, inputs, cmp.AllowUnexported(localInput{})); diff != "" {
				t.Errorf("local inputs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJoinArgs(t *testing.T) {
	t.Parallel()
	got, err := joinArgs([]string{"ffmpeg", "-i", "my clip.mov", "-vf", "drawtext=text='hi':x=1", "out.mp4"})
	if err != nil {
		t.Fatal(err)
	}
	words, err := splitCommand(got)
	if err != nil {
		t.Fatal(err)
	}
	var values []string
	for _, w := range words {
		values = append(values, w.value)
	}
	if diff := cmp.Diff([]string{"ffmpeg", "-i", "my clip.mov", "-vf", "drawtext=text='hi':x=1", "out.mp4"}, values); diff != "" {
		t.Errorf("joined %q splits back to (-want +got):\n%s", got, diff)
	}
}

func TestInputFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		values  []string
		wantErr string
	}{
		{values: []string{"in.mp4=./a.mp4", "subs.srt=https://example.com/s.srt"}},
		{values: []string{"in.mp4"}, wantErr: "want NAME=PATH_OR_URL"},
		{values: []string{"=a.mp4"}, wantErr: "want NAME=PATH_OR_URL"},
		{values: []string{"dir/in.mp4=a.mp4"}, wantErr: "must be a plain file name"},
		{values: []string{"in.mp4=a", "in.mp4=b"}, wantErr: "is given twice"},
	}
	for _, tt := range tests {
		var f inputFlags
		var err error
		for _, v := range tt.values {
			if err = f.Set(v); err != nil {
				break
			}
		}
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("--input %q: error %v, want %q", tt.values, err, tt.wantErr)
		}
	}
}

// TestRunUsage: mistakes in the flags are caught before anything is sent: no server runs here.
func TestRunUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "no command", args: []string{"--key", "mj_x"}, want: "usage: mediajobs run"},
		{name: "bad compute", args: []string{"--key", "mj_x", "--compute", "tpu", "ffmpeg -i a b"}, want: `--compute "tpu": want auto, cpu or gpu`},
		{name: "bad split", args: []string{"--key", "mj_x", "--split", "fast", "ffmpeg -i a b"}, want: `--split "fast": want auto or off`},
		{name: "bad timeout", args: []string{"--key", "mj_x", "--timeout", "901", "ffmpeg -i a b"}, want: "--timeout 901: want 1 to 900 seconds"},
		{name: "bad priority", args: []string{"--key", "mj_x", "--priority", "urgent", "ffmpeg -i a b"}, want: `--priority "urgent": want low, normal or high`},
		{name: "no key", args: []string{"--key", "", "ffmpeg -i a b"}, want: "no API key"},
		{name: "bad server", args: []string{"--key", "mj_x", "--server", "127.0.0.1:8080", "ffmpeg -i a b"}, want: `--server "127.0.0.1:8080": want an http:// or https:// URL`},
		{name: "missing input file", args: []string{"--key", "mj_x", "--input", "in.mp4=" + dir + "/nope.mp4", "ffmpeg -i in.mp4 b.mp4"}, want: "not a file here, nor an https URL"},
		{name: "bad input flag", args: []string{"--key", "mj_x", "--input", "in.mp4", "ffmpeg -i in.mp4 b.mp4"}, want: "want NAME=PATH_OR_URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := runRun(context.Background(), tt.args, &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr.String(), tt.want)
			}
		})
	}
}

// TestPriorityUsage: jobs priority and queue catch mistakes before anything is sent.
func TestPriorityUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  func(context.Context, []string, io.Writer, io.Writer) int
		args []string
		want string
	}{
		{"unknown priority", runJobs, []string{"priority", "--key", "mj_x", "job_1", "urgent"}, `priority "urgent": want low, normal or high`},
		{"priority without a value", runJobs, []string{"priority", "--key", "mj_x", "job_1"}, "want 2 argument(s), got 1"},
		{"queue limit too large", runQueue, []string{"--key", "mj_x", "--limit", "1001"}, "--limit 1001: want 1 to 1000"},
		{"queue limit zero", runQueue, []string{"--key", "mj_x", "--limit", "0"}, "--limit 0: want 1 to 1000"},
		{"queue with an argument", runQueue, []string{"--key", "mj_x", "cpu"}, `want no arguments, got ["cpu"]`},
		{"queue without a key", runQueue, []string{"--key", ""}, "no API key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			if code := tt.run(context.Background(), tt.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr.String(), tt.want)
			}
		})
	}
}

func TestPrintQueue(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_800_000_000_000)
	high := client.PriorityHigh
	params := map[string]any{"command": "ffmpeg -f lavfi -i testsrc out.mp4"}
	entries := []client.QueueEntry{
		{Position: 1, Class: "cpu", Job: client.Job{ID: "job_a", Priority: &high, CreatedAt: now.Add(-90 * time.Second).UnixMilli(), Params: &params}},
		{Position: 7, Class: "gpu", Job: client.Job{ID: "job_b", CreatedAt: now.UnixMilli()}},
	}
	var out bytes.Buffer
	printQueue(&out, entries, now)
	want := `POSITION  CLASS  JOB    PRIORITY  AGE    SUMMARY
1         cpu    job_a  high      1m30s  -f lavfi -i testsrc out.mp4
7         gpu    job_b  normal    0s     -
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("queue table (-want +got):\n%s", diff)
	}
	out.Reset()
	printQueue(&out, nil, now)
	if out.String() != "no waiting jobs\n" {
		t.Errorf("empty queue printed %q", out.String())
	}
}

func TestJobProgressLines(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	p := newJobProgress(&out, "job_1")
	at := func(s client.Status, progress float64) client.Job {
		j := client.Job{ID: "job_1", Status: s}
		if s == client.StatusRunning {
			j.Progress = &progress
		}
		return j
	}
	for _, j := range []client.Job{
		at(client.StatusWaiting, 0), at(client.StatusWaiting, 0), at(client.StatusDispatched, 0),
		at(client.StatusRunning, 0.05), at(client.StatusRunning, 0.08), at(client.StatusRunning, 0.31),
		at(client.StatusRunning, 0.35), at(client.StatusRunning, 0.9), at(client.StatusComplete, 0),
	} {
		p.update(j)
	}
	want := "job_1 waiting\njob_1 dispatched\njob_1 running 5%\njob_1 running 31%\njob_1 running 90%\njob_1 complete\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("progress lines (-want +got):\n%s", diff)
	}
}

func TestJobProgressLinesWithoutALength(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	p := newJobProgress(&out, "job_1")
	at := func(s client.Status, ms int64) client.Job {
		j := client.Job{ID: "job_1", Status: s}
		if s == client.StatusRunning {
			zero := 0.0
			j.Progress = &zero
			if ms > 0 {
				j.ProcessedMs = &ms
			}
		}
		return j
	}
	for _, j := range []client.Job{
		at(client.StatusDispatched, 0), at(client.StatusRunning, 0), at(client.StatusRunning, 1_200),
		at(client.StatusRunning, 9_000), at(client.StatusRunning, 10_400), at(client.StatusRunning, 12_000),
		at(client.StatusComplete, 0),
	} {
		p.update(j)
	}
	want := "job_1 dispatched\njob_1 running 0%\njob_1 running, 1.2s written\njob_1 running, 10.4s written\njob_1 complete\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("progress lines (-want +got):\n%s", diff)
	}
}
