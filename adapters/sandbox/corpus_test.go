package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/adapters/sandbox/sandboxtest"
	"github.com/mediajobs/mediajobs/validator"
	"github.com/mediajobs/mediajobs/validator/validatortest"
)

// TestRealWorldCorpus runs every command of the validator's real-world corpus in the
// production sandbox (system call filter and memory cgroup on), on short generated inputs of
// the kind each staged name says. A command that fails there is run again without the filter:
// if it then succeeds, the filter broke it. Commands that fail either way fail on the
// generated inputs (a seek past their end, a transforms file that is not one), not on the
// sandbox, and are only counted.
func TestRealWorldCorpus(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: the corpus runs some 270 FFmpeg commands")
	}
	cases, err := validatortest.RealWorld()
	if err != nil {
		t.Fatal(err)
	}
	sb := available(t, sandbox.Config{})
	unfiltered := available(t, sandbox.WithoutSyscallFilter(sandbox.Config{}))
	inputs := newInputMaker(t)
	var ran, failedBoth atomic.Int64

	t.Run("commands", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.Name, func(t *testing.T) {
				t.Parallel()
				r := validator.Validate(c.Command, validatortest.Staged(c.Staged()))
				if !r.Valid {
					t.Fatalf("the validator refuses %q: %s", c.Command, r.Error)
				}
				args := append([]string{"-hide_banner", "-nostdin", "-loglevel", "error", "-y"}, r.Plan.Args...)
				run := func(sb *sandbox.Sandbox) sandbox.Result {
					dir := sandboxtest.WorkDir(t)
					for _, name := range c.Staged() {
						inputs.stage(t, dir, name, strings.Contains(c.Command, "concat"))
					}
					res, err := sb.Run(context.Background(), sandbox.Spec{Dir: dir, Program: sandbox.FFmpeg, Args: args, Timeout: 2 * time.Minute})
					if err != nil {
						t.Fatalf("Run: %v", err)
					}
					return res
				}
				ran.Add(1)
				res := run(sb)
				if res.ExitCode == 0 {
					return
				}
				if again := run(unfiltered); again.ExitCode == 0 {
					t.Errorf("%q fails under the system call filter (exit %d, LimitExceeded %+v) and succeeds without it: %s",
						c.Command, res.ExitCode, res.LimitExceeded, res.StderrTail)
					return
				}
				failedBoth.Add(1)
				t.Logf("fails with and without the filter, on the generated inputs (exit %d): %s", res.ExitCode, lastLine(res.StderrTail))
			})
		}
	})
	t.Logf("%d commands ran, %d failed on the generated inputs with and without the filter", ran.Load(), failedBoth.Load())
	if n := ran.Load(); n > 0 && failedBoth.Load()*5 > n {
		t.Errorf("%d of %d commands failed on the generated inputs: too few ran to show the filter breaks nothing", failedBoth.Load(), n)
	}
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// inputMaker makes one short file of each kind a staged name can ask for, with the host's
// FFmpeg (these commands are the test's own), and copies it in under the name.
type inputMaker struct {
	dir  string
	mu   sync.Mutex
	made map[string]string // kind → file
}

func newInputMaker(t *testing.T) *inputMaker {
	return &inputMaker{dir: t.TempDir(), made: map[string]string{}}
}

const (
	videoSource = "testsrc=size=320x240:rate=25:duration=1"
	audioSource = "sine=frequency=440:duration=1,aformat=channel_layouts=stereo"
)

// stage writes an input called name into dir. concat: the command reads .txt names as concat
// lists rather than text.
func (m *inputMaker) stage(t *testing.T, dir, name string, concat bool) {
	t.Helper()
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(name), "."))
	var data []byte
	switch ext {
	case "srt":
		data = []byte("1\n00:00:00,000 --> 00:00:01,500\nHello\n")
	case "ass":
		data = []byte("[Script Info]\nScriptType: v4.00+\n\n[V4+ Styles]\nFormat: Name, Fontname, Fontsize\nStyle: Default,DejaVu Sans,20\n\n" +
			"[Events]\nFormat: Layer, Start, End, Style, Text\nDialogue: 0,0:00:00.00,0:00:01.50,Default,Hello\n")
	case "cube":
		data = []byte("LUT_3D_SIZE 2\n0 0 0\n1 0 0\n0 1 0\n1 1 0\n0 0 1\n1 0 1\n0 1 1\n1 1 1\n")
	case "txt":
		if !concat {
			data = []byte("Hello\n")
			break
		}
		data = []byte("ffconcat version 1.0\nfile 'concat-part.mp4'\nfile 'concat-part.mp4'\n")
		m.copyKind(t, dir, "mp4", "concat-part.mp4")
	case "ttf", "otf":
		var err error
		if data, err = os.ReadFile("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"); err != nil {
			t.Fatalf("a font to stage: %v", err)
		}
	default:
		m.copyKind(t, dir, ext, name)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyKind copies the media file for extension ext (a video for names without a media
// extension) into dir as name.
func (m *inputMaker) copyKind(t *testing.T, dir, ext, name string) {
	t.Helper()
	file, err := m.media(ext)
	if err != nil {
		t.Fatalf("make a .%s input: %v", ext, err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (m *inputMaker) media(ext string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f, ok := m.made[ext]; ok {
		return f, nil
	}
	var args []string
	out := filepath.Join(m.dir, "in."+ext)
	switch ext {
	case "wav", "mp3", "flac", "m4a", "ogg", "aac", "opus":
		args = []string{"-f", "lavfi", "-i", audioSource}
	case "png", "jpg", "jpeg", "bmp", "gif":
		args = []string{"-f", "lavfi", "-i", videoSource, "-frames:v", "1"}
	case "m2v":
		args = []string{"-f", "lavfi", "-i", videoSource}
	case "mp4", "mkv", "avi", "mov", "flv", "webm", "mpg", "wmv", "ts":
		args = []string{"-f", "lavfi", "-i", videoSource, "-f", "lavfi", "-i", audioSource}
	default: // "input", "INPUT", a name without a media extension: a video, as an MP4
		args = []string{"-f", "lavfi", "-i", videoSource, "-f", "lavfi", "-i", audioSource, "-f", "mp4"}
	}
	cmd := exec.Command(sandbox.FFmpeg, append(append([]string{"-hide_banner", "-nostdin", "-loglevel", "error", "-y"}, args...), out)...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%v: %s", err, msg)
	}
	m.made[ext] = out
	return out, nil
}
