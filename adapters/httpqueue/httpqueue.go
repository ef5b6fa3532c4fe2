// Package httpqueue is the work queue (workqueue.Queue) over the control plane's authenticated
// HTTP routes, /internal/runner/...: the transport of `mediajobs worker --control http://…`
// for workers that cannot reach the message broker. The routes are httpapi's.
package httpqueue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs/core/workqueue"
)

// Config configures a Client.
type Config struct {
	// URL is the control plane's base URL, http(s)://host:port.
	URL string
	// Token is the worker token (MEDIAJOBS_WORKER_TOKEN).
	Token string
	// HTTP is the client; nil is one with sensible timeouts. A claim's long poll extends the
	// request's own deadline by its wait.
	HTTP *http.Client
}

// Client is a workqueue.Queue over HTTP.
type Client struct {
	base  string
	token string
	http  *http.Client
}

var _ workqueue.Queue = (*Client)(nil)

// ErrUnauthorized is the control plane refusing the worker token.
var ErrUnauthorized = errors.New("httpqueue: the control plane refused the worker token")

// New returns a client of the control plane at cfg.URL.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("httpqueue: control URL %q is not http(s)://host[:port]", cfg.URL)
	}
	if cfg.Token == "" {
		return nil, errors.New("httpqueue: a worker token is required (MEDIAJOBS_WORKER_TOKEN)")
	}
	if cfg.HTTP == nil {
		// No overall timeout: outputs are large and claims long-poll. Each call sets a deadline
		// on its context instead; the transport bounds the connection's own steps.
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = 2 * time.Minute
		cfg.HTTP = &http.Client{Transport: t}
	}
	return &Client{base: strings.TrimRight(cfg.URL, "/"), token: cfg.Token, http: cfg.HTTP}, nil
}

// Claim asks for up to p.Max jobs, long-polling up to p.Wait.
func (c *Client) Claim(ctx context.Context, p workqueue.ClaimParams) ([]workqueue.Assignment, error) {
	body := map[string]any{"class": p.Class, "max": p.Max, "worker": p.Worker, "waitMs": p.Wait.Milliseconds()}
	var out []workqueue.Assignment
	ctx, cancel := context.WithTimeout(ctx, p.Wait+30*time.Second)
	defer cancel()
	if err := c.call(ctx, http.MethodPost, "/internal/runner/claim", body, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Heartbeat keeps a lease.
func (c *Client) Heartbeat(ctx context.Context, b workqueue.Beat) (workqueue.Ack, error) {
	var ack workqueue.Ack
	err := c.call(ctx, http.MethodPost, "/internal/runner/heartbeat", b, &ack)
	return ack, err
}

// Report ends an attempt.
func (c *Client) Report(ctx context.Context, l workqueue.Lease, r workqueue.Result) error {
	return c.call(ctx, http.MethodPost, "/internal/runner/report", map[string]any{"lease": l, "result": r}, nil)
}

// OpenAsset reads an uploaded input of the job.
func (c *Client) OpenAsset(ctx context.Context, l workqueue.Lease, assetID string) (io.ReadCloser, error) {
	req, err := c.request(ctx, http.MethodGet, c.jobURL(l.JobID, "assets", assetID), nil)
	if err != nil {
		return nil, err
	}
	lease(req, l)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("httpqueue: asset %s: %w", assetID, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, c.fail(resp)
	}
	return resp.Body, nil
}

// PutOutput streams one output file of the job to the control plane.
func (c *Client) PutOutput(ctx context.Context, l workqueue.Lease, name string, r io.Reader, max int64) (int64, error) {
	if max > 0 {
		r = io.LimitReader(r, max+1)
	}
	req, err := c.request(ctx, http.MethodPut, c.jobURL(l.JobID, "outputs", name), r)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	lease(req, l)
	var out struct {
		Size int64 `json:"size"`
	}
	if err := c.do(req, &out); err != nil {
		return 0, err
	}
	return out.Size, nil
}

func (c *Client) jobURL(jobID, kind, name string) string {
	return c.base + "/internal/runner/jobs/" + url.PathEscape(jobID) + "/" + kind + "/" + url.PathEscape(name)
}

func lease(req *http.Request, l workqueue.Lease) {
	req.Header.Set("X-Lease-Attempt", strconv.Itoa(l.Attempt))
	req.Header.Set("X-Lease-Token", l.Token)
}

func (c *Client) request(ctx context.Context, method, target string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, fmt.Errorf("httpqueue: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	return req, nil
}

func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := c.request(ctx, method, c.base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	return c.do(req, out)
}

// do sends req and decodes { data } into out.
func (c *Client) do(req *http.Request, out any) error {
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("httpqueue: %s %s: %w", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return c.fail(resp)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return fmt.Errorf("httpqueue: %s %s: decoding the answer: %w", req.Method, req.URL.Path, err)
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		return fmt.Errorf("httpqueue: %s %s: decoding the answer: %w", req.Method, req.URL.Path, err)
	}
	return nil
}

// fail turns an error answer into an error: 409 is a refused lease, 401 a refused token.
func (c *Client) fail(resp *http.Response) error {
	var env struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&env)
	path := resp.Request.URL.Path
	switch resp.StatusCode {
	case http.StatusConflict:
		return fmt.Errorf("%w: %s", workqueue.ErrLeaseRefused, env.Error.Message)
	case http.StatusUnauthorized:
		return ErrUnauthorized
	case http.StatusNotFound:
		if env.Error.Code == "NOT_FOUND" && strings.HasPrefix(path, "/internal/runner/jobs/") {
			return fmt.Errorf("httpqueue: %s: %s", path, env.Error.Message)
		}
		return fmt.Errorf("httpqueue: %s: the control plane takes no remote workers (is MEDIAJOBS_WORKER_TOKEN set on serve?)", path)
	}
	return fmt.Errorf("httpqueue: %s: %d %s: %s", path, resp.StatusCode, env.Error.Code, env.Error.Message)
}
