package httpqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs/core/workqueue"
)

// Files moves a job's bytes over HTTP: it reads the job's uploaded assets and writes its
// outputs at the URLs the control plane serves them on, with the worker token as the bearer
// credential and the job's lease in the X-Lease-Attempt and X-Lease-Token headers. The HTTP
// transport uses it on its own routes; the broker transport on the URLs an Assignment carries,
// since bytes do not belong on a message broker.
type Files struct {
	token string
	http  *http.Client
}

// NewFiles returns Files that authenticate with the worker token over hc; nil is a client with
// no overall timeout (outputs are large and claims long-poll: each call sets a deadline on its
// context instead) whose transport bounds the connection's own steps.
func NewFiles(token string, hc *http.Client) *Files {
	if hc == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = 2 * time.Minute
		hc = &http.Client{Transport: t}
	}
	return &Files{token: token, http: hc}
}

// openAnswerWithin bounds how long Open waits for an asset's answer to begin. The control plane
// answers once the file is open, so a longer wait is a connection that died under the request
// (a network cut): it is given up as unavailable, for the caller to try again on a new
// connection, rather than waited on for the transport's ResponseHeaderTimeout, which is long
// for the outputs' uploads (answered only once the whole body is stored).
var openAnswerWithin = 30 * time.Second

var errNoAnswer = errors.New("no answer began in time")

// Open reads the asset at target, on behalf of lease l. A 409 is workqueue.ErrLeaseRefused.
func (f *Files) Open(ctx context.Context, target string, l workqueue.Lease) (io.ReadCloser, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	req, err := f.request(ctx, http.MethodGet, target, nil)
	if err != nil {
		cancel(nil)
		return nil, err
	}
	lease(req, l)
	timer := time.AfterFunc(openAnswerWithin, func() { cancel(errNoAnswer) })
	resp, err := f.http.Do(req)
	if !timer.Stop() && err == nil { // the answer began just as the time was up
		resp.Body.Close()
		err = errNoAnswer
	}
	if err != nil {
		cancel(nil)
		return nil, fmt.Errorf("httpqueue: GET %s: %w: %w", req.URL.Path, workqueue.ErrUnavailable, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer cancel(nil)
		defer resp.Body.Close()
		return nil, fail(resp)
	}
	return cancelOnClose{resp.Body, cancel}, nil
}

// cancelOnClose is a response body that ends its request's context when closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel(nil)
	return err
}

// Put streams r to target as an output of lease l's job, at most max bytes (0: no cap here;
// the control plane caps it at the plan's limit), and returns the size the control plane
// stored. A 409 is workqueue.ErrLeaseRefused.
func (f *Files) Put(ctx context.Context, target string, l workqueue.Lease, r io.Reader, max int64) (int64, error) {
	if max > 0 {
		r = io.LimitReader(r, max+1)
	}
	req, err := f.request(ctx, http.MethodPut, target, r)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	lease(req, l)
	var out struct {
		Size int64 `json:"size"`
	}
	if err := f.do(req, &out); err != nil {
		return 0, err
	}
	return out.Size, nil
}

// CloseIdleConnections closes the connections the HTTP client keeps for reuse, when its user
// is done.
func (f *Files) CloseIdleConnections() { f.http.CloseIdleConnections() }

func lease(req *http.Request, l workqueue.Lease) {
	req.Header.Set("X-Lease-Attempt", strconv.Itoa(l.Attempt))
	req.Header.Set("X-Lease-Token", l.Token)
}

func (f *Files) request(ctx context.Context, method, target string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, fmt.Errorf("httpqueue: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+f.token)
	return req, nil
}

// do sends req and decodes { data } into out.
func (f *Files) do(req *http.Request, out any) error {
	resp, err := f.http.Do(req)
	if err != nil {
		return fmt.Errorf("httpqueue: %s %s: %w: %w", req.Method, req.URL.Path, workqueue.ErrUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fail(resp)
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
func fail(resp *http.Response) error {
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
		if env.Error.Code == "NOT_FOUND" && strings.Contains(path, "/internal/runner/jobs/") {
			return fmt.Errorf("httpqueue: %s: %s", path, env.Error.Message)
		}
		return fmt.Errorf("httpqueue: %s: the control plane takes no remote workers (is MEDIAJOBS_WORKER_TOKEN set on serve?)", path)
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return fmt.Errorf("httpqueue: %s: %w: %d %s", path, workqueue.ErrUnavailable, resp.StatusCode, env.Error.Message)
	}
	return fmt.Errorf("httpqueue: %s: %d %s: %s", path, resp.StatusCode, env.Error.Code, env.Error.Message)
}
