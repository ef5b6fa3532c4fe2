package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/mediajobs/mediajobs/contracts/client"
)

func init() {
	register(command{name: "presets", summary: "list, read, save or delete the presets of an account on a service", run: runPresets})
}

const presetsUsage = `usage: mediajobs presets list [--json]
       mediajobs presets get NAME
       mediajobs presets save [--version N] FILE
       mediajobs presets delete NAME

A preset is a named FFmpeg command (or steps) with typed {{variables}}; the service has built-in
ones (web-mp4, hls-ladder, thumbnail-sprite, loudness-r128, gif-preview; read-only) and each
account saves its own. list prints them as a table (--json: the API's answer); get prints one
as JSON; save sends FILE (a JSON preset, {name, command, variables}; - reads stdin) as a new
preset, or with --version N replaces the preset at version N (the version get printed: a stale
one is refused and nothing changes), and prints the saved preset; delete removes one.
mediajobs run --preset NAME -v VAR=VALUE FILE runs one. Every subcommand takes --server and
--key (MEDIAJOBS_SERVER, MEDIAJOBS_API_KEY).

Exit status: 0 done; 1 the service refused; 2 usage error.

Flags:
`

func runPresets(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	sub, args, fs, r, ok := subcommandFlags("presets", presetsUsage, args, stderr)
	if !ok {
		return 2
	}
	asJSON, version := new(bool), new(int)
	switch sub {
	case "list":
		fs.BoolVar(asJSON, "json", false, "print the API's answer, {data: [preset...]}")
	case "save":
		fs.IntVar(version, "version", 0, "replace the preset at this `version` (the one get printed) instead of creating it")
	case "get", "delete":
	default:
		return otherSubcommand("presets", presetsUsage, sub, fs, stderr)
	}
	positional, exit, ok := parseCommand(fs, args)
	if !ok {
		return exit
	}
	want := 1
	if sub == "list" {
		want = 0
	}
	if len(positional) != want {
		fmt.Fprintf(stderr, "mediajobs presets %s: want %d argument(s), got %q\n", sub, want, positional)
		return 2
	}
	if *version < 0 {
		fmt.Fprintf(stderr, "mediajobs presets save: --version %d: want the preset's version, 1 or more\n", *version)
		return 2
	}
	c, err := r.client()
	if err != nil {
		fmt.Fprintf(stderr, "mediajobs presets: %v\n", err)
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "mediajobs presets %s: %s\n", sub, apiErrorText(err))
		return 1
	}
	switch sub {
	case "list":
		resp, err := c.ListPresetsWithResponse(ctx)
		if err != nil {
			return fail(err)
		}
		if err := answered(resp.HTTPResponse, resp.Body, resp.JSON200 != nil); err != nil {
			return fail(err)
		}
		if *asJSON {
			fmt.Fprintf(stdout, "%s\n", strings.TrimSpace(string(resp.Body)))
			return 0
		}
		printPresets(stdout, resp.JSON200.Data)
		return 0
	case "get":
		p, err := fetchPreset(ctx, c, positional[0])
		if err != nil {
			return fail(err)
		}
		printIndented(stdout, p)
		return 0
	case "delete":
		resp, err := c.DeletePresetWithResponse(ctx, positional[0])
		if err == nil {
			err = client.ResponseError(resp.HTTPResponse, resp.Body)
		}
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(stderr, "preset %s deleted\n", positional[0])
		return 0
	}
	body, err := readPresetFile(positional[0])
	if err != nil {
		fmt.Fprintf(stderr, "mediajobs presets save: %v\n", err)
		return 2
	}
	var status int
	var env *client.PresetEnvelope
	var raw []byte
	var httpResp *http.Response
	if *version == 0 {
		resp, err := c.CreatePresetWithBodyWithResponse(ctx, "application/json", bytes.NewReader(body))
		if err != nil {
			return fail(err)
		}
		httpResp, raw, env, status = resp.HTTPResponse, resp.Body, resp.JSON201, http.StatusCreated
	} else {
		var named struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(body, &named); err != nil || named.Name == "" {
			fmt.Fprintf(stderr, "mediajobs presets save: %s: want a JSON object with the preset's name\n", positional[0])
			return 2
		}
		resp, err := c.UpdatePresetWithBodyWithResponse(ctx, named.Name, &client.UpdatePresetParams{IfMatch: ptr(strconv.Quote(strconv.Itoa(*version)))},
			"application/json", bytes.NewReader(body))
		if err != nil {
			return fail(err)
		}
		httpResp, raw, env, status = resp.HTTPResponse, resp.Body, resp.JSON200, http.StatusOK
	}
	if err := answered(httpResp, raw, env != nil && httpResp.StatusCode == status); err != nil {
		return fail(err)
	}
	printIndented(stdout, env.Data)
	return 0
}

