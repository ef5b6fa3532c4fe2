package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrNoGPU is returned by FindGPU and CheckGPU when the GPU, its driver or NVENC is missing.
var ErrNoGPU = errors.New("sandbox: no usable NVIDIA GPU")

// GPU is what a GPU sandbox passes through, and nothing else of /dev or of the driver: the
// NVIDIA device nodes, and the driver libraries FFmpeg's NVENC, NVDEC and CUDA filters load.
type GPU struct {
	Devices   []Mount // bound read-write: a device node is useless read-only
	Libraries []Mount // bound read-only
}

// Mount is a host path and the path it appears at inside the sandbox.
type Mount struct {
	Source, Target string
}

// GPUConfig says where FindGPU looks. The zero value finds every GPU of this host through /dev
// and the dynamic linker's cache.
type GPUConfig struct {
	// Root is prefixed to every host path looked at; "" is "/". Tests point it at a fake tree.
	Root string
	// Indexes picks GPUs by the N of /dev/nvidiaN; empty is all of them.
	Indexes []int
	// Libraries lists driver libraries by path (as seen inside, without Root) instead of the
	// linker cache, for drivers installed outside it.
	Libraries []string
	// LinkerCache returns what `ldconfig -p` prints; nil runs ldconfig.
	LinkerCache func(ctx context.Context) ([]byte, error)
}

var (
	// Device nodes besides /dev/nvidiaN. nvidiactl and nvidia-uvm are needed by every CUDA
	// context, which NVENC opens; the others are passed when present.
	requiredGPUDevices = []string{"nvidiactl", "nvidia-uvm"}
	optionalGPUDevices = []string{"nvidia-uvm-tools", "nvidia-modeset"}
	gpuDeviceName      = regexp.MustCompile(`^nvidia([0-9]+)$`)

	// Driver libraries by soname stem: FFmpeg dlopens libcuda.so.1 and libnvidia-encode.so.1
	// for NVENC, libnvcuvid.so.1 for NVDEC; CUDA JIT-compiles FFmpeg's filter kernels with the
	// ptxjitcompiler (whose compiler moved to gpucomp in recent drivers); NVML reports usage.
	requiredGPULibraries = []string{"libcuda.so", "libnvidia-encode.so"}
	optionalGPULibraries = []string{"libnvcuvid.so", "libnvidia-ptxjitcompiler.so", "libnvidia-gpucomp.so", "libnvidia-ml.so"}
)

// FindGPU lists the NVIDIA device nodes and driver libraries to pass through. The error names
// everything required that is missing.
func FindGPU(ctx context.Context, cfg GPUConfig) (*GPU, error) {
	root := cfg.Root
	if root == "" {
		root = "/"
	}
	host := func(p string) string { return filepath.Join(root, p) }
	var gpu GPU
	var missing []string

	entries, err := os.ReadDir(host("/dev"))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoGPU, err)
	}
	var cards []int
	for _, e := range entries {
		m := gpuDeviceName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		n, err := strconv.Atoi(m[1])
		if err == nil && (len(cfg.Indexes) == 0 || slices.Contains(cfg.Indexes, n)) {
			cards = append(cards, n)
		}
	}
	slices.Sort(cards)
	for _, n := range cfg.Indexes {
		if !slices.Contains(cards, n) {
			missing = append(missing, "/dev/nvidia"+strconv.Itoa(n))
		}
	}
	if len(cfg.Indexes) == 0 && len(cards) == 0 {
		missing = append(missing, "/dev/nvidia0 (or any /dev/nvidiaN)")
	}
	addDevice := func(name string, required bool) {
		p := "/dev/" + name
		fi, err := os.Lstat(host(p))
		switch {
		case err == nil && fi.Mode()&(os.ModeSymlink|os.ModeDir) == 0:
			gpu.Devices = append(gpu.Devices, Mount{Source: host(p), Target: p})
		case required:
			missing = append(missing, p)
		}
	}
	for _, n := range requiredGPUDevices {
		addDevice(n, true)
	}
	for _, n := range cards {
		addDevice("nvidia"+strconv.Itoa(n), true)
	}
	for _, n := range optionalGPUDevices {
		addDevice(n, false)
	}

	libs := cfg.Libraries
	if libs == nil {
		listing := cfg.LinkerCache
		if listing == nil {
			listing = ldconfigCache
		}
		out, err := listing(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: read the linker cache: %v", ErrNoGPU, err)
		}
		libs = driverLibraries(out)
	}
	for _, stem := range append(slices.Clone(requiredGPULibraries), optionalGPULibraries...) {
		found := false
		for _, p := range libs {
			if !isLibrary(filepath.Base(p), stem) {
				continue
			}
			if _, err := os.Stat(host(p)); err != nil {
				continue
			}
			found = true
			gpu.Libraries = append(gpu.Libraries, Mount{Source: host(p), Target: p})
		}
		if !found && slices.Contains(requiredGPULibraries, stem) {
			missing = append(missing, stem+".1 (NVIDIA driver library)")
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: missing %s", ErrNoGPU, strings.Join(missing, ", "))
	}
	return &gpu, nil
}

