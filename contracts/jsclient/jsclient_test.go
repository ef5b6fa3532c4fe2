package jsclient_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/contracts"
	"github.com/mediajobs/mediajobs/contracts/jsclient"
)

// TestGeneratedJSClientIsCurrent regenerates the JavaScript client's operations from
// openapi.yaml and fails when js/client/src holds anything else: a change to the document needs
// `go run ./cmd/jsclient` (in contracts) in the same commit.
func TestGeneratedJSClientIsCurrent(t *testing.T) {
	t.Parallel()
	_, files := generate(t)
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join("..", "..", "js", "client", "src", name))
		if err != nil {
			t.Fatalf("%v: run `go run ./cmd/jsclient` in contracts", err)
		}
		if !bytes.Equal(got, want) {
			diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(string(got), "\n"))
			if len(diff) > 4000 {
				diff = diff[:4000] + "\n..."
			}
			t.Errorf("js/client/src/%s is not what openapi.yaml generates; run `go run ./cmd/jsclient` in contracts (-generated +committed):\n%s", name, diff)
		}
	}
}

// TestEveryOperationAndSchemaIsTyped checks the generated files against the document itself: a
// method and a declaration for every operation, a type for every schema.
func TestEveryOperationAndSchemaIsTyped(t *testing.T) {
	t.Parallel()
	doc, files := generate(t)
	js, dts := string(files[jsclient.JSFile]), string(files[jsclient.DTSFile])
	n := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			n++
			id := op.OperationID
			if !regexp.MustCompile(`(?m)^  ` + id + `\(.*\) \{$`).MatchString(js) {
				t.Errorf("%s %s: no method %s in %s", method, path, id, jsclient.JSFile)
			}
			if !regexp.MustCompile(`(?ms)^  ` + id + `\(.*?\): Promise<`).MatchString(dts) {
				t.Errorf("%s %s: no declaration of %s in %s", method, path, id, jsclient.DTSFile)
			}
			if !strings.Contains(js, `"method":"`+method+`","path":"`+path+`"`) {
				t.Errorf("%s %s: not described in operations", method, path)
			}
		}
	}
	if n < 40 {
		t.Errorf("only %d operations in the document", n)
	}
	for name := range doc.Components.Schemas {
		if !strings.Contains(dts, "\nexport type "+name+" = ") {
			t.Errorf("schema %s has no type", name)
		}
	}
}

func TestTypes(t *testing.T) {
	t.Parallel()
	// One small document exercising each schema form the generator writes.
	const src = `openapi: 3.1.0
info: {title: t, version: '1'}
paths:
  /things/{thing_id}:
    get:
      operationId: getThing
      summary: Read a thing
      parameters:
        - {name: thing_id, in: path, required: true, schema: {type: string}}
        - {name: X-Token, in: header, required: true, schema: {type: string}}
        - {name: limit, in: query, schema: {type: integer}}
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Thing'}
        '204': {description: none}
components:
  schemas:
    Thing:
      type: object
      additionalProperties: false
      required: [id, kind]
      properties:
        id: {type: string, description: "The thing's id."}
        kind: {type: string, enum: [a, "b'c"]}
        size: {type: [integer, 'null']}
        tags: {type: object, additionalProperties: {type: string}}
        parts: {type: array, items: {oneOf: [{type: string}, {$ref: '#/components/schemas/Part'}]}}
        fixed: {const: true}
        "odd-name": {type: boolean}
    Part:
      allOf:
        - {$ref: '#/components/schemas/Thing'}
        - {type: object, properties: {extra: {type: number}}}
`
	doc, err := openapi3.NewLoader().LoadFromData([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	files, err := jsclient.Generate(doc)
	if err != nil {
		t.Fatal(err)
	}
	dts := string(files[jsclient.DTSFile])
	for _, want := range []string{
		"export type Part = Thing & {\n  extra?: number;\n  [key: string]: unknown;\n};",
		"export type Thing = {\n  fixed?: true;\n  /** The thing's id. */\n  id: string;\n  kind: 'a' | 'b\\'c';\n  \"odd-name\"?: boolean;\n  parts?: (string | Part)[];\n  size?: number | null;\n  tags?: Record<string, string>;\n};",
		"export interface GetThingOptions extends RequestOptions {\n  xToken: string;\n  limit?: number;\n}",
		"  /** Read a thing (`GET /things/{thing_id}`). */\n  getThing(thingId: string, options: GetThingOptions): Promise<Thing>;",
	} {
		if !strings.Contains(dts, want) {
			t.Errorf("the declarations lack\n%s\n\nin\n%s", want, dts)
		}
	}
	js := string(files[jsclient.JSFile])
	for _, want := range []string{
		`getThing: Object.freeze({"auth":true,"header":{"xToken":"X-Token"},"method":"GET","path":"/things/{thing_id}","pathParams":{"thingId":"thing_id"},"query":{"limit":"limit"},"response":"json"}),`,
		"  getThing(thingId, options = {}) {\n    return this.request(operations.getThing, { options, path: { thingId } });\n  }",
	} {
		if !strings.Contains(js, want) {
			t.Errorf("the module lacks\n%s\n\nin\n%s", want, js)
		}
	}
}

// generate is openapi.yaml and the JavaScript client's files generated from it.
func generate(t *testing.T) (*openapi3.T, jsclient.Files) {
	t.Helper()
	doc, err := contracts.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	files, err := jsclient.Generate(doc)
	if err != nil {
		t.Fatal(err)
	}
	return doc, files
}
