// Command mediajobs-launcher is the launcher of warm sandboxes (sandbox.Pool): the program
// bubblewrap starts in each sandbox ahead of its job, which waits for the one command the host
// sends and runs it. `mediajobs serve` and `mediajobs worker` use it when it lies beside their
// own binary (make build puts both in bin/), and their own binary otherwise; it is a program of
// its own because it starts in about a millisecond, where the whole service's binary, all of
// whose packages initialise first, takes twenty, and each job's refill of the pool pays it.
package main

import (
	"fmt"
	"os"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
)

func main() {
	if sandbox.RunLauncher() {
		return
	}
	fmt.Fprintln(os.Stderr, "mediajobs-launcher: runs inside a warm sandbox only, started by mediajobs serve and worker")
	os.Exit(2)
}
