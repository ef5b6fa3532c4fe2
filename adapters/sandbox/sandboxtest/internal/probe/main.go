// Command probe is what the sandbox suite runs inside a sandbox in place of a compromised
// FFmpeg: "probe syscalls" attempts the system calls the filter denies, and a few it allows,
// printing one "name<TAB>result" line each (OK, an errno name, or ABSENT for an ABI this
// kernel lacks); "probe grow" allocates and touches memory until something stops it.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: probe syscalls|grow")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "syscalls":
		syscalls()
	case "grow":
		grow()
	case "i386":
		i386(os.Args[2:])
	case "true":
	default:
		fmt.Fprintf(os.Stderr, "probe: unknown mode %q\n", os.Args[1])
		os.Exit(2)
	}
}
