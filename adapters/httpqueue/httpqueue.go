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
	files *Files
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
	return &Client{base: strings.TrimRight(cfg.URL, "/"), files: NewFiles(cfg.Token, cfg.HTTP)}, nil
}

// CloseIdleConnections closes the connections kept for reuse, when the worker is done.
func (c *Client) CloseIdleConnections() { c.files.CloseIdleConnections() }

// Claim asks for up to p.Max jobs, long-polling up to p.Wait.
func (c *Client) Claim(ctx context.Context, p workqueue.ClaimParams) ([]workqueue.Assignment, error) {
	body := map[string]any{"class": p.Class, "max": p.Max, "worker": p.Worker, "waitMs": p.Wait.Milliseconds()}
	if p.Version != "" {
		body["version"] = p.Version
	}
	if p.Slots > 0 {
		body["slots"] = p.Slots
	}
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
	return c.files.Open(ctx, c.jobURL(l.JobID, "assets", assetID), l)
}

// PutOutput streams one output file of the job to the control plane.
func (c *Client) PutOutput(ctx context.Context, l workqueue.Lease, name string, r io.Reader, max int64) (int64, error) {
	return c.files.Put(ctx, c.jobURL(l.JobID, "outputs", name), l, r, max)
}

func (c *Client) jobURL(jobID, kind, name string) string {
	return c.base + "/internal/runner/jobs/" + url.PathEscape(jobID) + "/" + kind + "/" + url.PathEscape(name)
}

func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := c.files.request(ctx, method, c.base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	return c.files.do(req, out)
}
