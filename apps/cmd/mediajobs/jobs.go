package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mediajobs/mediajobs/contracts/client"
)

func init() {
	register(command{name: "jobs", summary: "list, read, cancel or wait for the jobs of an account on a service", run: runJobs})
}

const jobsUsage = `usage: mediajobs jobs list [--status S] [--type T] [--limit N] [--cursor C] [--json]
       mediajobs jobs get JOB_ID
       mediajobs jobs cancel JOB_ID
       mediajobs jobs wait JOB_ID
       mediajobs jobs priority JOB_ID low|normal|high

list prints a page of the account's jobs, newest first, as a table (--json: the API's answer);
get and cancel print the job as JSON; wait follows the job until it ends (progress on stderr),
then prints it; priority changes a waiting job's priority (high needs the Pro plan) and prints
the job (mediajobs queue shows where it now stands). Every subcommand takes --server and --key (MEDIAJOBS_SERVER, MEDIAJOBS_API_KEY).

Exit status: 0 done (wait: the job completed); 1 the service refused, or the waited job failed
or was cancelled; 2 usage error; 130 interrupted (wait does not cancel the job).

Flags:
`

func runJobs(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	sub, args, fs, r, ok := subcommandFlags("jobs", jobsUsage, args, stderr)
	if !ok {
		return 2
	}
	var list listFlags
	switch sub {
	case "list":
		fs.StringVar(&list.status, "status", "", "only jobs in this `status` (waiting, dispatched, running, complete, failed, cancelled)")
		fs.StringVar(&list.typ, "type", "", "only jobs of this `type` (ffmpeg, caption.burn, ...)")
		fs.StringVar(&list.cursor, "cursor", "", "the `cursor` a previous page printed, for the next page")
		fs.IntVar(&list.limit, "limit", 20, "jobs per page, 1 to 100")
		fs.BoolVar(&list.json, "json", false, "print the API's answer, {data, pagination}")
	case "get", "cancel", "wait", "priority":
	default:
		return otherSubcommand("jobs", jobsUsage, sub, fs, stderr)
	}
	positional, exit, ok := parseCommand(fs, args)
	if !ok {
		return exit
	}
	want := 1
	switch sub {
	case "list":
		want = 0
	case "priority":
		want = 2
	}
	if len(positional) != want {
		fmt.Fprintf(stderr, "mediajobs jobs %s: want %d argument(s), got %d: %q\n", sub, want, len(positional), positional)
		return 2
	}
	c, err := r.client()
	if err != nil {
		fmt.Fprintf(stderr, "mediajobs jobs %s: %v\n", sub, err)
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "mediajobs jobs %s: %s\n", sub, apiErrorText(err))
		return 1
	}
	if sub == "priority" {
		if err := checkPriority(positional[1]); err != nil {
			fmt.Fprintf(stderr, "mediajobs jobs priority: %v\n", err)
			return 2
		}
	}
	switch sub {
	case "list":
		if list.limit < 1 || list.limit > 100 {
			fmt.Fprintf(stderr, "mediajobs jobs list: --limit %d: want 1 to 100\n", list.limit)
			return 2
		}
		return listJobs(ctx, c, list, stdout, fail)
	case "get":
		resp, err := c.GetJobWithResponse(ctx, positional[0], nil)
		if err != nil {
			return fail(err)
		}
		return printJob(stdout, fail, resp.HTTPResponse, resp.Body, resp.JSON200)
	case "priority":
		resp, err := c.SetJobPriorityWithResponse(ctx, positional[0], client.SetJobPriorityJSONRequestBody{Priority: client.Priority(positional[1])})
		if err != nil {
			return fail(err)
		}
		return printJob(stdout, fail, resp.HTTPResponse, resp.Body, resp.JSON200)
	case "cancel":
		resp, err := c.CancelJobWithResponse(ctx, positional[0])
		if err != nil {
			return fail(err)
		}
		return printJob(stdout, fail, resp.HTTPResponse, resp.Body, resp.JSON200)
	default: // wait
		id := positional[0]
		prog := newJobProgress(stderr, id)
		j, err := c.Wait(ctx, id, client.WithProgress(prog.update))
		if ctx.Err() != nil {
			prog.stop()
			fmt.Fprintf(stderr, "mediajobs jobs wait: interrupted; %s goes on (mediajobs jobs cancel %s stops it)\n", id, id)
			return exitInterrupted
		}
		if err != nil {
			return fail(err)
		}
		printIndented(stdout, j)
		switch {
		case j.Status == client.StatusComplete:
			return 0
		case j.Error != nil:
			fmt.Fprintf(stderr, "mediajobs jobs wait: %s failed: %s: %s\n", id, j.Error.Code, j.Error.Message)
		default:
			fmt.Fprintf(stderr, "mediajobs jobs wait: %s was %s\n", id, j.Status)
		}
		return 1
	}
}

