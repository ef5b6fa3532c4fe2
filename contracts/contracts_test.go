package contracts_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mediajobs/mediajobs/contracts"
)

func TestDocumentLoadsAndValidates(t *testing.T) {
	t.Parallel()
	doc, err := contracts.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi = %q, want 3.1", doc.OpenAPI)
	}
	var v map[string]any
	if err := json.Unmarshal(contracts.OpenAPIJSON(), &v); err != nil {
		t.Fatalf("OpenAPIJSON is not JSON: %v", err)
	}
	if v["openapi"] != "3.1.0" {
		t.Fatalf("OpenAPIJSON openapi = %v", v["openapi"])
	}
}
