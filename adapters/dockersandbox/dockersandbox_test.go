package dockersandbox

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/adapters/sandbox/sandboxtest"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

// TestSuite holds the Docker sandbox to the suite every sandbox implementation passes. It needs
// an engine on this machine and the image; without them it skips, saying which is missing.
func TestSuite(t *testing.T) {
	t.Parallel()
	sb, shell := available(t, Config{}), available(t, Config{Programs: withShell()})
	sandboxtest.TestRunner(t, sandboxtest.Features{OwnSystem: true, Shell: func(*testing.T) sandbox.Runner { return shell }},
		func(t *testing.T) sandbox.Runner { return sb })
}

// TestRealGPU runs NVENC in a container through the NVIDIA Container Toolkit.
func TestRealGPU(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/nvidia0"); err != nil {
		testenv.Unavailable(t, "an NVIDIA GPU (/dev/nvidia0 is absent)", nil)
	}
	sb, err := New(Config{GPU: &GPU{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	if err := sb.Available(context.Background()); err != nil {
		testenv.Missing(t, "the Docker sandbox (the engine, and the image make images builds)", err)
	}
	if err := sb.CheckGPU(context.Background()); err != nil {
		t.Fatalf("CheckGPU: %v", err)
	}
}

func limits() sandbox.Limits {
	return sandbox.Limits{CPUSeconds: 120, FileSizeBytes: 8 << 30, MemoryBytes: 4 << 30, Processes: 256, OpenFiles: 1024, JobBytes: 4 << 30, JobFiles: 1000}
}

// wantCPU is the container of a CPU run of FFmpeg with limits(), as the runner would ask.
func wantCPU() (*container.Config, *container.HostConfig) {
	pids := int64(256)
	profile, err := seccompProfile()
	if err != nil {
		panic(err)
	}
	return &container.Config{
			Image:    DefaultImage,
			User:     "65534:65534",
			Hostname: "sandbox",
			// The work dir is the only writable path; the program runs there.
			WorkingDir: "/work",
			Env: []string{
				"PATH=/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp", "LANG=C.UTF-8", "XDG_CACHE_HOME=/tmp", "MALLOC_ARENA_MAX=4",
			},
			Entrypoint:      []string{"/usr/bin/ffmpeg"},
			Cmd:             []string{"-i", "in.mp4", "out.mp4"},
			AttachStdout:    true,
			AttachStderr:    true,
			NetworkDisabled: true,
			Labels:          map[string]string{"io.mediajobs.sandbox": "ffmpeg", "io.mediajobs.sandbox.owner": "worker-1"},
		}, &container.HostConfig{
			NetworkMode:    "none",
			IpcMode:        "none",
			ReadonlyRootfs: true,
			CapDrop:        []string{"ALL"},
			SecurityOpt:    []string{"no-new-privileges", "seccomp=" + profile},
			LogConfig:      container.LogConfig{Type: "none"},
			Tmpfs:          map[string]string{"/tmp": "rw,noexec,nosuid,nodev,mode=1777,size=67108864", "/dev/pts": "ro,noexec,nosuid,nodev,mode=0555,size=4k"},
			Mounts: []mount.Mount{{
				Type: mount.TypeBind, Source: "/var/lib/mediajobs/work/job_1", Target: "/work",
				BindOptions: &mount.BindOptions{NonRecursive: true},
			}},
			Resources: container.Resources{
				Memory: 4 << 30, MemorySwap: 4 << 30, NanoCPUs: 2e9, PidsLimit: &pids,
				Ulimits: []*container.Ulimit{
					{Name: "cpu", Soft: 120, Hard: 120},
					{Name: "fsize", Soft: 4 << 30, Hard: 4 << 30},
					{Name: "nofile", Soft: 1024, Hard: 1024},
					{Name: "core", Soft: 0, Hard: 0},
				},
			},
		}
}

func TestContainerConfig(t *testing.T) {
	t.Parallel()
	explicit := &sandbox.GPU{
		Devices: []sandbox.Mount{{Source: "/dev/nvidiactl", Target: "/dev/nvidiactl"}, {Source: "/dev/nvidia0", Target: "/dev/nvidia0"}},
		Libraries: []sandbox.Mount{
			{Source: "/usr/lib/x86_64-linux-gnu/libcuda.so.1", Target: "/usr/lib/x86_64-linux-gnu/libcuda.so.1"},
			{Source: "/opt/nvidia/libnvidia-encode.so.1", Target: "/opt/nvidia/libnvidia-encode.so.1"},
		},
	}
	tests := []struct {
		name   string
		cfg    Config
		user   string
		limits func(*sandbox.Limits)
		want   func(*container.Config, *container.HostConfig)
	}{
		{name: "CPU run"},
		{
			name: "caller's own user when not root",
			user: "1000:1000",
			want: func(c *container.Config, _ *container.HostConfig) { c.User = "1000:1000" },
		},
		{
			name: "image, program path and CPUs of the operator's choice",
			cfg:  Config{Image: "example/ffmpeg:7", Programs: map[string]string{sandbox.FFmpeg: "/usr/local/bin/ffmpeg"}, CPUs: 0.5},
			want: func(c *container.Config, h *container.HostConfig) {
				c.Image, c.Entrypoint, h.NanoCPUs = "example/ffmpeg:7", []string{"/usr/local/bin/ffmpeg"}, 5e8
			},
		},
		{
			name:   "file-size limit tighter than the byte cap",
			limits: func(l *sandbox.Limits) { l.FileSizeBytes = 1 << 20 },
			want: func(_ *container.Config, h *container.HostConfig) {
				h.Ulimits[1] = &container.Ulimit{Name: "fsize", Soft: 1 << 20, Hard: 1 << 20}
			},
		},
		{
			name:   "plan's limits",
			limits: func(l *sandbox.Limits) { l.MemoryBytes, l.Processes, l.JobBytes = 1<<30, 64, 20<<30 },
			want: func(_ *container.Config, h *container.HostConfig) {
				pids := int64(64)
				h.Memory, h.MemorySwap, h.PidsLimit = 1<<30, 1<<30, &pids
				h.Ulimits[1] = &container.Ulimit{Name: "fsize", Soft: 8 << 30, Hard: 8 << 30}
			},
		},
		{
			name: "every GPU through the toolkit",
			cfg:  Config{GPU: &GPU{}},
			want: func(_ *container.Config, h *container.HostConfig) {
				h.DeviceRequests = []container.DeviceRequest{{Driver: "nvidia", Count: -1, Capabilities: [][]string{{"gpu", "compute", "video", "utility"}}}}
			},
		},
		{
			name: "chosen GPUs through the toolkit",
			cfg:  Config{GPU: &GPU{DeviceIDs: []string{"1", "GPU-8f6c"}}},
			want: func(_ *container.Config, h *container.HostConfig) {
				h.DeviceRequests = []container.DeviceRequest{{Driver: "nvidia", DeviceIDs: []string{"1", "GPU-8f6c"}, Capabilities: [][]string{{"gpu", "compute", "video", "utility"}}}}
			},
		},
		{
			name: "GPU devices and libraries by hand",
			cfg:  Config{GPU: &GPU{Explicit: explicit}},
			want: func(c *container.Config, h *container.HostConfig) {
				h.Devices = []container.DeviceMapping{
					{PathOnHost: "/dev/nvidiactl", PathInContainer: "/dev/nvidiactl", CgroupPermissions: "rw"},
					{PathOnHost: "/dev/nvidia0", PathInContainer: "/dev/nvidia0", CgroupPermissions: "rw"},
				}
				h.Mounts = append(h.Mounts,
					mount.Mount{Type: mount.TypeBind, Source: "/usr/lib/x86_64-linux-gnu/libcuda.so.1", Target: "/usr/lib/x86_64-linux-gnu/libcuda.so.1", ReadOnly: true},
					mount.Mount{Type: mount.TypeBind, Source: "/opt/nvidia/libnvidia-encode.so.1", Target: "/opt/nvidia/libnvidia-encode.so.1", ReadOnly: true},
				)
				c.Env = append(c.Env, "LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu:/opt/nvidia")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.cfg.CPUs == 0 {
				tt.cfg.CPUs = 2
			}
			tt.cfg.Owner = "worker-1"
			sb, err := New(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			lim := limits()
			if tt.limits != nil {
				tt.limits(&lim)
			}
			user := tt.user
			if user == "" {
				user = "65534:65534"
			}
			program := sb.cfg.Programs[sandbox.FFmpeg]
			spec := sandbox.Spec{Dir: "/var/lib/mediajobs/work/job_1", Program: sandbox.FFmpeg, Args: []string{"-i", "in.mp4", "out.mp4"}}

			gotCfg, gotHost := sb.containerConfig(spec, program, lim, user)

			wantCfg, wantHost := wantCPU()
			if tt.want != nil {
				tt.want(wantCfg, wantHost)
			}
			if diff := cmp.Diff(wantCfg, gotCfg); diff != "" {
				t.Errorf("container.Config (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantHost, gotHost); diff != "" {
				t.Errorf("container.HostConfig (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
	}{
		{"relative program path", Config{Programs: map[string]string{sandbox.FFmpeg: "ffmpeg"}}},
		{"unclean program path", Config{Programs: map[string]string{sandbox.FFmpeg: "/usr/bin/../bin/ffmpeg"}}},
		{"negative CPUs", Config{CPUs: -1}},
		{"GPU device outside /dev", Config{GPU: &GPU{Explicit: &sandbox.GPU{Devices: []sandbox.Mount{{Source: "/dev/sda", Target: "/dev/sda"}}}}}},
		{"bad engine address", Config{Host: "::not a url"}},
	}
	for _, tt := range tests {
		if _, err := New(tt.cfg); err == nil {
			t.Errorf("%s: New(%+v) succeeded", tt.name, tt.cfg)
		}
	}
}

// Run refuses what it must refuse before it speaks to any engine.
func TestRunRefusesBeforeTheEngine(t *testing.T) {
	t.Parallel()
	sb, err := New(Config{Host: "tcp://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tests := []struct {
		name string
		spec sandbox.Spec
		want error
		msg  string
	}{
		{"program not allowed", sandbox.Spec{Dir: dir, Program: "/usr/bin/sh"}, sandbox.ErrProgramNotAllowed, "/usr/bin/sh"},
		{"relative work dir", sandbox.Spec{Dir: "work", Program: sandbox.FFmpeg}, nil, "not absolute"},
		{"missing work dir", sandbox.Spec{Dir: dir + "/missing", Program: sandbox.FFmpeg}, nil, "not a directory"},
	}
	for _, tt := range tests {
		_, err := sb.Run(context.Background(), tt.spec)
		if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: Run = %v, want an error with %q", tt.name, err, tt.msg)
		}
	}
}

// pingOnlyEngine answers the Engine API's ping and image inspection on loopback: a fake, since no
// engine runs here, to check what Available tells an operator.
func pingOnlyEngine(t *testing.T, image http.HandlerFunc) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/_ping", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Api-Version", "1.47")
		w.Write([]byte("OK"))
	})
	mux.HandleFunc("/", image)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return "tcp://" + strings.TrimPrefix(srv.URL, "http://")
}

func TestAvailableSaysWhatIsMissing(t *testing.T) {
	t.Parallel()
	notFound := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"message":"No such image: mediajobs/ffmpeg:bookworm"}`))
	}
	tests := []struct {
		name string
		host string
		want []string
	}{
		{"no engine", "tcp://127.0.0.1:1", []string{"no Docker engine answers at tcp://127.0.0.1:1"}},
		{"image not built", pingOnlyEngine(t, notFound), []string{`image "mediajobs/ffmpeg:bookworm" is not on the engine`, "docker build -t mediajobs/ffmpeg:bookworm adapters/dockersandbox"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sb, err := New(Config{Host: tt.host})
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()

			err = sb.Available(ctx)

			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("Available = %v, want ErrUnavailable", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Available = %q, want it to say %q", err, w)
				}
			}
		})
	}
}

func TestCheckGPUSaysWhatIsMissing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		gpu  *GPU
		want string
	}{
		{"no GPU configured", nil, "without a GPU"},
		{"explicit device gone", &GPU{Explicit: &sandbox.GPU{Devices: []sandbox.Mount{{Source: "/nonexistent/dev/nvidia0", Target: "/dev/nvidia0"}}}}, "/nonexistent/dev/nvidia0"},
	}
	if _, err := os.Stat("/dev/nvidia0"); err != nil {
		tests = append(tests, struct {
			name string
			gpu  *GPU
			want string
		}{"toolkit with no GPU on the host", &GPU{}, "/dev/nvidia0"})
	}
	for _, tt := range tests {
		sb, err := New(Config{Host: "tcp://127.0.0.1:1", GPU: tt.gpu})
		if err != nil {
			t.Fatal(err)
		}
		err = sb.CheckGPU(context.Background())
		if !errors.Is(err, sandbox.ErrNoGPU) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: CheckGPU = %v, want ErrNoGPU naming %q", tt.name, err, tt.want)
		}
		sb.Close()
	}
}

// TestRemoveLeftovers: the containers a killed worker left are removed at its next start, and
// only its own: another worker on the same engine keeps its running jobs.
func TestRemoveLeftovers(t *testing.T) {
	t.Parallel()
	owner := "leftovers-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	mine := available(t, Config{Owner: owner})
	theirs := available(t, Config{Owner: owner + "-other"})
	ctx := context.Background()
	create := func(s *Sandbox) string {
		t.Helper()
		cfg, host := s.containerConfig(sandbox.Spec{Dir: t.TempDir(), Args: []string{"-version"}}, sandbox.FFmpeg, limits(), "65534:65534")
		c, err := s.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: host})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = s.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true}) })
		return c.ID
	}
	left := []string{create(mine), create(mine)}
	kept := create(theirs)

	n, err := mine.RemoveLeftovers(ctx)
	if err != nil || n != len(left) {
		t.Fatalf("RemoveLeftovers = %d, %v; want %d, nil", n, err, len(left))
	}
	for _, id := range left {
		if _, err := mine.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
			t.Errorf("leftover %s: inspect = %v; want not found", id, err)
		}
	}
	if _, err := theirs.cli.ContainerInspect(ctx, kept, client.ContainerInspectOptions{}); err != nil {
		t.Errorf("another owner's container %s: %v; want it kept", kept, err)
	}
	if n, err := mine.RemoveLeftovers(ctx); err != nil || n != 0 {
		t.Errorf("second RemoveLeftovers = %d, %v; want 0, nil", n, err)
	}
}

// available is a Docker sandbox of cfg that answers, or the test ends (testenv.Missing).
func available(t *testing.T, cfg Config) *Sandbox { return availableTB(t, cfg) }

// availableTB is available for a test or a benchmark.
func availableTB(t testing.TB, cfg Config) *Sandbox {
	t.Helper()
	sb, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	if err := sb.Available(context.Background()); err != nil {
		testenv.Missing(t, "the Docker sandbox (the engine, and the image make images builds)", err)
	}
	return sb
}

// TestKillLandsWhileTheEngineIsSlow: the engine is reached through a proxy that holds every
// kill request until the test ends, as a loaded engine delays one. A run that passes its byte
// cap still stops at once, killed from this host, and reports the cap.
func TestKillLandsWhileTheEngineIsSlow(t *testing.T) {
	t.Parallel()
	available(t, Config{})
	release := make(chan struct{})
	var held atomic.Int32
	engine := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.Out.URL.Scheme, r.Out.URL.Host = "http", "docker" },
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", "/var/run/docker.sock")
		}},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/kill") {
			held.Add(1)
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		engine.ServeHTTP(w, r)
	}))
	// Cleanups run last in, first out: the held kills go on before the server closes.
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	sb := available(t, Config{Host: "tcp://" + srv.Listener.Addr().String()})

	dir := sandboxtest.WorkDir(t)
	const cap = 20 << 20
	res, err := sb.Run(context.Background(), sandbox.Spec{Dir: dir, Program: sandbox.FFmpeg, Timeout: 2 * time.Minute, Limits: sandbox.Limits{JobBytes: cap},
		Args: sandboxtest.FFmpegArgs("-f", "lavfi", "-i", "testsrc=size=1280x720:rate=25", "-c:v", "rawvideo", "-f", "segment", "-segment_time", "0.1", "out%05d.nut")})
	if err != nil {
		t.Fatal(err)
	}
	if res.LimitExceeded == nil || res.LimitExceeded.Limit != sandbox.LimitJobBytes {
		t.Fatalf("LimitExceeded = %+v, ExitCode %d; want the byte cap", res.LimitExceeded, res.ExitCode)
	}
	if held.Load() == 0 {
		t.Fatal("no kill reached the engine: the proxy held nothing, so the test proves nothing")
	}
	// Raw 720p writes about 70 MB a second here, and the source is endless: without the host's
	// kill the run goes on to its 2-minute timeout, gigabytes past the cap. Ten caps leaves the
	// host's kill the time a loaded machine takes to see the cap passed (a CI run wrote 2.5 caps).
	if used, _ := sandboxtest.DirUsage(t, dir); used > 10*cap {
		t.Errorf("the run wrote %d bytes under a %d cap with the engine's kill held: the host's kill did not land", used, cap)
	}
}
