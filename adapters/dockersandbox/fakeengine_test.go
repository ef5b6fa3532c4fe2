package dockersandbox

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
)

// fakeEngine plays one container's life through the Engine API on loopback: a fake, since no
// engine runs here, to hold Run's own flow (attach, start, wait, kill, remove, the caps) to
// account. What a real container does is the suite's business, where an engine exists.
type fakeEngine struct {
	fakeScript

	mu      sync.Mutex
	created []container.CreateRequest
	killed  int
	removed int

	started  chan struct{}
	exited   chan struct{}
	exitOnce sync.Once
	code     int
}

// fakeScript is what the fake container does.
type fakeScript struct {
	stdout, stderr string
	exitCode       int              // -1: run until killed
	onStart        func(dir string) // what the "container" does to its work dir
}

var enginePath = regexp.MustCompile(`^(/v[0-9.]+)?/containers/(create|c1/(attach|start|wait|kill)|c1)$`)

func newFakeEngine(t *testing.T, script fakeScript) (*Sandbox, *fakeEngine) {
	t.Helper()
	e := &fakeEngine{fakeScript: script, started: make(chan struct{}), exited: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(srv.Close)
	sb, err := New(Config{Host: "tcp://" + strings.TrimPrefix(srv.URL, "http://")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb, e
}

func (e *fakeEngine) exit(code int) {
	e.exitOnce.Do(func() {
		e.code = code
		close(e.exited)
	})
}

func (e *fakeEngine) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/_ping") {
		w.Header().Set("Api-Version", "1.47")
		w.Write([]byte("OK"))
		return
	}
	m := enginePath.FindStringSubmatch(r.URL.Path)
	if m == nil {
		http.Error(w, `{"message":"not faked"}`, http.StatusNotFound)
		return
	}
	switch op := m[3]; {
	case m[2] == "create":
		var req container.CreateRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		e.mu.Lock()
		e.created = append(e.created, req)
		e.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"Id":"c1","Warnings":[]}`))
	case op == "attach":
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		buf.WriteString("HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.multiplexed-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
		buf.Flush()
		<-e.started
		for _, f := range []struct {
			stream byte
			text   string
		}{{1, e.stdout}, {2, e.stderr}} {
			if f.text == "" {
				continue
			}
			hdr := make([]byte, 8)
			hdr[0] = f.stream
			binary.BigEndian.PutUint32(hdr[4:], uint32(len(f.text)))
			conn.Write(append(hdr, f.text...))
		}
		if e.exitCode >= 0 {
			e.exit(e.exitCode)
		}
		<-e.exited
	case op == "start":
		var dir string
		e.mu.Lock()
		if len(e.created) > 0 {
			dir = e.created[len(e.created)-1].HostConfig.Mounts[0].Source
		}
		e.mu.Unlock()
		if e.onStart != nil {
			e.onStart(dir)
		}
		close(e.started)
		w.WriteHeader(http.StatusNoContent)
	case op == "wait":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-e.exited:
			fmt.Fprintf(w, `{"StatusCode":%d}`, e.code)
		case <-r.Context().Done():
		}
	case op == "kill":
		e.mu.Lock()
		e.killed++
		e.mu.Unlock()
		e.exit(137)
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodDelete:
		e.mu.Lock()
		e.removed++
		e.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		http.Error(w, `{"message":"not faked"}`, http.StatusNotFound)
	}
}

func (e *fakeEngine) counts() (created, killed, removed int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.created), e.killed, e.removed
}

func TestRunFlow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		engine     fakeScript
		timeout    time.Duration
		cancelAt   time.Duration // > 0: the caller cancels after this long
		limits     sandbox.Limits
		wantErr    error
		wantExit   int
		wantStdout string
		wantStderr string
		wantTimed  bool
		wantKill   bool
		wantCap    string
	}{
		{
			name:       "exits 0 with output",
			engine:     fakeScript{stdout: "progress=end\n", stderr: "frame=1\n", exitCode: 0},
			wantStdout: "progress=end\n", wantStderr: "frame=1\n",
		},
		{
			name:       "fails with its status and stderr tail",
			engine:     fakeScript{stderr: strings.Repeat("x", 5000) + "missing-input.mp4: No such file\n", exitCode: 1},
			wantExit:   1,
			wantStderr: strings.Repeat("x", sandbox.StderrTailBytes-len("missing-input.mp4: No such file\n")) + "missing-input.mp4: No such file\n",
		},
		{
			name:     "killed at its deadline",
			engine:   fakeScript{exitCode: -1},
			timeout:  300 * time.Millisecond,
			wantExit: -1, wantTimed: true, wantKill: true,
		},
		{
			name:     "killed when the caller cancels",
			engine:   fakeScript{exitCode: -1},
			cancelAt: 300 * time.Millisecond,
			wantErr:  context.Canceled, wantExit: 137, wantKill: true,
		},
		{
			name: "killed when it passes the file cap",
			engine: fakeScript{exitCode: -1, onStart: func(dir string) {
				for i := range 20 {
					os.WriteFile(filepath.Join(dir, fmt.Sprint(i)), nil, 0o644)
				}
			}},
			limits:   sandbox.Limits{JobFiles: 10},
			wantExit: 137, wantKill: true, wantCap: sandbox.LimitJobFiles,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sb, e := newFakeEngine(t, tt.engine)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancelAt > 0 {
				time.AfterFunc(tt.cancelAt, cancel)
			}
			if tt.timeout == 0 {
				tt.timeout = time.Minute
			}
			var stdout bytes.Buffer

			res, err := sb.Run(ctx, sandbox.Spec{Dir: t.TempDir(), Program: sandbox.FFmpeg, Args: []string{"-version"}, Timeout: tt.timeout, Limits: tt.limits, Stdout: &stdout})

			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Run error = %v, want %v", err, tt.wantErr)
			}
			if res.ExitCode != tt.wantExit || res.TimedOut != tt.wantTimed {
				t.Errorf("ExitCode = %d, TimedOut = %v; want %d, %v", res.ExitCode, res.TimedOut, tt.wantExit, tt.wantTimed)
			}
			if stdout.String() != tt.wantStdout || string(res.StderrTail) != tt.wantStderr {
				t.Errorf("stdout %q, stderr tail %q; want %q, %q", stdout.String(), res.StderrTail, tt.wantStdout, tt.wantStderr)
			}
			if got := res.LimitExceeded; (tt.wantCap == "") != (got == nil) || (got != nil && got.Limit != tt.wantCap) {
				t.Errorf("LimitExceeded = %+v, want %q", got, tt.wantCap)
			}
			created, killed, removed := e.counts()
			if created != 1 || removed != 1 || (killed > 0) != tt.wantKill {
				t.Errorf("engine saw %d creates, %d kills, %d removals; want 1, kill=%v, 1", created, killed, removed, tt.wantKill)
			}
		})
	}
}
