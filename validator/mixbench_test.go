package validator

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"
)

// benchMix is the mix of adapters/wasmvalidator's BenchmarkNativeVsWazero: the corpus, every
// real-world command without and with its inputs staged, and every attack.
func benchMix(tb testing.TB) []corpusCase {
	mix := loadCorpus(tb)
	readLines := func(name string, each func([]byte)) {
		f, err := os.Open("testdata/" + name)
		if err != nil {
			tb.Fatal(err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if len(sc.Bytes()) > 0 {
				each(sc.Bytes())
			}
		}
	}
	readLines("realworld.jsonl", func(line []byte) {
		var c struct {
			Command        string   `json:"command"`
			RequiredInputs []string `json:"requiredInputs"`
			Inputs         []string `json:"inputs"`
		}
		if err := json.Unmarshal(line, &c); err != nil {
			tb.Fatal(err)
		}
		staged := c.Inputs
		if staged == nil {
			staged = c.RequiredInputs
		}
		opts := Options{Inputs: map[string]Input{}}
		for _, n := range staged {
			opts.Inputs[n] = Input{Inline: true, ContentSize: 100}
		}
		mix = append(mix, corpusCase{Command: c.Command}, corpusCase{Command: c.Command, Options: opts})
	})
	readLines("attacks.jsonl", func(line []byte) {
		var c corpusCase
		if err := json.Unmarshal(line, &c); err != nil {
			tb.Fatal(err)
		}
		mix = append(mix, corpusCase{Command: c.Command})
	})
	return mix
}

// BenchmarkMix validates the mix and appends each answer's JSON, as the native service does.
// The Mix benchmarks also run as WASM, timing the module's own work step by step (wazero has no
// profiler): with the wazero CLI on PATH,
//
//	PATH=$PATH:$(go env GOROOT)/lib/wasm GOWASIRUNTIME=wazero GOOS=wasip1 GOARCH=wasm go test -run '^$' -bench Mix .
func BenchmarkMix(b *testing.B) {
	mix := benchMix(b)
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		for i := range mix {
			r := Validate(mix[i].Command, mix[i].Options)
			buf = r.AppendJSON(buf[:0])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(mix)), "ns/validation")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkMixPooled is BenchmarkMix through AppendValidateJSON, which answers as the WASM
// module's Checker does, from a pool.
func BenchmarkMixPooled(b *testing.B) {
	mix := benchMix(b)
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		for i := range mix {
			buf = AppendValidateJSON(buf[:0], mix[i].Command, mix[i].Options)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(mix)), "ns/validation")
	b.ReportMetric(0, "ns/op")
}

func BenchmarkMixSplit(b *testing.B) {
	mix := benchMix(b)
	for b.Loop() {
		for i := range mix {
			split(mix[i].Command)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(mix)), "ns/validation")
	b.ReportMetric(0, "ns/op")
}

func BenchmarkMixAppendJSON(b *testing.B) {
	mix := benchMix(b)
	res := make([]Result, len(mix))
	for i := range mix {
		res[i] = Validate(mix[i].Command, mix[i].Options)
	}
	var buf []byte
	for b.Loop() {
		for i := range res {
			buf = res[i].AppendJSON(buf[:0])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(mix)), "ns/validation")
	b.ReportMetric(0, "ns/op")
}
