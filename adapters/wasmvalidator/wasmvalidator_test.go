package wasmvalidator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/wasmvalidator"
	"github.com/mediajobs/mediajobs/validator"
	"github.com/mediajobs/mediajobs/validator/validatortest"
)

// wasm is validator.wasm built from the current sources by TestMain. Building it here, rather
// than reading validator/cmd/wasm/validator.wasm, keeps `go test` self-sufficient and never
// compares the native validator with a stale module.
var wasm []byte

func TestMain(m *testing.M) {
	var err error
	if wasm, err = validatortest.BuildWASM(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// corpusCase is one line of the shared corpus. Whether a command should be valid is the
// validator's own tests' business; here only the agreement with native matters.
type corpusCase = validatortest.Case

func corpus(tb testing.TB) []corpusCase {
	tb.Helper()
	cases, err := validatortest.Corpus()
	if err != nil {
		tb.Fatalf("load corpus: %v", err)
	}
	return cases
}

func nativeJSON(tb testing.TB, command string, opts validator.Options) []byte {
	tb.Helper()
	b, err := json.Marshal(validator.Validate(command, opts))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

type testBundle struct {
	engine *wasmvalidator.Engine
}

func setup(t *testing.T, cfg wasmvalidator.Config) *testBundle {
	t.Helper()
	ctx := t.Context()
	e, err := wasmvalidator.New(ctx, wasm, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	return &testBundle{engine: e}
}

func TestCorpusMatchesNative(t *testing.T) {
	t.Parallel()
	configs := []struct {
		name string
		cfg  wasmvalidator.Config
	}{
		{name: "default"},
		{name: "interruptible", cfg: wasmvalidator.Config{Interruptible: true}},
	}
	for _, tc := range configs {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tc.cfg)
			for _, c := range corpus(t) {
				t.Run(c.Name, func(t *testing.T) {
					t.Parallel()
					want := nativeJSON(t, c.Command, c.Options)
					got, err := b.engine.ValidateJSON(t.Context(), c.Command, c.Options)
					if err != nil {
						t.Fatalf("ValidateJSON(%q): %v", c.Command, err)
					}
					if !bytes.Equal(got, want) {
						t.Errorf("ValidateJSON(%q)\n wasm   %s\n native %s", c.Command, got, want)
					}
					// The decoded Result must say the same as the bytes.
					res, err := b.engine.Validate(t.Context(), c.Command, c.Options)
					if err != nil {
						t.Fatalf("Validate(%q): %v", c.Command, err)
					}
					again, err := json.Marshal(res)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(again, want) {
						t.Errorf("Validate(%q) marshals to\n %s\nwant\n %s", c.Command, again, want)
					}
				})
			}
		})
	}
}

// TestRealWorldAndAttacksMatchNative runs the real-world commands and the attacks through the
// module with and without inputs: every answer must be the native one, byte for byte.
func TestRealWorldAndAttacksMatchNative(t *testing.T) {
	t.Parallel()
	b := setup(t, wasmvalidator.Config{})
	runs, err := validatortest.Runs()
	if err != nil {
		t.Fatal(err)
	}
	// AppendValidateJSON appends to one buffer reused from run to run, after a prefix it keeps.
	const prefix = "answer: "
	var buf []byte
	for _, r := range runs {
		want := nativeJSON(t, r.Command, r.Options)
		got, err := b.engine.ValidateJSON(t.Context(), r.Command, r.Options)
		if err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: wasm %s, native %s", r.Name, got, want)
		}
		buf, err = b.engine.AppendValidateJSON(t.Context(), append(buf[:0], prefix...), r.Command, r.Options)
		if err != nil {
			t.Fatalf("%s: AppendValidateJSON: %v", r.Name, err)
		}
		if want := append([]byte(prefix), want...); !bytes.Equal(buf, want) {
			t.Errorf("%s: AppendValidateJSON gives %s, want %s", r.Name, buf, want)
		}
	}
}

