package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// New returns a client of the service at server (such as "http://127.0.0.1:8080") that sends
// apiKey as its bearer token on every request.
func New(server, apiKey string, opts ...ClientOption) (*ClientWithResponses, error) {
	if server == "" {
		return nil, errors.New("client: no server address")
	}
	if apiKey != "" {
		opts = append([]ClientOption{WithAPIKey(apiKey)}, opts...)
	}
	return NewClientWithResponses(server, opts...)
}

// WithAPIKey sends key as `Authorization: Bearer <key>`.
func WithAPIKey(key string) ClientOption {
	return WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+key)
		return nil
	})
}

// APIError is a request the API refused: its `{ error: { code, message } }` answer and status.
type APIError struct {
	StatusCode int
	Code       Code
	Message    string
	// RetryAfter is the wait a 429 RATE_LIMITED answer asks for (its Retry-After header).
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("HTTP %d: %s", e.StatusCode, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// ResponseError is nil for a 2xx answer and the *APIError of any other, so that a caller of a
// generated ...WithResponse method can write
//
//	resp, err := c.GetJobWithResponse(ctx, id, nil)
//	if err == nil {
//		err = client.ResponseError(resp.HTTPResponse, resp.Body)
//	}
func ResponseError(resp *http.Response, body []byte) error {
	if resp == nil {
		return errors.New("client: no response")
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return nil
	}
	e := &APIError{StatusCode: resp.StatusCode, RetryAfter: retryAfter(resp.Header)}
	var env ErrorEnvelope
	if json.Unmarshal(body, &env) == nil && env.Error.Code != "" {
		e.Code, e.Message = env.Error.Code, env.Error.Message
		return e
	}
	// Not the API's envelope (a proxy in between, say): keep what it said, briefly.
	msg := strings.TrimSpace(string(body))
	if len(msg) > 200 {
		msg = msg[:200] + "..."
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	e.Message = msg
	return e
}

// retryAfter reads Retry-After in seconds; 0 when absent or not a number of seconds.
func retryAfter(h http.Header) time.Duration {
	s, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After")))
	if err != nil || s < 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}

// FFmpegJob is the request of an `ffmpeg` job. Inputs maps staged names to an https URL or an
// uploaded asset's URL (a string), or to {"url": ...} or {"content": ...} objects.
type FFmpegJob struct {
	Command      string
	Inputs       map[string]any
	OutputFormat string
	// Timeout is params.timeout in seconds (1 to 900); 0 leaves the service's default.
	Timeout int
	// Compute is "auto", "cpu" or "gpu"; empty leaves the default (auto).
	Compute string
	// Preset names a preset (GET /presets) to run in place of Command, with Variables, its
	// values by name (absent ones take their defaults).
	Preset    string
	Variables map[string]any
	// Split is params.split: "auto" asks for the encode to be split across the workers (Pro);
	// empty leaves the default (off).
	Split string
}

// Request builds the JobRequest of POST /jobs.
func (f FFmpegJob) Request() (JobRequest, error) {
	params := map[string]any{"command": f.Command}
	if f.Preset != "" {
		params = map[string]any{"preset": f.Preset}
		if f.Variables != nil {
			params["variables"] = f.Variables
		}
	}
	if f.OutputFormat != "" {
		params["outputFormat"] = f.OutputFormat
	}
	if f.Timeout != 0 {
		params["timeout"] = f.Timeout
	}
	if f.Compute != "" {
		params["compute"] = f.Compute
	}
	if f.Split != "" {
		params["split"] = f.Split
	}
	req := JobRequest{Type: "ffmpeg", Params: &JobRequest_Params{}}
	// The unions of the generated request take raw JSON; going through it keeps this independent
	// of the generated names of the union's branches, which follow their position in the document.
	b, err := json.Marshal(params)
	if err != nil {
		return JobRequest{}, fmt.Errorf("client: ffmpeg params: %w", err)
	}
	if err := req.Params.UnmarshalJSON(b); err != nil {
		return JobRequest{}, fmt.Errorf("client: ffmpeg params: %w", err)
	}
	if len(f.Inputs) > 0 {
		b, err := json.Marshal(f.Inputs)
		if err != nil {
			return JobRequest{}, fmt.Errorf("client: ffmpeg inputs: %w", err)
		}
		req.Inputs = &JobRequest_Inputs{}
		if err := req.Inputs.UnmarshalJSON(b); err != nil {
			return JobRequest{}, fmt.Errorf("client: ffmpeg inputs: %w", err)
		}
	}
	return req, nil
}

// SubmitOption tunes Submit.
type SubmitOption func(*SubmitJobParams)

// WithIdempotencyKey sends the Idempotency-Key header: a repeat of the submit with the same
// key and request (after a network error, say) answers the first job instead of making a
// second one, for 24 hours.
func WithIdempotencyKey(key string) SubmitOption {
	return func(p *SubmitJobParams) { p.IdempotencyKey = &key }
}

// Submit sends POST /jobs and returns the created job's ID and status (`waiting`). A refusal
// (validation, plan, credits, rate; IDEMPOTENCY_KEY_REUSED) is an *APIError.
func (c *ClientWithResponses) Submit(ctx context.Context, req JobRequest, opts ...SubmitOption) (*Created, error) {
	var params SubmitJobParams
	for _, o := range opts {
		o(&params)
	}
	resp, err := c.SubmitJobWithResponse(ctx, &params, req)
	if err != nil {
		return nil, fmt.Errorf("client: submit: %w", err)
	}
	if err := ResponseError(resp.HTTPResponse, resp.Body); err != nil {
		return nil, err
	}
	if resp.JSON201 == nil {
		return nil, fmt.Errorf("client: submit: answer %d is not a created job", resp.StatusCode())
	}
	return &resp.JSON201.Data, nil
}
