package wasmvalidator

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/mediajobs/mediajobs/validator"
)

// Validator validates an FFmpeg command. The native validator (Native) and the WASM one (Engine)
// both satisfy it and answer every command alike.
type Validator interface {
	Validate(ctx context.Context, command string, opts validator.Options) (validator.Result, error)
}

// Func adapts a plain validate function, such as validator.Validate, to Validator.
type Func func(command string, opts validator.Options) validator.Result

// Validate calls f unless ctx is already done, as Engine does.
func (f Func) Validate(ctx context.Context, command string, opts validator.Options) (validator.Result, error) {
	if err := ctx.Err(); err != nil {
		return validator.Result{}, err
	}
	return f(command, opts), nil
}

// Native is the validator compiled into this binary.
var Native Validator = Func(validator.Validate)

// DefaultMemoryLimitPages caps each instance's linear memory at 64 MiB (64 KiB pages). The Go
// runtime in validator.wasm starts near 3 MiB and a validation allocates little; the cap is what
// stops a pathological command from taking the host's memory.
const DefaultMemoryLimitPages = 1024

// Config tunes an Engine. The zero value is ready to use.
type Config struct {
	// MemoryLimitPages caps each instance's memory in 64 KiB pages; 0 means
	// DefaultMemoryLimitPages.
	MemoryLimitPages uint32
	// Instances is how many idle instances the pool keeps; 0 means GOMAXPROCS. More concurrent
	// calls than this still run, each on an instance closed when it finishes.
	Instances int
	// CompilationCache, when set, shares compiled code between runtimes, e.g. a file cache that
	// saves the compilation on the next start of the process.
	CompilationCache wazero.CompilationCache
	// Interruptible makes a call stop when its ctx is done, even in the middle of the module's
	// code. It costs: wazero then checks for cancellation in every loop of the compiled code,
	// which made validations about 3.5x slower when measured. A validation is bounded by the
	// request size, so by default ctx is only checked before the call.
	Interruptible bool
}

// Engine runs validator.wasm. The module is compiled once; each call borrows an instance from a
// pool because a WASM instance runs one call at a time. An Engine is safe for concurrent use.
type Engine struct {
	runtime  wazero.Runtime
	compiled wazero.CompiledModule
	size     int

	mu     sync.RWMutex
	closed bool

	// idle are the instances waiting for a call, at most maxIdle of them. A slice under a mutex
	// rather than a buffered channel: a channel operation costs several times an uncontended
	// lock, and each call does two.
	idleMu  sync.Mutex
	idle    []*instance
	maxIdle int
}

// The module's exports, as documented in validator/cmd/wasm.
const (
	exportAlloc  = "alloc"
	exportFree   = "free"
	exportCheck  = "check"
	exportInit   = "_initialize"
	exportMemory = "memory"
)

// ErrClosed is returned by Validate after Close.
var ErrClosed = errors.New("wasmvalidator: engine closed")

// Load reads validator.wasm from path and returns an Engine running it.
func Load(ctx context.Context, path string, cfg Config) (*Engine, error) {
	wasm, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("wasmvalidator: %w (build it with `make wasm`)", err)
	}
	return New(ctx, wasm, cfg)
}

// New compiles wasm, the bytes of validator.wasm, and instantiates it once so that a wrong or
// broken module is reported here rather than on the first validation.
func New(ctx context.Context, wasm []byte, cfg Config) (*Engine, error) {
	if cfg.MemoryLimitPages == 0 {
		cfg.MemoryLimitPages = DefaultMemoryLimitPages
	}
	if cfg.Instances <= 0 {
		cfg.Instances = runtime.GOMAXPROCS(0)
	}
	rc := wazero.NewRuntimeConfig().
		WithMemoryLimitPages(cfg.MemoryLimitPages).
		WithCloseOnContextDone(cfg.Interruptible)
	if cfg.CompilationCache != nil {
		rc = rc.WithCompilationCache(cfg.CompilationCache)
	}
	r := wazero.NewRuntimeWithConfig(ctx, rc)
	e, err := newEngine(ctx, r, wasm, cfg)
	if err != nil {
		_ = r.Close(ctx)
		return nil, err
	}
	return e, nil
}

