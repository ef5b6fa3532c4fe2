package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mediajobs/mediajobs/contracts/client"
)

func init() {
	register(command{name: "queue", summary: "show the account's waiting jobs in the order they will run, with their positions", run: runQueue})
}

const queueUsage = `usage: mediajobs queue [--limit N] [--json]

Prints the account's waiting jobs in the order workers will claim them (GET /queue), cpu jobs
first, as a table: POSITION counts every account's waiting jobs of the job's class (1 runs
next; other accounts' jobs are counted, never shown), then the class, the job, its priority and
how long it has waited. Higher priority goes first, and within a priority accounts take turns.
mediajobs jobs priority JOB_ID high moves a waiting job up (high needs the Pro plan).
--json prints the API's answer, {data: [{position, class, job}]}. Takes --server and --key
(MEDIAJOBS_SERVER, MEDIAJOBS_API_KEY).

Exit status: 0 done; 1 the service refused; 2 usage error.

Flags:
`

// maxQueueLimit is GET /queue's largest limit.
const maxQueueLimit = 1000

func runQueue(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mediajobs queue", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var r remote
	r.flags(fs)
	limit := fs.Int("limit", 100, fmt.Sprintf("waiting jobs to show, 1 to %d", maxQueueLimit))
	asJSON := fs.Bool("json", false, "print the API's answer, {data: [{position, class, job}]}")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), queueUsage)
		fs.PrintDefaults()
	}
	positional, exit, ok := parseCommand(fs, args)
	if !ok {
		return exit
	}
	if len(positional) != 0 {
		fmt.Fprintf(stderr, "mediajobs queue: want no arguments, got %q\n", positional)
		return 2
	}
	if *limit < 1 || *limit > maxQueueLimit {
		fmt.Fprintf(stderr, "mediajobs queue: --limit %d: want 1 to %d\n", *limit, maxQueueLimit)
		return 2
	}
	c, err := r.client()
	if err != nil {
		fmt.Fprintf(stderr, "mediajobs queue: %v\n", err)
		return 2
	}
	resp, err := c.GetQueueWithResponse(ctx, &client.GetQueueParams{Limit: ptr(int64(*limit))})
	if err == nil {
		err = client.ResponseError(resp.HTTPResponse, resp.Body)
	}
	if err == nil && resp.JSON200 == nil {
		err = notJSON(resp.HTTPResponse)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mediajobs queue: %s\n", apiErrorText(err))
		return 1
	}
	if *asJSON {
		fmt.Fprintf(stdout, "%s\n", strings.TrimSpace(string(resp.Body)))
		return 0
	}
	printQueue(stdout, resp.JSON200.Data, time.Now())
	return 0
}

// printQueue writes the queue as a table; now is what a job's age is counted to.
func printQueue(w io.Writer, entries []client.QueueEntry, now time.Time) {
	if len(entries) == 0 {
		fmt.Fprintln(w, "no waiting jobs")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POSITION\tCLASS\tJOB\tPRIORITY\tAGE\tSUMMARY")
	for _, e := range entries {
		prio := "normal"
		if e.Job.Priority != nil {
			prio = string(*e.Job.Priority)
		}
		age := max(now.Sub(time.UnixMilli(e.Job.CreatedAt)), 0).Round(time.Second)
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", e.Position, e.Class, e.Job.ID, prio, age, jobSummary(e.Job))
	}
	_ = tw.Flush()
}