// listFlags are the flags of `jobs list`.
type listFlags struct {
	status, typ, cursor string
	limit               int
	json                bool
}

func listJobs(ctx context.Context, c *client.ClientWithResponses, f listFlags, stdout io.Writer, fail func(error) int) int {
	params := &client.ListJobsParams{Limit: ptr(int64(f.limit))}
	if f.status != "" {
		params.Status = ptr(client.Status(f.status))
	}
	if f.typ != "" {
		params.Type = &f.typ
	}
	if f.cursor != "" {
		params.Cursor = &f.cursor
	}
	resp, err := c.ListJobsWithResponse(ctx, params)
	if err == nil {
		err = client.ResponseError(resp.HTTPResponse, resp.Body)
	}
	if err == nil && resp.JSON200 == nil {
		err = notJSON(resp.HTTPResponse)
	}
	if err != nil {
		return fail(err)
	}
	page := resp.JSON200
	if f.json {
		fmt.Fprintf(stdout, "%s\n", strings.TrimSpace(string(resp.Body)))
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tTYPE\tCREATED\tCOST\tERROR\tSUMMARY")
	for _, j := range page.Data {
		cost, errCode := "-", ""
		if j.Cost != nil {
			cost = j.Cost.Formatted
		}
		if j.Error != nil {
			errCode = string(j.Error.Code)
		}
		created := time.UnixMilli(j.CreatedAt).UTC().Format(time.RFC3339)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, j.Status, j.Type, created, cost, cmp.Or(errCode, "-"), jobSummary(j))
	}
	_ = tw.Flush()
	if next := page.Pagination.NextCursor; next != nil {
		fmt.Fprintf(stdout, "more: mediajobs jobs list --cursor %s\n", *next)
	}
	return 0
}

// summaryWidth is how much of a command the jobs table shows.
const summaryWidth = 60

// jobSummary tells one job of a list from another: its FFmpeg command (without the leading
// "ffmpeg", shortened), else the name of its first output file, else "-".
func jobSummary(j client.Job) string {
	if j.Params != nil {
		if c, ok := (*j.Params)["command"].(string); ok && c != "" {
			c = strings.Join(strings.Fields(c), " ")
			c = strings.TrimPrefix(c, "ffmpeg ")
			if r := []rune(c); len(r) > summaryWidth {
				c = string(r[:summaryWidth-1]) + "…"
			}
			return c
		}
	}
	if j.Output != nil {
		if j.Output.File != nil {
			return j.Output.File.Path
		}
		if len(j.Output.Files) > 0 {
			return j.Output.Files[0].Path
		}
	}
	return "-"
}

func ptr[T any](v T) *T { return &v }

// notJSON is a 2xx answer that is not the API's JSON: --server names something else.
func notJSON(resp *http.Response) error {
	return fmt.Errorf("the answer of %s is %s, not the API's JSON: is --server the service?", resp.Request.URL.Redacted(), resp.Header.Get("Content-Type"))
}

// printIndented prints v as indented JSON, for a person to read and jq to parse.
func printIndented(w io.Writer, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	fmt.Fprintf(w, "%s\n", b)
}

// printJob prints the job of an answer that carries one (get, cancel, priority), or fails with
// the service's refusal.
func printJob(stdout io.Writer, fail func(error) int, resp *http.Response, body []byte, env *client.JobEnvelope) int {
	err := client.ResponseError(resp, body)
	if err == nil && env == nil {
		err = notJSON(resp)
	}
	if err != nil {
		return fail(err)
	}
	printIndented(stdout, env.Data)
	return 0
}

// checkPriority refuses a priority the service does not know, before anything is sent.
func checkPriority(p string) error {
	if !client.Priority(p).Valid() {
		return fmt.Errorf("priority %q: want low, normal or high", p)
	}
	return nil
}
