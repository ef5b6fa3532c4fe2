package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

func init() {
	register(command{
		name:    "healthcheck",
		summary: "ask a running serve whether it is alive (/healthz) or ready (/readyz); exit 0 if so",
		run:     runHealthcheck,
	})
}

// runHealthcheck is for container health checks and operators: the image has no curl, and the
// address defaults to the one serve listens on in this environment.
func runHealthcheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mediajobs healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := "127.0.0.1:8080"
	if a := os.Getenv("MEDIAJOBS_ADDR"); a != "" {
		def = a
	}
	addr := fs.String("addr", def, "the serve to ask, host:port or a base URL (MEDIAJOBS_ADDR)")
	ready := fs.Bool("ready", false, "ask /readyz (the store, the broker and blob storage answer) instead of /healthz (the process answers)")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the answer")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mediajobs healthcheck: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	base := *addr
	if !strings.Contains(base, "://") {
		// A listen address of every interface is asked on loopback.
		if host, port, err := net.SplitHostPort(base); err == nil && (host == "" || host == "0.0.0.0" || host == "::") {
			base = net.JoinHostPort("127.0.0.1", port)
		}
		base = "http://" + base
	}
	path := "/healthz"
	if *ready {
		path = "/readyz"
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+path, nil)
	if err != nil {
		fmt.Fprintf(stderr, "mediajobs healthcheck: %v\n", err)
		return 2
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "mediajobs healthcheck: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "mediajobs healthcheck: %s answered %d: %s\n", path, resp.StatusCode, strings.TrimSpace(string(body)))
		return 1
	}
	fmt.Fprintf(stdout, "%s: ok\n", path)
	return 0
}