func newEngine(ctx context.Context, r wazero.Runtime, wasm []byte, cfg Config) (*Engine, error) {
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		return nil, fmt.Errorf("wasmvalidator: instantiate WASI: %w", err)
	}
	compiled, err := r.CompileModule(ctx, wasm)
	if err != nil {
		return nil, fmt.Errorf("wasmvalidator: compile: %w", err)
	}
	exports := compiled.ExportedFunctions()
	for _, name := range []string{exportInit, exportAlloc, exportFree, exportCheck} {
		if _, ok := exports[name]; !ok {
			return nil, fmt.Errorf("wasmvalidator: module does not export %s: is it validator.wasm, built with -buildmode=c-shared?", name)
		}
	}
	if _, ok := compiled.ExportedMemories()[exportMemory]; !ok {
		return nil, fmt.Errorf("wasmvalidator: module does not export %s", exportMemory)
	}
	e := &Engine{
		runtime:  r,
		compiled: compiled,
		size:     len(wasm),
		idle:     make([]*instance, 0, cfg.Instances),
		maxIdle:  cfg.Instances,
	}
	in, err := e.instantiate(ctx)
	if err != nil {
		return nil, err
	}
	e.idle = append(e.idle, in)
	return e, nil
}

// Size is the length in bytes of the module the Engine runs.
func (e *Engine) Size() int { return e.size }

// Validate validates command inside validator.wasm. The Result carries the JSON fields (Valid,
// Args, InferredOutputFormat, Error) only: Err and Plan stay nil because the module's answer is
// the endpoint's JSON, which has no room for them. Callers that need the plan use Native.
func (e *Engine) Validate(ctx context.Context, command string, opts validator.Options) (validator.Result, error) {
	out, err := e.ValidateJSON(ctx, command, opts)
	if err != nil {
		return validator.Result{}, err
	}
	var res validator.Result
	if err := json.Unmarshal(out, &res); err != nil {
		return validator.Result{}, fmt.Errorf("wasmvalidator: decode response %q: %w", out, err)
	}
	return res, nil
}

// ValidateJSON validates command and returns the module's answer as it is: the JSON of the
// Result, byte for byte what json.Marshal gives for the native Result. The command is copied
// once, straight into the module's memory; options, when there are any, follow in the compact
// form of validator.AppendOptions, which the module reads without encoding/json.
func (e *Engine) ValidateJSON(ctx context.Context, command string, opts validator.Options) ([]byte, error) {
	return e.AppendValidateJSON(ctx, nil, command, opts)
}

// AppendValidateJSON is ValidateJSON appending the answer to dst, so that a caller answering
// many commands reuses one buffer, as the native validator.Result.AppendJSON lets it. On an
// error dst is returned as it was.
func (e *Engine) AppendValidateJSON(ctx context.Context, dst []byte, command string, opts validator.Options) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return dst, err
	}
	// Holding the read lock for the call keeps Close from tearing the runtime down under it.
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return dst, ErrClosed
	}
	in, err := e.get(ctx)
	if err != nil {
		return dst, err
	}
	var rest []byte
	if !emptyOptions(&opts) {
		// Encoded into the instance's buffer, which no other call uses meanwhile.
		rest = validator.AppendOptions(in.opts[:0], &opts)
		in.opts = rest
	}
	out, err := in.call(ctx, dst, command, rest)
	if err != nil {
		// A trap or an interrupted call can leave the instance's heap in any state, so it is
		// not reused.
		_ = in.mod.Close(context.WithoutCancel(ctx))
		return dst, err
	}
	e.put(ctx, in)
	return out, nil
}

func emptyOptions(o *validator.Options) bool {
	return len(o.Inputs) == 0 && o.OutputFormat == "" && o.Compute == "" && o.Timeout == 0 && o.AssetURLPrefix == "" &&
		len(o.AllowPrivateNetworks) == 0
}

// Close releases the runtime and every instance. Validate calls after Close return ErrClosed.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	return e.runtime.Close(ctx)
}

func (e *Engine) get(ctx context.Context) (*instance, error) {
	e.idleMu.Lock()
	if n := len(e.idle); n > 0 {
		in := e.idle[n-1]
		e.idle[n-1] = nil
		e.idle = e.idle[:n-1]
		e.idleMu.Unlock()
		return in, nil
	}
	e.idleMu.Unlock()
	return e.instantiate(ctx)
}

func (e *Engine) put(ctx context.Context, in *instance) {
	e.idleMu.Lock()
	if len(e.idle) < e.maxIdle {
		e.idle = append(e.idle, in)
		e.idleMu.Unlock()
		return
	}
	e.idleMu.Unlock()
	// The pool is full: more calls ran at once than it keeps. Dropping the instance without
	// Close would leak it, since the runtime still holds it.
	_ = in.mod.Close(context.WithoutCancel(ctx))
}

// instance is one instantiated module with its exports looked up once.
type instance struct {
	mod   api.Module
	mem   api.Memory
	alloc api.Function
	free  api.Function
	check api.Function
	// stderr is where the module explains a refused call; it is reset before each call.
	stderr bytes.Buffer
	stack  [3]uint64
	// opts is the buffer options are encoded in, reused from call to call.
	opts []byte
	// reqPtr is the module buffer requests are written to, reqCap its size; 0 until the first
	// call.
	reqPtr, reqCap uint32
}

