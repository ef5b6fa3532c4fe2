// Package validatortest holds what the validator's other engines (wazero, the browser) are
// tested against: the shared corpus and a fresh build of validator.wasm. For tests only.
package validatortest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/mediajobs/mediajobs/validator"
)

// Case is one line of validator/testdata/corpus.jsonl.
type Case struct {
	Name    string            `json:"name"`
	Command string            `json:"command"`
	Options validator.Options `json:"options"`
	Valid   bool              `json:"valid"`
	Layer   string            `json:"layer"`
	// RequiredInputs are the names a valid command reads that its options do not stage.
	RequiredInputs []string `json:"requiredInputs"`
}

// moduleDir is the validator module's directory, found from this file so that tests in any
// module and any working directory read the same corpus and build the same sources.
func moduleDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// Corpus reads the shared corpus once.
var Corpus = sync.OnceValues(func() ([]Case, error) {
	data, err := os.ReadFile(filepath.Join(moduleDir(), "testdata", "corpus.jsonl"))
	if err != nil {
		return nil, err
	}
	var cases []Case
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var c Case
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("corpus line %d: %w", line, err)
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("the corpus is empty")
	}
	return cases, nil
})

// RealCase is one line of testdata/realworld.jsonl: a command as people write it, from the page
// that shows it (Source), with the bare names it reads. Validate must accept it without inputs,
// answering RequiredInputs, and with Inputs staged (RequiredInputs when Inputs is empty: an
// image sequence stages its frames instead of its pattern), answering none.
type RealCase struct {
	Name           string   `json:"name"`
	Source         string   `json:"source"`
	Command        string   `json:"command"`
	RequiredInputs []string `json:"requiredInputs"`
	Inputs         []string `json:"inputs"`
}

// Staged is the names the run with inputs stages.
func (c RealCase) Staged() []string {
	if c.Inputs != nil {
		return c.Inputs
	}
	return c.RequiredInputs
}

// Attack is one line of testdata/attacks.jsonl: a command Validate must refuse, by Layer,
// whether or not Inputs are staged.
type Attack struct {
	Name    string   `json:"name"`
	Command string   `json:"command"`
	Layer   string   `json:"layer"`
	Inputs  []string `json:"inputs"`
}

// Staged returns options staging names as inline inputs, as a job's {content} entries are.
func Staged(names []string) validator.Options {
	opts := validator.Options{Inputs: make(map[string]validator.Input, len(names))}
	for _, n := range names {
		opts.Inputs[n] = validator.Input{Inline: true, ContentSize: 100}
	}
	return opts
}

// A Run is one command of the real-world and attack corpora with the options to check it under.
type Run struct {
	Name, Command string
	Options       validator.Options
}

// Runs is every real-world command and every attack twice: without inputs, and with their
// names staged ("<name> staged"), then the address table (Addresses). The native, WASM and
// endpoint checks all run it.
func Runs() ([]Run, error) {
	real, err := RealWorld()
	if err != nil {
		return nil, err
	}
	attacks, err := Attacks()
	if err != nil {
		return nil, err
	}
	var runs []Run
	for _, c := range real {
		runs = append(runs, Run{c.Name, c.Command, validator.Options{}}, Run{c.Name + " staged", c.Command, Staged(c.Staged())})
	}
	for _, c := range attacks {
		runs = append(runs, Run{c.Name, c.Command, validator.Options{}}, Run{c.Name + " staged", c.Command, Staged(c.Inputs)})
	}
	for _, c := range Addresses() {
		runs = append(runs, Run{"address " + c.Name, c.Command, c.Options})
	}
	return runs, nil
}

// RealWorld reads testdata/realworld.jsonl once.
var RealWorld = sync.OnceValues(func() ([]RealCase, error) { return readJSONL[RealCase]("realworld.jsonl") })

// Attacks reads testdata/attacks.jsonl once.
var Attacks = sync.OnceValues(func() ([]Attack, error) { return readJSONL[Attack]("attacks.jsonl") })

func readJSONL[T any](name string) ([]T, error) {
	data, err := os.ReadFile(filepath.Join(moduleDir(), "testdata", name))
	if err != nil {
		return nil, err
	}
	var out []T
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var c T
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", name, line, err)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s is empty", name)
	}
	return out, nil
}

// BuildWASM builds validator.wasm from the current sources, once per test binary, as `make wasm`
// does, so engines are never checked against a stale module and `go test` needs no build step.
// MEDIAJOBS_TEST_WASM names a module built elsewhere instead, for test binaries copied to a
// machine with no Go toolchain (it must be built from the same sources).
var BuildWASM = sync.OnceValues(func() ([]byte, error) {
	if prebuilt := os.Getenv("MEDIAJOBS_TEST_WASM"); prebuilt != "" {
		return os.ReadFile(prebuilt)
	}
	dir, err := os.MkdirTemp("", "validator-wasm")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "validator.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s -w", "-o", out, "./cmd/wasm")
	cmd.Dir = moduleDir()
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build validator.wasm: %v\n%s", err, msg)
	}
	return os.ReadFile(out)
})
