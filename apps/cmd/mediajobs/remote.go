package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/mediajobs/mediajobs/contracts/client"
)

// The subcommands that talk to a running service (run, jobs) go through the generated client
// of contracts/client, the one a Go program would use, so the CLI exercises it end to end.

// defaultServer is the address `make run` serves on.
const defaultServer = "http://127.0.0.1:8080"

// remote holds the flags that name a service and an account.
type remote struct {
	server, key string
}

func (r *remote) flags(fs *flag.FlagSet) {
	server := os.Getenv("MEDIAJOBS_SERVER")
	if server == "" {
		server = defaultServer
	}
	fs.StringVar(&r.server, "server", server, "the service's `URL` (MEDIAJOBS_SERVER)")
	// The key is read from the environment after parsing, not as the flag's default, which -h
	// would print.
	fs.StringVar(&r.key, "key", "", "the account's API `key`, mj_... (default $MEDIAJOBS_API_KEY)")
}

// client checks the flags and makes the API client.
func (r *remote) client() (*client.ClientWithResponses, error) {
	if r.key == "" {
		r.key = os.Getenv("MEDIAJOBS_API_KEY")
	}
	if r.key == "" {
		return nil, errors.New("no API key: give --key or set MEDIAJOBS_API_KEY (make run prints one)")
	}
	if !strings.HasPrefix(r.server, "http://") && !strings.HasPrefix(r.server, "https://") {
		return nil, fmt.Errorf("--server %q: want an http:// or https:// URL", r.server)
	}
	return client.New(r.server, r.key)
}

// subcommandFlags splits a client command's subcommand off args and makes its flag set, with
// --server and --key and -h printing usage; ok is false, usage printed, when no subcommand is
// given.
func subcommandFlags(command, usage string, args []string, stderr io.Writer) (sub string, rest []string, fs *flag.FlagSet, r *remote, ok bool) {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return "", nil, nil, nil, false
	}
	fs = flag.NewFlagSet("mediajobs "+command+" "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	r = &remote{}
	r.flags(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	return args[0], args[1:], fs, r, true
}

// otherSubcommand answers a subcommand that a command's own switch does not take: the usage for
// help (exit 0), else the refusal of an unknown subcommand (exit 2).
func otherSubcommand(command, usage, sub string, fs *flag.FlagSet, stderr io.Writer) int {
	if sub == "-h" || sub == "--help" || sub == "help" {
		fs.Usage()
		return 0
	}
	fmt.Fprintf(stderr, "mediajobs %s: unknown subcommand %q\n\n", command, sub)
	fmt.Fprint(stderr, usage)
	return 2
}

// isTerminal reports whether w is a terminal, where a progress bar may redraw itself; anywhere
// else (a file, a pipe, a CI log) progress is printed as plain lines.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// apiErrorText is how a refusal of the service is printed: its code and message.
func apiErrorText(err error) string {
	var apiErr *client.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Error()
	}
	return err.Error()
}