// answered is the service's refusal, or an error if a success carried no JSON answer.
func answered(resp *http.Response, body []byte, decoded bool) error {
	if err := client.ResponseError(resp, body); err != nil {
		return err
	}
	if !decoded {
		return notJSON(resp)
	}
	return nil
}

// fetchPreset reads one preset, the account's or a built-in.
func fetchPreset(ctx context.Context, c *client.ClientWithResponses, name string) (*client.Preset, error) {
	resp, err := c.GetPresetWithResponse(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := answered(resp.HTTPResponse, resp.Body, resp.JSON200 != nil); err != nil {
		return nil, err
	}
	return &resp.JSON200.Data, nil
}

// readPresetFile reads a preset's JSON from path, or stdin for -.
func readPresetFile(path string) ([]byte, error) {
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(os.Stdin)
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("%s is not JSON: want a preset, {name, command, variables}", path)
	}
	return b, nil
}

// printPresets writes presets as a table: each variable with its default (name=default, or
// name alone when a job must give it).
func printPresets(w io.Writer, presets []client.Preset) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tBUILTIN\tINPUTS\tVARIABLES")
	for _, p := range presets {
		var vars []string
		for _, name := range slices.Sorted(maps.Keys(p.Variables)) {
			if d := p.Variables[name].Default; d != nil {
				b, _ := json.Marshal(d)
				name += "=" + strings.Trim(string(b), `"`)
			}
			vars = append(vars, name)
		}
		fmt.Fprintf(tw, "%s\t%d\t%t\t%s\t%s\n", p.Name, p.Version, p.Builtin, strings.Join(p.Inputs, ","), strings.Join(vars, " "))
	}
	_ = tw.Flush()
}

// varFlags collect repeated -v NAME=VALUE: a preset's variables, typed later by the preset.
type varFlags []inputFlag

func (f *varFlags) String() string { return "" }

func (f *varFlags) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return fmt.Errorf("%q: want NAME=VALUE", s)
	}
	for _, v := range *f {
		if v.name == name {
			return fmt.Errorf("%q: variable %s is given twice", s, name)
		}
	}
	*f = append(*f, inputFlag{name, value})
	return nil
}

// presetVariables types each -v value as the preset declares its variable: integers and
// numbers as JSON numbers, enums and strings as strings. The service checks ranges, choices
// and placement; this refuses what it could never take before anything is uploaded.
func presetVariables(p *client.Preset, vars varFlags) (map[string]any, error) {
	out := map[string]any{}
	for _, v := range vars {
		decl, ok := p.Variables[v.name]
		if !ok {
			return nil, fmt.Errorf("-v %s: preset %s has no variable %s (it has: %s)", v.name, p.Name, v.name,
				strings.Join(slices.Sorted(maps.Keys(p.Variables)), ", "))
		}
		switch decl.Type {
		case client.PresetVariableTypeInteger:
			n, err := strconv.ParseInt(v.value, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("-v %s=%s: %s is an integer", v.name, v.value, v.name)
			}
			out[v.name] = n
		case client.PresetVariableTypeNumber:
			n, err := strconv.ParseFloat(v.value, 64)
			if err != nil {
				return nil, fmt.Errorf("-v %s=%s: %s is a number", v.name, v.value, v.name)
			}
			out[v.name] = json.Number(strconv.FormatFloat(n, 'f', -1, 64))
		default:
			out[v.name] = v.value
		}
	}
	return out, nil
}

// presetInputs maps run's arguments onto the preset's inputs: the inputs --input does not give,
// in the order the preset lists them, take the arguments in order, one each.
func presetInputs(p *client.Preset, given inputFlags, args []string) ([]inputFlag, error) {
	taken := map[string]bool{}
	for _, in := range given {
		if !slices.Contains(p.Inputs, in.name) {
			return nil, fmt.Errorf("--input %s: preset %s reads no input %s (its inputs: %s)", in.name, p.Name, in.name, strings.Join(p.Inputs, ", "))
		}
		taken[in.name] = true
	}
	var open []string
	for _, name := range p.Inputs {
		if !taken[name] {
			open = append(open, name)
		}
	}
	if len(args) != len(open) {
		return nil, fmt.Errorf("preset %s reads %s: give %d file(s) or URL(s) for %s in that order (or --input NAME=PATH), got %d",
			p.Name, strings.Join(p.Inputs, ", "), len(open), strings.Join(open, ", "), len(args))
	}
	out := slices.Clone([]inputFlag(given))
	for i, name := range open {
		out = append(out, inputFlag{name, args[i]})
	}
	return out, nil
}
