package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs/contracts/client"
	"github.com/mediajobs/mediajobs/validator"
)

func init() {
	register(command{name: "run", summary: "run an FFmpeg command on a service as if it were local (upload, follow, download)", run: runRun})
}

const runUsage = `usage: mediajobs run [flags] 'ffmpeg -i in.mp4 ... out.mp4'
       mediajobs run [flags] -- ffmpeg -i in.mp4 ... out.mp4
       mediajobs run [flags] --preset NAME [-v VAR=VALUE ...] FILE_OR_URL ...

Runs an FFmpeg command on the service as if FFmpeg were local: the service checks the command
(POST /ffmpeg/validate; a refused command uploads nothing), local input files are uploaded
(POST /uploads) unless the account holds the same bytes already (GET /uploads?sha256=), the
job is submitted and followed (a progress bar on a terminal, plain lines otherwise), and every
file it writes is downloaded into --output-dir, keeping the names of a set or an HLS/DASH
stream so that its manifest still plays. The cost is printed at the end.

An -i argument that names a file here is uploaded and staged under its base name without
--input; anything else (https URLs, lavfi sources) goes to the service as written. --input
NAME=PATH stages a file under a name the command uses for something other than -i (subtitles=,
concat lists); --input NAME=https://... stages a URL.

--preset NAME runs a preset (mediajobs presets list) instead of a command: each -v VAR=VALUE
gives one of its variables, typed as the preset declares it (absent ones take their defaults),
and the arguments are its inputs: the preset's inputs (presets get lists them; in.mp4 for every
built-in) take the arguments in that order, one each, a local file uploaded as the input's
name whatever its own name, so 'run --preset web-mp4 -v height=480 clip.mp4' stages clip.mp4
as in.mp4. --input NAME=PATH gives an input by its name; the other arguments fill the rest.

Ctrl-C cancels the job on the service and exits.

--destination ID copies the outputs, once the job completes, to one of the account's own
buckets (mediajobs destinations add); --path TEMPLATE is each file's key there, made of
{job_id}, {name} (required), {ext}, {date} and {preset} (default {job_id}/{name}). The copy
never changes the job's status or cost; GET /jobs/{id} shows how it went.

Exit status: 0 complete; 1 the job failed or was cancelled (its error code and message are
printed) or the service refused it; 2 usage error; 130 interrupted.

Flags:
`

// exitInterrupted is the shell's status of a process ended by SIGINT.
const exitInterrupted = 130

// submitTimeout bounds the submit's request, which a Ctrl-C does not cut short.
const submitTimeout = 30 * time.Second

// inputFlag is one --input NAME=PATH_OR_URL.
type inputFlag struct{ name, value string }

// inputFlags collect repeated --input flags.
type inputFlags []inputFlag

func (f *inputFlags) String() string { return "" }

