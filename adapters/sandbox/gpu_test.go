package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

// fakeGPURoot builds a fake host tree for FindGPU: plain files stand in for device nodes and
// driver libraries (no GPU on this machine). Names ending in "/" are directories, "->" makes
// a symlink.
func fakeGPURoot(t *testing.T, paths ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, p := range paths {
		link, target, isLink := strings.Cut(p, "->")
		full := filepath.Join(root, link)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case isLink:
			err = os.Symlink(target, full)
		case strings.HasSuffix(p, "/"):
			err = os.MkdirAll(full, 0o755)
		default:
			err = os.WriteFile(full, []byte("fake "+p), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// fakeLinkerCache is `ldconfig -p` as a host with the NVIDIA driver prints it (a fake: no
// driver here), with 32-bit twins and an unrelated library.
const fakeLinkerCache = `7 libs found in cache ` + "`/etc/ld.so.cache'" + `
	libz.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libz.so.1
	libnvidia-ml.so.1 (libc6,x86-64) => /opt/nvidia/lib/libnvidia-ml.so.1
	libnvidia-encode.so.1 (libc6,x86-64) => /opt/nvidia/lib/libnvidia-encode.so.1
	libnvidia-encode.so.1 (libc6) => /opt/nvidia/lib32/libnvidia-encode.so.1
	libnvcuvid.so.1 (libc6,x86-64) => /opt/nvidia/lib/libnvcuvid.so.1
	libcuda.so.1 (libc6,x86-64) => /opt/nvidia/lib/libcuda.so.1
	libcuda.so (libc6,x86-64) => /opt/nvidia/lib/libcuda.so
	libcuda.so.1 (libc6) => /opt/nvidia/lib32/libcuda.so.1
`

var fakeDriverFiles = []string{
	"opt/nvidia/lib/libcuda.so.1", "opt/nvidia/lib/libcuda.so", "opt/nvidia/lib/libnvidia-encode.so.1",
	"opt/nvidia/lib/libnvcuvid.so.1", "opt/nvidia/lib/libnvidia-ml.so.1",
	"opt/nvidia/lib32/libcuda.so.1", "opt/nvidia/lib32/libnvidia-encode.so.1",
	"usr/lib/x86_64-linux-gnu/libz.so.1",
}

func cache(text string) func(context.Context) ([]byte, error) {
	return func(context.Context) ([]byte, error) { return []byte(text), nil }
}

func TestFindGPU(t *testing.T) {
	t.Parallel()
	fullDev := []string{
		"dev/nvidia0", "dev/nvidia1", "dev/nvidia10", "dev/nvidiactl", "dev/nvidia-uvm", "dev/nvidia-uvm-tools", "dev/nvidia-modeset",
		// Never passed: other devices, NVIDIA's MIG capability directory, names that only
		// look alike.
		"dev/sda", "dev/kmsg", "dev/nvidia-caps/", "dev/nvidia-caps/nvidia-cap1", "dev/nvidiafoo", "dev/nvidia0p1",
	}
	libs := []string{"/opt/nvidia/lib/libcuda.so.1", "/opt/nvidia/lib/libcuda.so", "/opt/nvidia/lib/libnvidia-encode.so.1", "/opt/nvidia/lib/libnvcuvid.so.1", "/opt/nvidia/lib/libnvidia-ml.so.1"}
	tests := []struct {
		name        string
		files       []string
		cfg         GPUConfig
		wantDevices []string
		wantLibs    []string
		wantErr     []string // substrings of the error, which must wrap ErrNoGPU
	}{
		{
			name:        "every GPU",
			files:       append(slices.Clone(fullDev), fakeDriverFiles...),
			cfg:         GPUConfig{LinkerCache: cache(fakeLinkerCache)},
			wantDevices: []string{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia10", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"},
			wantLibs:    libs,
		},
		{
			name:        "chosen GPUs",
			files:       append(slices.Clone(fullDev), fakeDriverFiles...),
			cfg:         GPUConfig{LinkerCache: cache(fakeLinkerCache), Indexes: []int{10, 1}},
			wantDevices: []string{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia1", "/dev/nvidia10", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"},
			wantLibs:    libs,
		},
		{
			name:        "optional devices absent",
			files:       append([]string{"dev/nvidia0", "dev/nvidiactl", "dev/nvidia-uvm"}, fakeDriverFiles...),
			cfg:         GPUConfig{LinkerCache: cache(fakeLinkerCache)},
			wantDevices: []string{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia0"},
			wantLibs:    libs,
		},
		{
			name:        "libraries listed by hand",
			files:       []string{"dev/nvidia0", "dev/nvidiactl", "dev/nvidia-uvm", "drv/libcuda.so.1", "drv/libnvidia-encode.so.1", "drv/libfoo.so"},
			cfg:         GPUConfig{Libraries: []string{"/drv/libcuda.so.1", "/drv/libnvidia-encode.so.1", "/drv/libfoo.so"}},
			wantDevices: []string{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia0"},
			wantLibs:    []string{"/drv/libcuda.so.1", "/drv/libnvidia-encode.so.1"},
		},
		{
			name:    "no GPU",
			files:   append([]string{"dev/nvidiactl", "dev/nvidia-uvm"}, fakeDriverFiles...),
			cfg:     GPUConfig{LinkerCache: cache(fakeLinkerCache)},
			wantErr: []string{"/dev/nvidia0"},
		},
		{
			name:    "chosen GPU absent",
			files:   append(slices.Clone(fullDev), fakeDriverFiles...),
			cfg:     GPUConfig{LinkerCache: cache(fakeLinkerCache), Indexes: []int{0, 3}},
			wantErr: []string{"/dev/nvidia3"},
		},
		{
			name:    "no control or UVM device",
			files:   append([]string{"dev/nvidia0", "dev/nvidia-uvm->nvidia0"}, fakeDriverFiles...),
			cfg:     GPUConfig{LinkerCache: cache(fakeLinkerCache)},
			wantErr: []string{"/dev/nvidiactl", "/dev/nvidia-uvm"},
		},
		{
			name:    "no driver",
			files:   fullDev,
			cfg:     GPUConfig{LinkerCache: cache(fakeLinkerCache)},
			wantErr: []string{"libcuda.so.1", "libnvidia-encode.so.1"},
		},
		{
			name:    "only 32-bit driver libraries",
			files:   append(slices.Clone(fullDev), fakeDriverFiles...),
			cfg:     GPUConfig{LinkerCache: cache("\tlibcuda.so.1 (libc6) => /opt/nvidia/lib32/libcuda.so.1\n\tlibnvidia-encode.so.1 (libc6) => /opt/nvidia/lib32/libnvidia-encode.so.1\n")},
			wantErr: []string{"libcuda.so.1", "libnvidia-encode.so.1"},
		},
		{
			name:    "linker cache unreadable",
			files:   fullDev,
			cfg:     GPUConfig{LinkerCache: func(context.Context) ([]byte, error) { return nil, errors.New("no ldconfig") }},
			wantErr: []string{"linker cache", "no ldconfig"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := fakeGPURoot(t, tt.files...)
			tt.cfg.Root = root

			gpu, err := FindGPU(context.Background(), tt.cfg)

			if tt.wantErr != nil {
				if !errors.Is(err, ErrNoGPU) {
					t.Fatalf("FindGPU error = %v, want ErrNoGPU", err)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not name %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("FindGPU: %v", err)
			}
			mounts := func(paths []string) []Mount {
				var out []Mount
				for _, p := range paths {
					out = append(out, Mount{Source: filepath.Join(root, p), Target: p})
				}
				return out
			}
			if diff := cmp.Diff(&GPU{Devices: mounts(tt.wantDevices), Libraries: mounts(tt.wantLibs)}, gpu); diff != "" {
				t.Errorf("FindGPU (-want +got):\n%s", diff)
			}
		})
	}
}

// fakeGPU is a GPU found in a fake tree whose libraries live outside /usr, so the sandbox must
// bind them.
func fakeGPU(t *testing.T) *GPU {
	t.Helper()
	root := fakeGPURoot(t, append([]string{"dev/nvidia0", "dev/nvidiactl", "dev/nvidia-uvm"}, fakeDriverFiles...)...)
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(root), 0o711); err != nil {
		t.Fatal(err)
	}
	gpu, err := FindGPU(context.Background(), GPUConfig{Root: root, LinkerCache: cache(fakeLinkerCache)})
	if err != nil {
		t.Fatal(err)
	}
	return gpu
}

func TestGPUArgs(t *testing.T) {
	t.Parallel()
	gpu := fakeGPU(t)
	sb, err := New(Config{GPU: gpu})
	if err != nil {
		t.Fatal(err)
	}
	args := sb.args(Spec{Program: FFmpeg}, Limits{}.withDefaults(time.Minute), runOpts{})
	joined := strings.Join(args, " ")

	devAt := slices.Index(args, "--dev")
	for _, d := range gpu.Devices {
		i := slices.Index(args, d.Source)
		if i < 1 || args[i-1] != "--dev-bind" || args[i+1] != d.Target || i < devAt {
			t.Errorf("device %s is not --dev-bind after --dev: %s", d.Target, joined)
		}
	}
	for _, l := range gpu.Libraries {
		if !strings.Contains(joined, "--ro-bind "+l.Source+" "+l.Target) {
			t.Errorf("library %s is not bound read-only: %s", l.Target, joined)
		}
	}
	for _, want := range []string{"--setenv LD_LIBRARY_PATH /opt/nvidia/lib", "--as=unlimited"} {
		if !strings.Contains(joined, want) {
			t.Errorf("args lack %q: %s", want, joined)
		}
	}

	cpu, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	cpuArgs := strings.Join(cpu.args(Spec{Program: FFmpeg}, Limits{}.withDefaults(time.Minute), runOpts{}), " ")
	for _, absent := range []string{"--dev-bind", "LD_LIBRARY_PATH", "--as=unlimited"} {
		if strings.Contains(cpuArgs, absent) {
			t.Errorf("a CPU sandbox's args hold %q: %s", absent, cpuArgs)
		}
	}
}

func TestNewRejectsGPUMountsOutsideTheirPlace(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		gpu  GPU
	}{
		{"device that is not NVIDIA's", GPU{Devices: []Mount{{"/dev/sda", "/dev/sda"}}}},
		{"device outside /dev", GPU{Devices: []Mount{{"/dev/nvidia0", "/work/nvidia0"}}}},
		{"device in a /dev subdirectory", GPU{Devices: []Mount{{"/dev/nvidia0", "/dev/x/nvidia0"}}}},
		{"relative device", GPU{Devices: []Mount{{"dev/nvidia0", "/dev/nvidia0"}}}},
		{"library over the work dir", GPU{Libraries: []Mount{{"/opt/libcuda.so.1", "/work/libcuda.so.1"}}}},
		{"library in /etc", GPU{Libraries: []Mount{{"/opt/libcuda.so.1", "/etc/libcuda.so.1"}}}},
		{"not a library", GPU{Libraries: []Mount{{"/etc/shadow", "/opt/shadow"}}}},
		{"unclean library path", GPU{Libraries: []Mount{{"/opt/../etc/libx.so", "/opt/libx.so"}}}},
	}
	for _, tt := range tests {
		if _, err := New(Config{GPU: &tt.gpu}); err == nil {
			t.Errorf("%s: New accepted %+v", tt.name, tt.gpu)
		}
	}
}

// TestGPUSandboxPassesOnlyNVIDIANodes runs real bubblewrap with a fake GPU: its device nodes are
// plain files, which is enough to see what the sandbox's /dev and library path hold.
func TestGPUSandboxPassesOnlyNVIDIANodes(t *testing.T) {
	t.Parallel()
	b := setupWith(t, Config{Programs: []string{"/usr/bin/sh"}, GPU: fakeGPU(t)})

	var out bytes.Buffer
	res := b.run(t, Spec{Program: "/usr/bin/sh", Stdout: &out, Args: []string{"-c",
		`ls /dev | tr '\n' ' '; echo; cat /opt/nvidia/lib/libcuda.so.1; echo; echo "$LD_LIBRARY_PATH"; ls /opt/nvidia`}})

	if res.ExitCode != 0 {
		t.Fatalf("probe exited %d: %s", res.ExitCode, res.StderrTail)
	}
	want := "core fd full null nvidia-uvm nvidia0 nvidiactl ptmx pts random shm stderr stdin stdout tty urandom zero \n" +
		"fake opt/nvidia/lib/libcuda.so.1\n" +
		"/opt/nvidia/lib\n" +
		"lib\n" // the 32-bit libraries were not chosen, so lib32 is absent
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("inside the GPU sandbox (-want +got):\n%s", diff)
	}
}

func TestCheckGPUWithoutGPU(t *testing.T) {
	t.Parallel()
	sb, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	err = sb.CheckGPU(context.Background())
	if !errors.Is(err, ErrNoGPU) || !strings.Contains(err.Error(), "Config.GPU") {
		t.Errorf("CheckGPU = %v, want ErrNoGPU naming Config.GPU", err)
	}
}

func TestCheckGPUNamesMissingDevice(t *testing.T) {
	t.Parallel()
	gpu := fakeGPU(t)
	sb, err := New(Config{GPU: gpu})
	if err != nil {
		t.Fatal(err)
	}
	gone := gpu.Devices[len(gpu.Devices)-1].Source
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	err = sb.CheckGPU(context.Background())
	if !errors.Is(err, ErrNoGPU) || !strings.Contains(err.Error(), gone) {
		t.Errorf("CheckGPU = %v, want ErrNoGPU naming %s", err, gone)
	}
}

// With fake device nodes and libraries, the real FFmpeg lists NVENC but cannot open it: the
// check must run that far and say so.
func TestCheckGPUTriesAnEncode(t *testing.T) {
	t.Parallel()
	b := setupWith(t, Config{GPU: fakeGPU(t)})

	err := b.sb.CheckGPU(context.Background())

	if !errors.Is(err, ErrNoGPU) {
		t.Fatalf("CheckGPU = %v, want ErrNoGPU", err)
	}
	if !strings.Contains(err.Error(), "test encode with") && !strings.Contains(err.Error(), "lists no NVENC encoder") {
		t.Errorf("CheckGPU = %v, want it to name the failed NVENC encode or the missing encoder", err)
	}
}

// fakeRunner answers CheckNVENC's runs from a table; a fake, for the parsing of -encoders that
// a real FFmpeg here always passes the same way.
type fakeRunner struct {
	encoders string
	encode   Result
}

func (f fakeRunner) Available(context.Context) error { return nil }
func (f fakeRunner) Run(_ context.Context, s Spec) (Result, error) {
	if slices.Contains(s.Args, "-encoders") {
		s.Stdout.Write([]byte(f.encoders))
		return Result{}, nil
	}
	return f.encode, nil
}

func TestCheckNVENC(t *testing.T) {
	t.Parallel()
	const listing = "Encoders:\n V..... = Video\n ------\n V....D libx264              libx264 H.264\n"
	tests := []struct {
		name    string
		runner  fakeRunner
		wantErr string
	}{
		{"no NVENC encoder", fakeRunner{encoders: listing}, "lists no NVENC encoder"},
		{"encode fails", fakeRunner{encoders: listing + " V....D hevc_nvenc           NVIDIA NVENC hevc encoder\n",
			encode: Result{ExitCode: 1, StderrTail: []byte("[hevc_nvenc @ 0x1] Cannot load libcuda.so.1\nError initializing output stream\n")}},
			"test encode with hevc_nvenc failed inside the sandbox (exit 1): Error initializing output stream"},
		{"working", fakeRunner{encoders: listing + " V....D h264_nvenc           NVIDIA NVENC H.264 encoder\n"}, ""},
	}
	for _, tt := range tests {
		err := CheckNVENC(context.Background(), tt.runner)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: CheckNVENC = %v, want nil", tt.name, err)
		case tt.wantErr != "" && (!errors.Is(err, ErrNoGPU) || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: CheckNVENC = %v, want ErrNoGPU with %q", tt.name, err, tt.wantErr)
		}
	}
}

// TestRealGPU runs FFmpeg on the GPU inside the sandbox, on a host with an NVIDIA GPU: a CUDA
// (NVDEC) decode of an H.264 file, which every NVIDIA data-centre GPU can do, proves that the
// device nodes and driver libraries the sandbox passes through are enough for CUDA; and, where
// the GPU has NVENC (the H100 and H200 have none), CheckGPU's test encode and an h264_nvenc
// encode. Whether the GPU has NVENC is asked of FFmpeg outside the sandbox, so that a sandbox
// that breaks NVENC still fails here.
func TestRealGPU(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/nvidia0"); err != nil {
		testenv.Unavailable(t, "an NVIDIA GPU (/dev/nvidia0 is absent)", nil)
	}
	gpu, err := FindGPU(context.Background(), GPUConfig{})
	if err != nil {
		t.Fatalf("FindGPU: %v", err)
	}
	b := setupWith(t, Config{GPU: gpu})
	clip, err := os.ReadFile(filepath.Join("testdata", "h264.mp4"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.dir, "in.mp4"), clip, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("CUDA decode", func(t *testing.T) {
		res := b.run(t, Spec{Args: ffmpegArgs("-hwaccel", "cuda", "-hwaccel_output_format", "cuda", "-i", "in.mp4", "-f", "null", "-")})
		if res.ExitCode != 0 {
			t.Fatalf("CUDA decode in the sandbox exited %d: %s", res.ExitCode, res.StderrTail)
		}
	})
	t.Run("NVENC", func(t *testing.T) {
		bare := exec.Command(FFmpeg, "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=1280x720:duration=1",
			"-c:v", "h264_nvenc", "-f", "null", "-")
		if out, err := bare.CombinedOutput(); err != nil {
			testenv.Unavailable(t, "NVENC on this GPU, even outside the sandbox (the H100 and H200 have none)", fmt.Sprintf("%v: %s", err, lastLine(out)))
		}
		if err := b.sb.CheckGPU(context.Background()); err != nil {
			t.Fatalf("CheckGPU: %v", err)
		}
		res := b.run(t, Spec{Args: ffmpegArgs("-f", "lavfi", "-i", "testsrc2=size=1280x720:duration=2", "-c:v", "h264_nvenc", "-y", "out.mp4")})
		if res.ExitCode != 0 {
			t.Fatalf("h264_nvenc encode exited %d: %s", res.ExitCode, res.StderrTail)
		}
	})
}
