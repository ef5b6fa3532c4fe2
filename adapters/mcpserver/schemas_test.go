package mcpserver_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/adapters/mcpserver"
)

var update = flag.Bool("update", false, "rewrite contracts/mcp from the MCP server's tool schemas")

// schemaDir is where the contracts module keeps the published tool schemas.
const schemaDir = "../../contracts/mcp"

// TestMCPToolSchemas checks that mcp/<tool>.input.json and .output.json are the schemas the MCP
// server announces. After a deliberate change: go test ./adapters/mcpserver -run TestMCPToolSchemas -update
func TestMCPToolSchemas(t *testing.T) {
	t.Parallel()
	tools := mcpserver.Tools()
	if len(tools) != 13 {
		t.Fatalf("the MCP server has %d tools, want the spec's six, validate_command, set_job_priority, get_queue, list_presets, get_preset, save_preset and list_destinations", len(tools))
	}
	for _, tool := range tools {
		for kind, schema := range map[string]any{"input": tool.InputSchema, "output": tool.OutputSchema} {
			path := filepath.Join(schemaDir, tool.Name+"."+kind+".json")
			got, err := json.MarshalIndent(schema, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if *update {
				if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if diff := cmp.Diff(w, g); diff != "" {
				t.Errorf("%s differs from the server's schema (-file +server); if the change is meant, run with -update:\n%s", path, diff)
			}
		}
	}
}