// TestRequestSizes crosses the engine's request buffer size, so the buffer is replaced, and the
// module's request limit, which must be an error rather than a result.
func TestRequestSizes(t *testing.T) {
	t.Parallel()
	b := setup(t, wasmvalidator.Config{Instances: 1})
	tests := []struct {
		name    string
		command string
		wantErr bool
	}{
		{name: "small", command: "ffmpeg -i in.mp4 out.mp4"},
		{name: "above the first buffer", command: "ffmpeg -i in.mp4 -metadata title=" + strings.Repeat("a", 10_000) + " out.mp4"},
		{name: "small again", command: "ffmpeg -i in.mp4 out.webm"},
		{name: "above the module limit", command: "ffmpeg -i in.mp4 -metadata title=" + strings.Repeat("a", 2<<20) + " out.mp4", wantErr: true},
		{name: "after the refusal", command: "ffmpeg -i in.mp4 out.mkv"},
	}
	// Not parallel: the cases share the one instance in order.
	for _, tt := range tests {
		got, err := b.engine.ValidateJSON(t.Context(), tt.command, validator.Options{})
		if tt.wantErr {
			if err == nil {
				t.Errorf("%s: no error, want one", tt.name)
			}
			// On an error AppendValidateJSON gives dst back as it was.
			dst := []byte("kept")
			if out, err := b.engine.AppendValidateJSON(t.Context(), dst, tt.command, validator.Options{}); err == nil || string(out) != "kept" {
				t.Errorf("%s: AppendValidateJSON gives %q, %v; want %q and an error", tt.name, out, err, dst)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if want := nativeJSON(t, tt.command, validator.Options{}); !bytes.Equal(got, want) {
			t.Errorf("%s: wasm %.200s, native %.200s", tt.name, got, want)
		}
	}
}

// TestConcurrent runs the corpus from more goroutines than the pool keeps instances, so calls
// share instances, borrow fresh ones and close the surplus, and checks every answer.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	b := setup(t, wasmvalidator.Config{Instances: 2})
	cases := corpus(t)
	want := make([][]byte, len(cases))
	for i, c := range cases {
		want[i] = nativeJSON(t, c.Command, c.Options)
	}
	const workers, rounds = 16, 3
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				for i := range cases {
					// Each worker starts at a different case so that different commands run at once.
					c := cases[(i+w*7+r)%len(cases)]
					got, err := b.engine.ValidateJSON(t.Context(), c.Command, c.Options)
					if err != nil {
						errs <- fmt.Errorf("worker %d: %q: %w", w, c.Command, err)
						return
					}
					if exp := want[(i+w*7+r)%len(cases)]; !bytes.Equal(got, exp) {
						errs <- fmt.Errorf("worker %d: %q: got %s, want %s", w, c.Command, got, exp)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestValidatorsAgree(t *testing.T) {
	t.Parallel()
	b := setup(t, wasmvalidator.Config{})
	validators := map[string]wasmvalidator.Validator{"native": wasmvalidator.Native, "wasm": b.engine}
	const command = "ffmpeg -i in.mp4 -c:v libx264 out.mp4"
	var answers []string
	for _, name := range []string{"native", "wasm"} {
		res, err := validators[name].Validate(t.Context(), command, validator.Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		j, _ := json.Marshal(res)
		answers = append(answers, string(j))
	}
	if answers[0] != answers[1] {
		t.Errorf("native %s, wasm %s", answers[0], answers[1])
	}
}

func TestNewRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		wasm []byte
		cfg  wasmvalidator.Config
	}{
		{name: "not wasm", wasm: []byte("ffmpeg")},
		// An empty but valid module: it compiles and lacks every export.
		{name: "missing exports", wasm: []byte("\x00asm\x01\x00\x00\x00")},
		// Below the Go runtime's initial memory, so the first instance cannot start.
		{name: "memory limit too low", wasm: wasm, cfg: wasmvalidator.Config{MemoryLimitPages: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, err := wasmvalidator.New(t.Context(), tt.wasm, tt.cfg)
			if err == nil {
				e.Close(context.Background())
				t.Fatal("New succeeded, want an error")
			}
		})
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "validator.wasm")
	if err := os.WriteFile(path, wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := wasmvalidator.Load(t.Context(), path, wasmvalidator.Config{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	defer e.Close(context.Background())
	if e.Size() != len(wasm) {
		t.Errorf("Size() = %d, want %d", e.Size(), len(wasm))
	}
	if _, err := wasmvalidator.Load(t.Context(), filepath.Join(t.TempDir(), "absent.wasm"), wasmvalidator.Config{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(absent) error = %v, want os.ErrNotExist", err)
	}
}

func TestContextAndClose(t *testing.T) {
	t.Parallel()
	b := setup(t, wasmvalidator.Config{})
	done, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name string
		v    wasmvalidator.Validator
	}{
		{name: "native", v: wasmvalidator.Native},
		{name: "wasm", v: b.engine},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := tt.v.Validate(done, "ffmpeg -i a.mp4 b.mp4", validator.Options{}); !errors.Is(err, context.Canceled) {
				t.Errorf("Validate(cancelled ctx) error = %v, want context.Canceled", err)
			}
		})
	}

	e, err := wasmvalidator.New(t.Context(), wasm, wasmvalidator.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := e.Validate(t.Context(), "ffmpeg -i a.mp4 b.mp4", validator.Options{}); !errors.Is(err, wasmvalidator.ErrClosed) {
		t.Errorf("Validate after Close error = %v, want ErrClosed", err)
	}
}

// benchMix is what the benchmarks validate: the shared corpus, the real-world commands with and
// without their inputs, and the attacks.
func benchMix(tb testing.TB) []corpusCase {
	mix := corpus(tb)
	real, err := validatortest.RealWorld()
	if err != nil {
		tb.Fatal(err)
	}
	for _, c := range real {
		mix = append(mix, corpusCase{Command: c.Command}, corpusCase{Command: c.Command, Options: validatortest.Staged(c.Staged())})
	}
	attacks, err := validatortest.Attacks()
	if err != nil {
		tb.Fatal(err)
	}
	for _, c := range attacks {
		mix = append(mix, corpusCase{Command: c.Command})
	}
	return mix
}

// BenchmarkNativeVsWazero validates the mix natively (Validate and the JSON answer) and through
// a pooled Engine (one instance per call, reused; the command copied once into the module) in
// the same run, and reports both rates and their ratio. The goal is wazero within 5x of native.
func BenchmarkNativeVsWazero(b *testing.B) {
	mix := benchMix(b)
	ctx := b.Context()
	e, err := wasmvalidator.New(ctx, wasm, wasmvalidator.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(context.Background())
	// Warm both: the module's first calls grow its heap.
	for _, c := range mix {
		if _, err := e.ValidateJSON(ctx, c.Command, c.Options); err != nil {
			b.Fatal(err)
		}
	}
	// Each half appends its answers to a buffer it reuses, as a service answering requests
	// would.
	var native, wazero time.Duration
	var buf, wbuf []byte
	for b.Loop() {
		start := time.Now()
		for _, c := range mix {
			r := validator.Validate(c.Command, c.Options)
			buf = r.AppendJSON(buf[:0])
		}
		native += time.Since(start)
		start = time.Now()
		for _, c := range mix {
			if wbuf, err = e.AppendValidateJSON(ctx, wbuf[:0], c.Command, c.Options); err != nil {
				b.Fatal(err)
			}
		}
		wazero += time.Since(start)
	}
	n := float64(b.N * len(mix))
	b.ReportMetric(n/native.Seconds(), "native-validations/s")
	b.ReportMetric(n/wazero.Seconds(), "wazero-validations/s")
	b.ReportMetric(wazero.Seconds()/native.Seconds(), "wazero/native")
	b.ReportMetric(0, "ns/op")
}

// The two benchmarks below validate the whole mix per iteration, so their validations/s compare
// directly with BenchmarkNativeVsWazero's.
func BenchmarkNativeValidateCorpus(b *testing.B) {
	cases := benchMix(b)
	ctx := b.Context()
	for b.Loop() {
		for _, c := range cases {
			if _, err := wasmvalidator.Native.Validate(ctx, c.Command, c.Options); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N*len(cases))/b.Elapsed().Seconds(), "validations/s")
}

func BenchmarkWazeroValidateCorpus(b *testing.B) {
	cases := benchMix(b)
	ctx := b.Context()
	e, err := wasmvalidator.New(ctx, wasm, wasmvalidator.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(context.Background())
	for b.Loop() {
		for _, c := range cases {
			if _, err := e.ValidateJSON(ctx, c.Command, c.Options); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N*len(cases))/b.Elapsed().Seconds(), "validations/s")
	b.ReportMetric(float64(e.Size()), "wasm-bytes")
}

func BenchmarkWazeroValidateCorpusParallel(b *testing.B) {
	cases := corpus(b)
	ctx := b.Context()
	e, err := wasmvalidator.New(ctx, wasm, wasmvalidator.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(context.Background())
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			c := cases[i%len(cases)]
			if _, err := e.Validate(ctx, c.Command, c.Options); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "validations/s")
}

// BenchmarkWazeroNew is the cold start: compile the module and instantiate it once.
func BenchmarkWazeroNew(b *testing.B) {
	ctx := b.Context()
	for b.Loop() {
		e, err := wasmvalidator.New(ctx, wasm, wasmvalidator.Config{Instances: 1})
		if err != nil {
			b.Fatal(err)
		}
		e.Close(ctx)
	}
}
