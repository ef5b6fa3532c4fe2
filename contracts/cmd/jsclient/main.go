// Command jsclient writes the generated operations of the JavaScript client (js/client/src) from
// openapi.yaml. Run it in contracts after changing the document:
//
//	go run ./cmd/jsclient
//
// TestGeneratedJSClientIsCurrent (contracts/jsclient) fails until it has been run.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mediajobs/mediajobs/contracts"
	"github.com/mediajobs/mediajobs/contracts/jsclient"
)

func main() {
	out := flag.String("out", filepath.Join("..", "js", "client", "src"), "the client's source directory")
	flag.Parse()
	doc, err := contracts.Load(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "jsclient:", err)
		os.Exit(1)
	}
	files, err := jsclient.Generate(doc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jsclient:", err)
		os.Exit(1)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(*out, name), b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "jsclient:", err)
			os.Exit(1)
		}
	}
}