func (e *Engine) instantiate(ctx context.Context) (*instance, error) {
	in := &instance{}
	clock := &skippingClock{start: time.Now()}
	mc := wazero.NewModuleConfig().
		// Anonymous, so that any number of instances coexist in one runtime.
		WithName("").
		WithStartFunctions(exportInit).
		WithStderr(&in.stderr).
		// The Go runtime seeds its map hashing from here; real randomness keeps the module's
		// behaviour that of the native build rather than one fixed seed.
		WithRandSource(rand.Reader).
		WithSysWalltime().
		WithNanotime(clock.nanotime, 1).
		WithNanosleep(clock.sleep)
	mod, err := e.runtime.InstantiateModule(context.WithoutCancel(ctx), e.compiled, mc)
	if err != nil {
		return nil, fmt.Errorf("wasmvalidator: instantiate: %w%s", err, stderrNote(&in.stderr))
	}
	in.mod = mod
	in.mem = mod.ExportedMemory(exportMemory)
	in.alloc = mod.ExportedFunction(exportAlloc)
	in.free = mod.ExportedFunction(exportFree)
	in.check = mod.ExportedFunction(exportCheck)
	return in, nil
}

// call runs one request through check and appends the answer to dst. The request buffer is
// allocated once and reused while requests fit, and the answer lives in a buffer the module
// reuses, so a validation is one call into the module, one copy of the command in and one copy
// of the answer out.
func (in *instance) call(ctx context.Context, dst []byte, command string, rest []byte) ([]byte, error) {
	in.stderr.Reset()
	n := len(command) + len(rest)
	if in.reqPtr == 0 || n > int(in.reqCap) {
		if err := in.grow(ctx, n); err != nil {
			return nil, err
		}
	}
	if !in.mem.WriteString(in.reqPtr, command) || !in.mem.Write(in.reqPtr+uint32(len(command)), rest) {
		return nil, fmt.Errorf("wasmvalidator: alloc returned %#x, outside memory", in.reqPtr)
	}

	s := in.stack[:]
	s[0], s[1], s[2] = uint64(in.reqPtr), uint64(len(command)), uint64(len(rest))
	if err := in.check.CallWithStack(ctx, s); err != nil {
		return nil, fmt.Errorf("wasmvalidator: check: %w%s", err, stderrNote(&in.stderr))
	}
	packed := s[0]
	if packed == 0 {
		return nil, fmt.Errorf("wasmvalidator: check refused the request%s", stderrNote(&in.stderr))
	}

	ptr, size := uint32(packed>>32), uint32(packed)
	view, ok := in.mem.Read(ptr, size)
	if !ok {
		return nil, fmt.Errorf("wasmvalidator: response at %#x+%d is outside memory", ptr, size)
	}
	// view aliases linear memory, which the next call overwrites.
	return append(dst, view...), nil
}

// grow replaces the request buffer with one of at least n bytes.
func (in *instance) grow(ctx context.Context, n int) error {
	s := in.stack[:]
	if in.reqPtr != 0 {
		s[0] = uint64(in.reqPtr)
		if err := in.free.CallWithStack(ctx, s); err != nil {
			return fmt.Errorf("wasmvalidator: free: %w", err)
		}
		in.reqPtr, in.reqCap = 0, 0
	}
	size := max(minRequestBuffer, n)
	s[0] = uint64(size)
	if err := in.alloc.CallWithStack(ctx, s); err != nil {
		return fmt.Errorf("wasmvalidator: alloc: %w", err)
	}
	if s[0] == 0 {
		return fmt.Errorf("wasmvalidator: request of %d bytes refused as too large", n)
	}
	in.reqPtr, in.reqCap = uint32(s[0]), uint32(size)
	return nil
}

// minRequestBuffer fits the requests seen in practice, so most instances allocate once.
const minRequestBuffer = 4 << 10

// skippingClock is the module's monotonic clock: real time plus every sleep the module asked
// for. The Go runtime inside sleeps while it waits on its timers (GC, scavenger) and, being
// single-threaded, cannot do anything else meanwhile; a real sleep would stall the validation,
// and a no-op sleep with a real clock makes it spin until the deadline passes, measured at up
// to a second. Skipping ahead lets the timer fire at once, as if the wait were over.
type skippingClock struct {
	start time.Time
	skew  atomic.Int64
}

func (c *skippingClock) nanotime() int64 { return int64(time.Since(c.start)) + c.skew.Load() }

func (c *skippingClock) sleep(ns int64) {
	if ns > 0 {
		c.skew.Add(ns)
	}
}

func stderrNote(b *bytes.Buffer) string {
	msg := bytes.TrimSpace(b.Bytes())
	if len(msg) == 0 {
		return ""
	}
	return ": " + string(msg)
}
