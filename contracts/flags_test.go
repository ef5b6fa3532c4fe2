package contracts_test

import (
	"bytes"
	"flag"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/validator"
)

var update = flag.Bool("update", false, "rewrite the generated parts of openapi.yaml")

// The flag allowlist in the ffmpeg tag's description, between these lines, is written from the
// validator: /docs renders it, and it cannot drift from what the flags layer lets through.
const (
	flagsBegin = "      <!-- flag allowlist: written by `go test ./contracts -run TestFlagAllowlistDocumented -update` -->\n"
	flagsEnd   = "      <!-- end of the flag allowlist -->\n"
)

func TestFlagAllowlistDocumented(t *testing.T) {
	doc, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(doc, []byte(flagsBegin)), bytes.Index(doc, []byte(flagsEnd))
	if i < 0 || j < i {
		t.Fatalf("openapi.yaml lacks the lines that enclose the flag allowlist:\n%s%s", flagsBegin, flagsEnd)
	}
	got, want := string(doc[i+len(flagsBegin):j]), flagTable()
	if got == want {
		return
	}
	if !*update {
		t.Fatalf("the flag allowlist in openapi.yaml is not the validator's: run go test ./contracts -run TestFlagAllowlistDocumented -update")
	}
	out := append(append(append([]byte{}, doc[:i+len(flagsBegin)]...), want...), doc[j:]...)
	if err := os.WriteFile("openapi.yaml", out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// flagTable is the allowlist as a Markdown table, one row per reason, indented for the
// description's block scalar.
func flagTable() string {
	var b strings.Builder
	groups := validator.FlagGroups()
	n := 0
	for _, g := range groups {
		n += len(g.Flags)
	}
	const indent = "      "
	b.WriteString("\n" + indent + "The allowlist holds " + strconv.Itoa(n) + " flags:\n\n")
	b.WriteString(indent + "| Why it is safe | Flags |\n" + indent + "|---|---|\n")
	for _, g := range groups {
		names := make([]string, len(g.Flags))
		for k, f := range g.Flags {
			names[k] = "`" + f + "`"
		}
		b.WriteString(indent + "| " + strings.ReplaceAll(g.Reason, "|", `\|`) + " | " + strings.Join(names, " ") + " |\n")
	}
	b.WriteString("\n")
	return b.String()
}
