// Command mediajobs is the one binary of the service: the API server, the runner agent and the
// admin tools, as subcommands. `mediajobs help` lists them.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
)

// command is one subcommand. run returns the process exit status.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

var commands = map[string]command{}

// register adds a subcommand; each subcommand file registers itself in init so that main stays
// the same as subcommands are added.
func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("mediajobs: subcommand registered twice: " + c.name)
	}
	commands[c.name] = c
}

func main() {
	// A warm sandbox starts this binary as its launcher (see sandbox.Pool): that is all it does.
	if sandbox.RunLauncher() {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "mediajobs: unknown subcommand %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	return c.run(ctx, args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: mediajobs <subcommand> [flags]")
	fmt.Fprintln(w)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'mediajobs <subcommand> -h' for its flags.")
}
