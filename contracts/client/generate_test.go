package client_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGeneratedClientIsCurrent regenerates the client from openapi.yaml with the generator
// version pinned in go.mod and fails when client.gen.go differs: a change to the document needs
// `make client` in the same commit. It needs the Go module cache (or proxy), nothing else.
func TestGeneratedClientIsCurrent(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "client.gen.go")
	cmd := exec.Command("go", "tool", "oapi-codegen", "-config", "oapi-codegen.yaml", "-o", out, "../openapi.yaml")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go tool oapi-codegen: %v\n%s", err, stderr.String())
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("client.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(string(got), "\n"))
		if len(diff) > 4000 {
			diff = diff[:4000] + "\n..."
		}
		t.Fatalf("client.gen.go is not what openapi.yaml generates; run `make client` (-generated +committed):\n%s", diff)
	}
}
