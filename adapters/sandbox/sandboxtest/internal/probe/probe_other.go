//go:build !amd64

package main

import (
	"fmt"
	"os"
)

// The filter, and so the probe, are amd64's.
func syscalls()     { fmt.Fprintln(os.Stderr, "probe: syscalls is amd64 only"); os.Exit(2) }
func grow()         { fmt.Fprintln(os.Stderr, "probe: grow is amd64 only"); os.Exit(2) }
func i386([]string) { fmt.Fprintln(os.Stderr, "probe: i386 is amd64 only"); os.Exit(2) }
