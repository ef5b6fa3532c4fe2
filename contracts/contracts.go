package contracts

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/oasdiff/yaml"
)

//go:embed openapi.yaml
var openapiYAML []byte

// OpenAPIYAML returns the document as written.
func OpenAPIYAML() []byte { return bytes.Clone(openapiYAML) }

var jsonDoc = sync.OnceValues(func() ([]byte, error) { return yaml.YAMLToJSON(openapiYAML) })

// OpenAPIJSON returns the document converted to JSON, as GET /openapi.json serves it. The
// conversion of the embedded document is tested, so it cannot fail at run time.
func OpenAPIJSON() []byte {
	b, err := jsonDoc()
	if err != nil {
		panic(fmt.Sprintf("contracts: openapi.yaml is not valid YAML: %v", err))
	}
	return bytes.Clone(b)
}

// Load parses and validates the document.
func Load(ctx context.Context) (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(openapiYAML)
	if err != nil {
		return nil, fmt.Errorf("contracts: load openapi.yaml: %w", err)
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("contracts: openapi.yaml is not valid: %w", err)
	}
	return doc, nil
}

// ResponseValidator checks HTTP responses against the document: the status must be one the
// operation documents, and headers and JSON bodies must match their schemas. A response to a
// path or method the document does not have must be the API's 404 or 405 error envelope.
type ResponseValidator struct {
	doc      *openapi3.T
	router   routers.Router
	envelope *openapi3.SchemaRef
}

// NewResponseValidator loads the document and builds a validator.
func NewResponseValidator(ctx context.Context) (*ResponseValidator, error) {
	doc, err := Load(ctx)
	if err != nil {
		return nil, err
	}
	r, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("contracts: route the document: %w", err)
	}
	env := doc.Components.Schemas["ErrorEnvelope"]
	if env == nil {
		return nil, errors.New("contracts: the document has no ErrorEnvelope schema")
	}
	return &ResponseValidator{doc: doc, router: r, envelope: env}, nil
}

// Document returns the loaded document.
func (v *ResponseValidator) Document() *openapi3.T { return v.doc }

// Validate checks resp, the answer to req (resp.Request when req is nil). It reads the body and
// puts it back, so the caller can still read it.
func (v *ResponseValidator) Validate(req *http.Request, resp *http.Response) error {
	if req == nil {
		req = resp.Request
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("contracts: read response body: %w", err)
	}
	return v.ValidateBody(req, resp.StatusCode, resp.Header, body)
}

// ValidateBody checks a response given as status, header and body.
func (v *ResponseValidator) ValidateBody(req *http.Request, status int, header http.Header, body []byte) error {
	ctx := req.Context()
	route, params, err := v.router.FindRoute(stripHost(req))
	if req.Method == http.MethodHead && errors.Is(err, routers.ErrMethodNotAllowed) {
		// Every GET answers HEAD ("Conventions" in the document): a HEAD is held to its GET.
		get := stripHost(req)
		get.Method = http.MethodGet
		route, params, err = v.router.FindRoute(get)
	}
	switch {
	case errors.Is(err, routers.ErrPathNotFound):
		return v.validateUnrouted(req, status, header, body, http.StatusNotFound)
	case errors.Is(err, routers.ErrMethodNotAllowed):
		return v.validateUnrouted(req, status, header, body, http.StatusMethodNotAllowed)
	case err != nil:
		return fmt.Errorf("contracts: %s %s: %w", req.Method, req.URL.Path, err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(body)
	if req.Method == http.MethodHead {
		// ValidateResponse skips HEAD; the status must still be documented for GET's twin.
		if route.Operation.Responses.Status(status) == nil {
			return fmt.Errorf("contracts: HEAD %s: status %d is not documented", req.URL.Path, status)
		}
		return nil
	}
	if err := openapi3filter.ValidateResponse(ctx, in); err != nil {
		return fmt.Errorf("contracts: %s %s → %d: %w", req.Method, req.URL.Path, status, err)
	}
	return nil
}

// validateUnrouted checks the answer to a request no operation takes: the API's error envelope
// with the given status.
func (v *ResponseValidator) validateUnrouted(req *http.Request, status int, header http.Header, body []byte, want int) error {
	if status != want {
		return fmt.Errorf("contracts: %s %s is not in the document, and the answer is %d, not %d", req.Method, req.URL.Path, status, want)
	}
	if req.Method == http.MethodHead {
		return nil
	}
	if ct := header.Get("Content-Type"); ct != "application/json" {
		return fmt.Errorf("contracts: %s %s → %d: Content-Type %q, want application/json", req.Method, req.URL.Path, status, ct)
	}
	var value any
	if err := json.Unmarshal(body, &value); err != nil {
		return fmt.Errorf("contracts: %s %s → %d: body is not JSON: %w", req.Method, req.URL.Path, status, err)
	}
	if err := v.envelope.Value.VisitJSON(value, openapi3.EnableJSONSchema2020(), openapi3.VisitAsResponse()); err != nil {
		return fmt.Errorf("contracts: %s %s → %d: body is not the error envelope: %w", req.Method, req.URL.Path, status, err)
	}
	return nil
}

// stripHost makes a client's request (absolute URL, any host) match the document's relative
// server.
func stripHost(req *http.Request) *http.Request {
	r := req.Clone(req.Context())
	r.URL.Scheme, r.URL.Host, r.Host = "", "", ""
	return r
}