// isLibrary tells whether file is the library stem (libcuda.so) or a version of it.
func isLibrary(file, stem string) bool {
	return file == stem || strings.HasPrefix(file, stem+".")
}

// driverLibraries picks the NVIDIA driver libraries of this architecture's word size out of
// `ldconfig -p`, whose lines read "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/.../libcuda.so.1".
// 32-bit libraries, listed as plain "(libc6)" on a 64-bit host, would not load into FFmpeg.
func driverLibraries(ldconfig []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(ldconfig))
	for sc.Scan() {
		name, rest, ok := strings.Cut(strings.TrimSpace(sc.Text()), " (")
		if !ok {
			continue
		}
		flags, path, ok := strings.Cut(rest, ") => ")
		if !ok || !filepath.IsAbs(path) || strings.Contains(flags, ",") != (strconv.IntSize == 64) {
			continue
		}
		for _, stem := range append(slices.Clone(requiredGPULibraries), optionalGPULibraries...) {
			if isLibrary(name, stem) && !slices.Contains(out, path) {
				out = append(out, path)
			}
		}
	}
	return out
}

func ldconfigCache(ctx context.Context) ([]byte, error) {
	for _, p := range []string{"/usr/sbin/ldconfig", "/sbin/ldconfig"} {
		if _, err := os.Stat(p); err == nil {
			return exec.CommandContext(ctx, p, "-p").Output()
		}
	}
	return nil, errors.New("ldconfig not found")
}

// checked validates a GPU built by hand as FindGPU would have built it: devices only under
// /dev and named nvidia*, every path absolute and clean.
func (g *GPU) checked() (*GPU, error) {
	c := &GPU{Devices: slices.Clone(g.Devices), Libraries: slices.Clone(g.Libraries)}
	for _, d := range c.Devices {
		if !cleanAbs(d.Source) || !cleanAbs(d.Target) || filepath.Dir(d.Target) != "/dev" || !strings.HasPrefix(filepath.Base(d.Target), "nvidia") {
			return nil, fmt.Errorf("sandbox: GPU device %q → %q must be a clean absolute path mounted at /dev/nvidia*", d.Source, d.Target)
		}
	}
	for _, l := range c.Libraries {
		if !cleanAbs(l.Source) || !cleanAbs(l.Target) || !strings.Contains(filepath.Base(l.Target), ".so") {
			return nil, fmt.Errorf("sandbox: GPU library %q → %q must be a clean absolute path of a shared library", l.Source, l.Target)
		}
		for _, reserved := range []string{WorkDir, "/tmp", "/proc", "/dev", "/etc"} {
			if l.Target == reserved || isUnder(l.Target, reserved) {
				return nil, fmt.Errorf("sandbox: GPU library target %q is inside %s", l.Target, reserved)
			}
		}
	}
	return c, nil
}

func cleanAbs(p string) bool { return filepath.IsAbs(p) && filepath.Clean(p) == p }

