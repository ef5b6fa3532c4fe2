package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mediajobs/mediajobs/validator"
)

// buildWASM builds validator.wasm from the current sources once per test binary.
var buildWASM = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "mediajobs-validate")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "validator.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-o", out,
		"github.com/mediajobs/mediajobs/validator/cmd/wasm")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build validator.wasm: %v\n%s", err, msg)
	}
	return out, nil
})

func TestMain(m *testing.M) {
	code := m.Run()
	if path, err := buildWASM(); err == nil {
		os.RemoveAll(filepath.Dir(path))
	}
	os.Exit(code)
}

func TestValidateCommand(t *testing.T) {
	t.Parallel()
	wasm, err := buildWASM()
	if err != nil {
		t.Fatal(err)
	}
	const (
		valid   = "ffmpeg -i https://example.com/in.mp4 -c:v libx264 out.mp4"
		invalid = "ffmpeg -i https://example.com/in.mp4 -filter_script x out.mp4"
	)
	// data is what the endpoint answers for command, from the native validator.
	data := func(command string, opts validator.Options) string {
		b, err := json.Marshal(map[string]validator.Result{"data": validator.Validate(command, opts)})
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	staged := validator.Options{Inputs: map[string]validator.Input{"in.mp4": {URL: "https://example.com/in.mp4"}}}

	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "valid", args: []string{valid}, wantCode: 0, wantStdout: data(valid, validator.Options{})},
		{name: "invalid", args: []string{invalid}, wantCode: 1, wantStdout: data(invalid, validator.Options{})},
		{name: "wasm engine, valid", args: []string{"--engine", "wasm", "--wasm", wasm, valid}, wantCode: 0, wantStdout: data(valid, validator.Options{})},
		{name: "wasm engine, invalid", args: []string{"--engine=wasm", "--wasm=" + wasm, invalid}, wantCode: 1, wantStdout: data(invalid, validator.Options{})},
		{name: "flags after the command", args: []string{invalid, "--engine", "wasm", "--wasm", wasm}, wantCode: 1, wantStdout: data(invalid, validator.Options{})},
		{name: "after --", args: []string{"--engine", "native", "--", "-i"}, wantCode: 1, wantStdout: data("-i", validator.Options{})},
		{
			name:       "options",
			args:       []string{"--options", `{"inputs":{"in.mp4":{"url":"https://example.com/in.mp4"}}}`, "ffmpeg -i in.mp4 out.webm"},
			wantCode:   0,
			wantStdout: data("ffmpeg -i in.mp4 out.webm", staged),
		},
		{
			name:       "required inputs",
			args:       []string{"ffmpeg -i in.mp4 -vf subtitles=subs.srt out.mp4"},
			wantCode:   0,
			wantStdout: data("ffmpeg -i in.mp4 -vf subtitles=subs.srt out.mp4", validator.Options{}),
		},
		{
			name:       "job-shaped inputs",
			args:       []string{"--inputs", `{"in.mp4":"https://example.com/in.mp4"}`, "ffmpeg -i in.mp4 out.webm"},
			wantCode:   0,
			wantStdout: data("ffmpeg -i in.mp4 out.webm", staged),
		},
		{
			name:       "job-shaped inputs, wasm engine",
			args:       []string{"--engine", "wasm", "--wasm", wasm, "--inputs", `{"s.srt":{"content":"1"}}`, "ffmpeg -i in.mp4 -vf subtitles=s.srt out.mp4"},
			wantCode:   0,
			wantStdout: data("ffmpeg -i in.mp4 -vf subtitles=s.srt out.mp4", validator.Options{Inputs: map[string]validator.Input{"s.srt": {Inline: true, ContentSize: 1}}}),
		},
		{name: "bad inputs", args: []string{"--inputs", `{"in.mp4":5}`, valid}, wantCode: 2, wantStderr: "--inputs: inputs.in.mp4"},
		{name: "help", args: []string{"-h"}, wantCode: 0, wantStderr: "Exit status: 0 valid, 1 invalid"},
		{name: "no command", args: nil, wantCode: 2, wantStderr: "want one command"},
		{name: "unquoted command", args: []string{"ffmpeg", "-i", "x"}, wantCode: 2, wantStderr: "flag provided but not defined: -i"},
		{name: "two commands", args: []string{valid, invalid}, wantCode: 2, wantStderr: "got 2 arguments"},
		{name: "unknown engine", args: []string{"--engine", "v8", valid}, wantCode: 2, wantStderr: `--engine "v8"`},
		{name: "unknown flag", args: []string{"--nope", valid}, wantCode: 2, wantStderr: "-nope"},
		{name: "bad options", args: []string{"--options", `{"compute":1}`, valid}, wantCode: 2, wantStderr: "--options"},
		{name: "unknown option", args: []string{"--options", `{"gpu":true}`, valid}, wantCode: 2, wantStderr: `unknown field "gpu"`},
		{name: "wasm missing", args: []string{"--engine", "wasm", "--wasm", filepath.Join(t.TempDir(), "absent.wasm"), valid}, wantCode: 2, wantStderr: "make wasm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := runValidate(t.Context(), tt.args, &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit status %d, want %d (stderr: %s)", code, tt.wantCode, stderr.String())
			}
			if stdout.String() != tt.wantStdout {
				t.Errorf("stdout\n %q\nwant\n %q", stdout.String(), tt.wantStdout)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tt.wantStderr)
			}
			if n := strings.Count(stderr.String(), "-wasm"); tt.name == "help" && n != 1 {
				t.Errorf("help names -wasm %d times, want once:\n%s", n, stderr.String())
			}
		})
	}
}
