package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tetratelabs/wazero"

	"github.com/mediajobs/mediajobs/adapters/wasmvalidator"
	"github.com/mediajobs/mediajobs/contracts/client"
	"github.com/mediajobs/mediajobs/validator"
)

func init() {
	register(command{
		name:    "validate",
		summary: "check an FFmpeg command as POST /ffmpeg/validate does",
		run:     runValidate,
	})
}

// defaultWASM is where `make wasm` writes the module, relative to the repository root. The
// module is read from disk rather than embedded because go:embed cannot reach into the validator
// module, and a copy in apps would go stale.
const defaultWASM = "validator/cmd/wasm/validator.wasm"

const validateUsage = `usage: mediajobs validate [flags] 'ffmpeg -i ... out.mp4'
       mediajobs validate [flags] -          (read the command from stdin)

Validates the command and prints what POST /ffmpeg/validate answers:
  {"data":{"valid":true,"args":[...],"inferredOutputFormat":"mp4"}}
  {"data":{"valid":true,...,"requiredInputs":["in.mp4"]}}   (names --inputs does not give yet)
  {"data":{"valid":false,"error":"..."}}

Quote the command as one argument. Flags may come before or after it.

Exit status: 0 valid, 1 invalid, 2 usage error or the engine could not run.

--server URL asks that service's POST /ffmpeg/validate instead of a local engine (no key
needed), so the answer is the one the service will give at submit; --options cannot go with it.

--engine wasm reads validator.wasm (default: ./validator/cmd/wasm/validator.wasm, as
` + "`make wasm`" + ` builds it from the repository root) and keeps its compiled form in the user
cache directory (mediajobs/wazero), so only the first run pays the compilation.

Flags:
`

func runValidate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	engine := fs.String("engine", "native", "`native` (compiled in) or wasm (validator.wasm under wazero); both answer alike")
	wasmPath := fs.String("wasm", defaultWASM, "`path` of validator.wasm for --engine wasm; build it with `make wasm`")
	inputsJSON := fs.String("inputs", "", "the job's inputs, as POST /jobs takes them (`JSON`): {\"in.mp4\": \"https://...\", \"subs.srt\": {\"content\": \"...\"}}")
	optsJSON := fs.String("options", "", "the job around the command, as validator.Options `JSON`: outputFormat, compute, timeout, inputs")
	server := fs.String("server", "", "validate with the service at this `URL` (its POST /ffmpeg/validate) instead of locally")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), validateUsage)
		fs.PrintDefaults()
	}

	positional, exit, ok := parseCommand(fs, args)
	if !ok {
		return exit
	}
	if len(positional) != 1 {
		fmt.Fprintf(stderr, "mediajobs validate: want one command, as one quoted argument; got %d arguments\n\n", len(positional))
		fs.Usage()
		return 2
	}
	command := positional[0]
	if command == "-" {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			fmt.Fprintf(stderr, "mediajobs validate: read stdin: %v\n", err)
			return 2
		}
		command = strings.TrimRight(string(b), "\r\n")
	}
	if *server != "" {
		if *optsJSON != "" {
			fmt.Fprintln(stderr, "mediajobs validate: --options works with the local engines only; POST /ffmpeg/validate takes the command alone")
			return 2
		}
		return validateRemote(ctx, *server, command, stdout, stderr)
	}
	var opts validator.Options
	if *optsJSON != "" {
		dec := json.NewDecoder(strings.NewReader(*optsJSON))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&opts); err != nil {
			fmt.Fprintf(stderr, "mediajobs validate: --options: %v\n", err)
			return 2
		}
	}
	inputs, err := validator.ParseJobInputs([]byte(*inputsJSON))
	if err != nil {
		fmt.Fprintf(stderr, "mediajobs validate: --inputs: %v\n", err)
		return 2
	}
	if len(inputs) > 0 && opts.Inputs == nil {
		opts.Inputs = make(map[string]validator.Input, len(inputs))
	}
	for name, in := range inputs {
		opts.Inputs[name] = in
	}

	var v wasmvalidator.Validator
	switch *engine {
	case "native":
		v = wasmvalidator.Native
	case "wasm":
		// One instance: this process validates one command.
		cfg := wasmvalidator.Config{Instances: 1}
		// Compiling the module takes over a second; the cache makes every run after the first
		// start in milliseconds. Without a cache directory it still works, only slower.
		if dir, err := os.UserCacheDir(); err == nil {
			cache, err := wazero.NewCompilationCacheWithDir(filepath.Join(dir, "mediajobs", "wazero"))
			if err == nil {
				defer cache.Close(context.WithoutCancel(ctx))
				cfg.CompilationCache = cache
			}
		}
		e, err := wasmvalidator.Load(ctx, *wasmPath, cfg)
		if err != nil {
			fmt.Fprintf(stderr, "mediajobs validate: %v\n", err)
			return 2
		}
		defer e.Close(context.WithoutCancel(ctx))
		v = e
	default:
		fmt.Fprintf(stderr, "mediajobs validate: --engine %q: want native or wasm\n", *engine)
		return 2
	}

	res, err := v.Validate(ctx, command, opts)
	if err != nil {
		fmt.Fprintf(stderr, "mediajobs validate: %v\n", err)
		return 2
	}
	out, err := json.Marshal(struct {
		Data validator.Result `json:"data"`
	}{res})
	if err != nil {
		fmt.Fprintf(stderr, "mediajobs validate: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "%s\n", out)
	if !res.Valid {
		return 1
	}
	return 0
}

// parseInterleaved parses flags that come before and after positional arguments, which the flag
// package alone stops at, so that `validate 'ffmpeg ...' --engine wasm` works. After "--" every
// argument is positional.
// parseCommand parses a subcommand's arguments as parseInterleaved does. When the command
// cannot go on, ok is false and exit is its status: 0 after -h (the usage was printed), 2 after
// a bad flag (the flag package said which).
func parseCommand(fs *flag.FlagSet, args []string) (positional []string, exit int, ok bool) {
	positional, err := parseInterleaved(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil, 0, false
	case err != nil:
		return nil, 2, false
	}
	return positional, 0, true
}

func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		before := len(args)
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		// The flag package consumed a "--" when it stopped one argument early of rest.
		if consumed := before - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// validateRemote asks the service's POST /ffmpeg/validate and prints its answer as it came.
func validateRemote(ctx context.Context, server, command string, stdout, stderr io.Writer) int {
	c, err := client.New(server, "")
	if err != nil {
		fmt.Fprintf(stderr, "mediajobs validate: --server %q: %v\n", server, err)
		return 2
	}
	resp, err := c.ValidateFFmpegWithResponse(ctx, client.ValidateFFmpegJSONRequestBody{Command: command})
	if err != nil {
		fmt.Fprintf(stderr, "mediajobs validate: %s: %v\n", server, err)
		return 2
	}
	if err := client.ResponseError(resp.HTTPResponse, resp.Body); err != nil {
		fmt.Fprintf(stderr, "mediajobs validate: %s: %v\n", server, err)
		return 2
	}
	if resp.JSON200 == nil {
		fmt.Fprintf(stderr, "mediajobs validate: %s answered %d without a validation result\n", server, resp.StatusCode())
		return 2
	}
	var res struct {
		Data validator.Result `json:"data"`
	}
	if err := json.Unmarshal(resp.Body, &res); err != nil {
		fmt.Fprintf(stderr, "mediajobs validate: %s: %v\n", server, err)
		return 2
	}
	fmt.Fprintf(stdout, "%s\n", bytes.TrimSpace(resp.Body))
	if !res.Data.Valid {
		return 1
	}
	return 0
}