func (f *inputFlags) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	switch {
	case !ok || name == "" || value == "":
		return fmt.Errorf("%q: want NAME=PATH_OR_URL", s)
	case strings.ContainsAny(name, `/\`):
		return fmt.Errorf("%q: NAME %q must be a plain file name, the one the command uses", s, name)
	}
	for _, in := range *f {
		if in.name == name {
			return fmt.Errorf("%q: NAME %q is given twice", s, name)
		}
	}
	*f = append(*f, inputFlag{name, value})
	return nil
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")
}

func isRegularFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mediajobs run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var r remote
	r.flags(fs)
	var inputs inputFlags
	fs.Var(&inputs, "input", "stage `NAME=PATH_OR_URL`: a local file (uploaded) or an https URL; repeatable")
	outDir := fs.String("output-dir", ".", "`directory` the job's files are downloaded into (made if missing)")
	destinationID := fs.String("destination", "", "copy the outputs to the destination `ID` (mediajobs destinations list) once the job completes")
	destinationPath := fs.String("path", "", "with --destination, the key `TEMPLATE` of each file: {job_id}, {name}, {ext}, {date}, {preset} (default {job_id}/{name})")
	compute := fs.String("compute", "", "`auto`, cpu or gpu (default: the service's, auto)")
	timeout := fs.Int("timeout", 0, "the job's time limit in `seconds`, 1 to 900 (default: the service's, 120)")
	priority := fs.String("priority", "", "`low`, normal or high (high needs the Pro plan): the job's order among waiting jobs (default normal)")
	split := fs.String("split", "", "`auto` splits a long encode across the workers (Pro; see docs/api.md), off never (default: off)")
	presetName := fs.String("preset", "", "run the preset `NAME` instead of a command; the arguments are its input files")
	var vars varFlags
	fs.Var(&vars, "v", "a preset's variable `VAR=VALUE`; repeatable")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), runUsage)
		fs.PrintDefaults()
	}
	positional, exit, ok := parseCommand(fs, args)
	if !ok {
		return exit
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "mediajobs run: "+format+"\n", a...)
		return 2
	}
	if *destinationPath != "" && *destinationID == "" {
		return usageErr("--path %s: a destination's key template; give --destination too", *destinationPath)
	}
	var command string
	switch {
	case *presetName == "" && len(vars) > 0:
		return usageErr("-v %s=%s: variables are a preset's; give --preset", vars[0].name, vars[0].value)
	case *presetName != "":
	case len(positional) == 0:
		fs.Usage()
		return 2
	case len(positional) == 1:
		command = positional[0]
	default:
		var err error
		if command, err = joinArgs(positional); err != nil {
			return usageErr("%v", err)
		}
	}
	switch *compute {
	case "", "auto", "cpu", "gpu":
	default:
		return usageErr("--compute %q: want auto, cpu or gpu", *compute)
	}
	if *split != "" && *split != "auto" && *split != "off" {
		return usageErr("--split %q: want auto or off", *split)
	}
	if *timeout != 0 && (*timeout < 1 || *timeout > 900) {
		return usageErr("--timeout %d: want 1 to 900 seconds", *timeout)
	}
	if *priority != "" {
		if err := checkPriority(*priority); err != nil {
			return usageErr("--%v", err)
		}
	}
	c, err := r.client()
	if err != nil {
		return usageErr("%v", err)
	}

	// call runs a request of the service as retryRateLimited does, and says how run ends when
	// it does not succeed: interrupted (while what was under way), or failed (what failed).
	call := func(underWay, what string, fn func() error) (code int, ok bool) {
		err := retryRateLimited(ctx, stderr, fn)
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "mediajobs run: interrupted %s\n", underWay)
			return exitInterrupted, false
		}
		if err != nil {
			fmt.Fprintf(stderr, "mediajobs run: %s%s\n", what, apiErrorText(err))
			return 1, false
		}
		return 0, true
	}

	var variables map[string]any
	if *presetName != "" {
		var p *client.Preset
		if code, ok := call("before the job was submitted", "preset "+*presetName+": ", func() (err error) {
			p, err = fetchPreset(ctx, c, *presetName)
			return err
		}); !ok {
			return code
		}
		if inputs, err = presetInputs(p, inputs, positional); err != nil {
			return usageErr("%v", err)
		}
		if variables, err = presetVariables(p, vars); err != nil {
			return usageErr("%v", err)
		}
	}

	// Every input is checked before anything is uploaded, so a typo costs no upload.
	jobInputs := map[string]any{}
	taken := map[string]bool{}
	type upload struct{ name, path string }
	var uploads []upload
	for _, in := range inputs {
		taken[in.name] = true
		if isURL(in.value) {
			jobInputs[in.name] = in.value
			continue
		}
		if !isRegularFile(in.value) {
			return usageErr("--input %s=%s: not a file here, nor an https URL", in.name, in.value)
		}
		uploads = append(uploads, upload{in.name, in.value})
	}
	// A preset's command is checked by the service at submit, with the values.
	if *presetName == "" {
		var found []localInput
		command, found = findLocalInputs(command, taken, isRegularFile)
		for _, f := range found {
			uploads = append(uploads, upload{f.name, f.path})
		}
		// The service checks the command before anything is uploaded, so a refused command
		// costs no upload.
		staged := make([]string, 0, len(uploads))
		for _, u := range uploads {
			staged = append(staged, u.name)
		}
		var refusal string
		if code, ok := call("before the job was submitted", "validate: ", func() (err error) {
			refusal, err = checkCommand(ctx, c, command, jobInputs, staged)
			return err
		}); !ok {
			return code
		}
		if refusal != "" {
			fmt.Fprintf(stderr, "mediajobs run: VALIDATION_ERROR: %s (nothing was uploaded)\n", refusal)
			return 1
		}
	}
	for _, u := range uploads {
		var url string
		if code, ok := call("before the job was submitted", "upload "+u.path+": ", func() (err error) {
			url, err = stageInput(ctx, c, u.name, u.path, stderr)
			return err
		}); !ok {
			return code
		}
		jobInputs[u.name] = url
	}

	req, err := client.FFmpegJob{Command: command, Inputs: jobInputs, Timeout: *timeout, Compute: *compute,
		Split: *split, Preset: *presetName, Variables: variables}.Request()
	if err != nil {
		fmt.Fprintf(stderr, "mediajobs run: %v\n", err)
		return 1
	}
	if *priority != "" {
		req.Priority = ptr(client.Priority(*priority))
	}
	if *destinationID != "" {
		req.Destination = &client.DestinationRef{ID: *destinationID}
		if *destinationPath != "" {
			req.Destination.Path = destinationPath
		}
	}
	var created *client.Created
	// One key for every try: a retried submit can never make a second job.
	key := client.WithIdempotencyKey("run-" + rand.Text())
	// A Ctrl-C does not cut the submit's request short: the service may have made the job
	// already, and only its answer names the job to cancel. It stops a wait between tries.
	err = retryRateLimited(ctx, stderr, func() (err error) {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), submitTimeout)
		defer cancel()
		created, err = c.Submit(sctx, req, key)
		return err
	})
	switch {
	case err != nil && ctx.Err() != nil:
		fmt.Fprintf(stderr, "mediajobs run: interrupted while the job was being submitted\n")
		return exitInterrupted
	case err != nil:
		fmt.Fprintf(stderr, "mediajobs run: %s\n", apiErrorText(err))
		return 1
	}
	id := created.ID
	fmt.Fprintf(stderr, "%s submitted\n", id)
	if ctx.Err() != nil { // interrupted while the submit was answered: the job goes too
		cancelOnInterrupt(c, id, stderr)
		return exitInterrupted
	}

	prog := newJobProgress(stderr, id)
	j, err := c.Wait(ctx, id, client.WithProgress(prog.update))
	if ctx.Err() != nil {
		prog.stop()
		cancelOnInterrupt(c, id, stderr)
		return exitInterrupted
	}
	if err != nil {
		fmt.Fprintf(stderr, "mediajobs run: %s: %s\n", id, apiErrorText(err))
		return 1
	}
	return finish(ctx, c, j, *outDir, stdout, stderr)
}

// retryRateLimited runs fn again after the wait a 429 RATE_LIMITED answer asks for, a few
// times: a run right after another has often spent the plan's minute on polling, and a refused
// upload or submit stored nothing, so trying again is safe.
func retryRateLimited(ctx context.Context, stderr io.Writer, fn func() error) error {
	for attempt := 1; ; attempt++ {
		err := fn()
		var apiErr *client.APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests || attempt == 5 {
			return err
		}
		wait := max(apiErr.RetryAfter, time.Second)
		fmt.Fprintf(stderr, "rate limited; trying again in %s\n", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// checkCommand asks the service's POST /ffmpeg/validate about the command with the job's URL
// inputs, and returns why it would refuse the job ("" when it would not): the validator's
// error, or a name the command reads that neither the inputs nor the files to upload (staged)
// give.
func checkCommand(ctx context.Context, c *client.ClientWithResponses, command string, inputs map[string]any, staged []string) (string, error) {
	req := map[string]any{"command": command}
	if len(inputs) > 0 {
		req["inputs"] = inputs
	}
	body, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	resp, err := c.ValidateFFmpegWithBodyWithResponse(ctx, "application/json", bytes.NewReader(body))
	if err == nil {
		err = client.ResponseError(resp.HTTPResponse, resp.Body)
	}
	if err == nil && resp.JSON200 == nil {
		err = notJSON(resp.HTTPResponse)
	}
	if err != nil {
		return "", err
	}
	var res struct {
		Data validator.Result `json:"data"`
	}
	if err := json.Unmarshal(resp.Body, &res); err != nil {
		return "", fmt.Errorf("the answer of POST /ffmpeg/validate: %w", err)
	}
	if !res.Data.Valid {
		return res.Data.Error, nil
	}
	for _, name := range res.Data.RequiredInputs {
		if !slices.Contains(staged, name) {
			return fmt.Sprintf("the command reads %s, which is not a file here: give it with --input %s=PATH_OR_URL", name, name), nil
		}
	}
	return "", nil
}

// stageInput returns the URL of one local file for the job's inputs: an upload of the account
// that holds the same bytes (found by their SHA-256) when there is one, else a new upload under
// name. A job stages an input under the name its inputs give it, not the upload's own name, so
// an upload of the same bytes under another name serves as well; one of the same name is
// preferred only so that the service's listing reads naturally.
func stageInput(ctx context.Context, c *client.ClientWithResponses, name, path string, stderr io.Writer) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	resp, err := c.FindUploadsWithResponse(ctx, &client.FindUploadsParams{Sha256: sum})
	if err == nil {
		err = client.ResponseError(resp.HTTPResponse, resp.Body)
	}
	if err == nil && resp.JSON200 == nil {
		err = notJSON(resp.HTTPResponse)
	}
	if err != nil {
		return "", err
	}
	var reuse *client.Upload
	for i, up := range resp.JSON200.Data {
		if up.Size != fi.Size() {
			continue
		}
		if reuse == nil || (up.Name == name && reuse.Name != name) {
			reuse = &resp.JSON200.Data[i]
		}
	}
	if reuse != nil {
		fmt.Fprintf(stderr, "reused %s as %s: the service holds its bytes already (%s, sha256 %s)\n", path, name, reuse.ID, sum[:12])
		return reuse.URL, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	body, done := transferReader(stderr, f, fi.Size(), "upload "+name)
	up, err := c.Upload(ctx, name, body)
	done()
	if err != nil {
		return "", err
	}
	fmt.Fprintf(stderr, "uploaded %s as %s (%d bytes)\n", path, name, up.Size)
	return up.URL, nil
}

// cancelOnInterrupt cancels the job on the service after a Ctrl-C: the job must not go on
// spending credits for a command its user stopped.
func cancelOnInterrupt(c *client.ClientWithResponses, id string, stderr io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := c.CancelJobWithResponse(ctx, id)
	if err == nil {
		err = client.ResponseError(resp.HTTPResponse, resp.Body)
	}
	var apiErr *client.APIError
	switch {
	case err == nil:
		fmt.Fprintf(stderr, "mediajobs run: interrupted; %s cancelled\n", id)
	case errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusConflict:
		fmt.Fprintf(stderr, "mediajobs run: interrupted; %s had already ended (%s)\n", id, apiErr.Message)
	default:
		fmt.Fprintf(stderr, "mediajobs run: interrupted; cancelling %s failed: %s\n", id, apiErrorText(err))
	}
}

// finish reports a job that has ended: it downloads a complete job's files and prints them and
// the cost; a failed or cancelled job is printed with its error and is exit status 1.
func finish(ctx context.Context, c *client.ClientWithResponses, j *client.Job, outDir string, stdout, stderr io.Writer) int {
	switch j.Status {
	case client.StatusComplete:
	case client.StatusFailed:
		if j.Error != nil {
			fmt.Fprintf(stderr, "mediajobs run: %s failed: %s: %s\n", j.ID, j.Error.Code, j.Error.Message)
			if j.Error.Detail != nil && *j.Error.Detail != "" {
				fmt.Fprintf(stderr, "%s\n", indent(*j.Error.Detail))
			}
		} else {
			fmt.Fprintf(stderr, "mediajobs run: %s failed\n", j.ID)
		}
		printCost(stdout, j)
		return 1
	default:
		fmt.Fprintf(stderr, "mediajobs run: %s was %s\n", j.ID, j.Status)
		printCost(stdout, j)
		return 1
	}
	if j.Output != nil {
		for _, f := range j.Output.Files {
			path, err := c.Download(ctx, f, outDir)
			if ctx.Err() != nil {
				fmt.Fprintf(stderr, "mediajobs run: interrupted while downloading %s's files\n", j.ID)
				return exitInterrupted
			}
			if err != nil {
				fmt.Fprintf(stderr, "mediajobs run: %v\n", err)
				return 1
			}
			fmt.Fprintf(stdout, "%s\t%d bytes\t%s\n", path, f.Size, f.Type)
		}
		if j.Output.Data != nil {
			b, _ := json.Marshal(j.Output.Data)
			fmt.Fprintf(stdout, "data: %s\n", b)
		}
	}
	printCost(stdout, j)
	return 0
}

func printCost(w io.Writer, j *client.Job) {
	if j.Cost != nil {
		fmt.Fprintf(w, "cost: %s\n", j.Cost.Formatted)
	}
}

// indent sets FFmpeg's stderr off from our own lines.
func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}
