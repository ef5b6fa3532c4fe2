package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mediajobs/mediajobs/core/job"
)

func init() {
	register(command{name: "workers", summary: "issue, list or revoke worker credentials (the fleet)", run: runWorkers})
}

const workersUsage = `usage: mediajobs workers create --name NAME [--class cpu|gpu] [--data DIR | --database-url URL]
       mediajobs workers list [--json] [--data DIR | --database-url URL]
       mediajobs workers revoke [--data DIR | --database-url URL] NAME|ID

create prints the credential's token once: give it to the worker as MEDIAJOBS_WORKER_TOKEN.
revoke refuses the credential's calls at once, without a restart, and ends the jobs it holds
(re-queued if their FFmpeg step had not begun, else failed RUNNER_LOST, free).`

// runWorkers is the operator's fleet, straight from the store: the same use case as the
// /internal/admin/workers routes.
func runWorkers(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "create" && args[0] != "list" && args[0] != "revoke") {
		fmt.Fprintln(stderr, workersUsage)
		return 2
	}
	var name, class string
	var asJSON bool
	rest := args[1:]
	if args[0] == "revoke" && len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		rest = append(rest[1:len(rest):len(rest)], rest[0]) // the name may come before the flags
	}
	a, fs, code := admin(ctx, "workers "+args[0], rest, stderr, func(fs *flag.FlagSet) {
		switch args[0] {
		case "create":
			fs.StringVar(&name, "name", "", "the credential's name (letters, digits, '.', '_', '-'; at most 64)")
			fs.StringVar(&class, "class", "", "the one compute class its workers may claim: cpu or gpu; empty: any")
		case "list":
			fs.BoolVar(&asJSON, "json", false, "print JSON, one object a line")
		}
	})
	if a == nil {
		return code
	}
	defer a.Close()
	w := a.UC.Workers
	switch args[0] {
	case "create":
		if name == "" {
			fmt.Fprintln(stderr, "mediajobs workers create: --name is required")
			return 2
		}
		secret, c, err := w.Create(ctx, name, job.Class(class))
		if err != nil {
			fmt.Fprintln(stderr, "mediajobs workers create:", err)
			return 1
		}
		printJSON(stdout, map[string]string{"id": c.ID, "name": c.Name, "class": orAny(string(c.Class)), "token": secret})
		fmt.Fprintln(stderr, "mediajobs workers create: the token is shown this once; give it to the worker as MEDIAJOBS_WORKER_TOKEN")
		return 0
	case "revoke":
		if fs.NArg() != 1 {
			fmt.Fprintln(stderr, "mediajobs workers revoke: name the credential (its name or wkr_ ID)")
			return 2
		}
		v, err := w.Revoke(ctx, fs.Arg(0))
		if err != nil {
			fmt.Fprintln(stderr, "mediajobs workers revoke:", err)
			return 1
		}
		printJSON(stdout, map[string]string{"id": v.ID, "name": v.Name, "status": "revoked"})
		return 0
	}
	list, err := w.List(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "mediajobs workers list:", err)
		return 1
	}
	if asJSON {
		for _, v := range list {
			printJSON(stdout, v)
		}
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tID\tCLASS\tSTATUS\tLAST SEEN\tVERSION\tRUNNING JOBS")
	for _, v := range list {
		status, seen := "active", "never"
		if v.RevokedAt != nil {
			status = "revoked " + v.RevokedAt.Format(time.RFC3339)
		}
		if v.LastSeen != nil {
			seen = v.LastSeen.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", v.Name, v.ID, orAny(string(v.Class)), status, seen, orDash(v.Version), v.RunningJobs)
	}
	_ = tw.Flush()
	return 0
}

func orAny(s string) string {
	if s == "" {
		return "any"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