// devices are the nodes to bind; nil for a CPU sandbox.
func (g *GPU) devices() []Mount {
	if g == nil {
		return nil
	}
	return g.Devices
}

// boundLibraries are the libraries the sandbox must bind: those the read-only /usr does not
// already show at the same path (on a merged-/usr host, every library the distribution's
// driver package installs).
func (g *GPU) boundLibraries() []Mount {
	if g == nil {
		return nil
	}
	var out []Mount
	for _, l := range g.Libraries {
		if real, err := filepath.EvalSymlinks(l.Source); err == nil && l.Source == l.Target && isUnder(real, "/usr") {
			continue
		}
		out = append(out, l)
	}
	return out
}

// libraryPath lists the directories of the bound libraries, which the host's linker cache
// inside may not name.
func (g *GPU) libraryPath() string {
	var dirs []string
	for _, l := range g.boundLibraries() {
		if d := filepath.Dir(l.Target); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return strings.Join(dirs, ":")
}

// CheckGPU verifies, at worker start, that the configured device nodes still exist and that
// FFmpeg inside this sandbox lists an NVENC encoder and can open it.
func (sb *Sandbox) CheckGPU(ctx context.Context) error {
	if sb.cfg.GPU == nil {
		return fmt.Errorf("%w: the sandbox was built without a GPU (set Config.GPU from FindGPU)", ErrNoGPU)
	}
	if err := checkDevices(sb.cfg.GPU.Devices); err != nil {
		return err
	}
	return CheckNVENC(ctx, sb)
}

func checkDevices(devs []Mount) error {
	var missing []string
	for _, d := range devs {
		if _, err := os.Stat(d.Source); err != nil {
			missing = append(missing, d.Source)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: device nodes missing: %s", ErrNoGPU, strings.Join(missing, ", "))
	}
	return nil
}

// NVENCEncoders are FFmpeg's NVIDIA encoders; a GPU job uses one of them.
var NVENCEncoders = []string{"h264_nvenc", "hevc_nvenc", "av1_nvenc"}

// CheckNVENC runs FFmpeg in r: it must list an NVENC encoder (`ffmpeg -hide_banner -encoders`),
// and encode one frame with it, which proves the devices and driver libraries are reachable
// inside. Every sandbox implementation's CheckGPU ends with it.
func CheckNVENC(ctx context.Context, r Runner) error {
	dir, err := os.MkdirTemp("", "sandbox-gpucheck-")
	if err != nil {
		return fmt.Errorf("sandbox: gpu check: %w", err)
	}
	defer os.RemoveAll(dir)
	var out bytes.Buffer
	res, err := r.Run(ctx, Spec{Dir: dir, Program: FFmpeg, Args: []string{"-hide_banner", "-encoders"}, Timeout: 30 * time.Second, Stdout: &out})
	if err != nil {
		return fmt.Errorf("sandbox: gpu check: %w", err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%w: ffmpeg -encoders exited %d: %s", ErrNoGPU, res.ExitCode, lastLine(res.StderrTail))
	}
	var listed []string
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && slices.Contains(NVENCEncoders, f[1]) {
			listed = append(listed, f[1])
		}
	}
	if len(listed) == 0 {
		return fmt.Errorf("%w: ffmpeg lists no NVENC encoder (%s); install an FFmpeg built with NVENC", ErrNoGPU, strings.Join(NVENCEncoders, ", "))
	}
	res, err = r.Run(ctx, Spec{Dir: dir, Program: FFmpeg, Timeout: time.Minute, Args: []string{
		"-hide_banner", "-nostdin", "-loglevel", "error",
		"-f", "lavfi", "-i", "color=size=256x256:rate=1:duration=1", "-frames:v", "1",
		"-c:v", listed[0], "-f", "null", "-",
	}})
	if err != nil {
		return fmt.Errorf("sandbox: gpu check: %w", err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%w: a test encode with %s failed inside the sandbox (exit %d): %s", ErrNoGPU, listed[0], res.ExitCode, lastLine(res.StderrTail))
	}
	return nil
}

// lastLine is the last non-empty line of FFmpeg's stderr, where it says why it stopped.
func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
