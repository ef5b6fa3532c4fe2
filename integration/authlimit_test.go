package integration

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestFailedAuthRateLimited: 10,000 wrong keys sent from one address over about 10 seconds get
// 429 RATE_LIMITED with Retry-After once the address's budget of failures is spent (60 in any
// rolling minute), on bearer auth, POST /session and /mcp alike; the server logs the address once a
// minute, not once a failure; and a valid key from the same address keeps working throughout.
func TestFailedAuthRateLimited(t *testing.T) {
	t.Parallel()
	srv := startServer(t, serverOpts{Unthrottled: true, Backend: sqliteBackend, Env: map[string]string{"MEDIAJOBS_RUNNER": "false"}})
	valid := createAccount(t, srv, "pro").APIKey
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 32
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}

	// send makes one attempt with key, as bearer or by signing in, and returns the answer; every
	// hundredth is checked against the contract too.
	var sent atomic.Int64
	send := func(key string, signIn bool) (*http.Response, []byte) {
		var req *http.Request
		if signIn {
			body, _ := json.Marshal(map[string]string{"apiKey": key})
			req, _ = http.NewRequest(http.MethodPost, srv.Base+"/session", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
		} else {
			req, _ = http.NewRequest(http.MethodGet, srv.Base+"/account", nil)
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Errorf("%s %s: %v", req.Method, req.URL.Path, err)
			return nil, nil
		}
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			t.Errorf("%s %s: %v", req.Method, req.URL.Path, err)
		}
		if sent.Add(1)%100 == 0 {
			resp.Body = io.NopCloser(bytes.NewReader(b))
			if err := contract.Validate(req, resp); err != nil {
				t.Errorf("response does not match openapi.yaml: %v", err)
			}
		}
		return resp, b
	}

	const wrongKeys, senders = 10_000, 16
	const pace = 10 * time.Second / wrongKeys
	start := time.Now()
	var (
		mu       sync.Mutex
		statuses = map[int]int{}
		wg       sync.WaitGroup
		keys     = make(chan int)
	)
	for range senders {
		wg.Go(func() {
			for i := range keys {
				resp, body := send("mj_"+randomHex(16), i%10 == 0)
				if resp == nil {
					continue
				}
				if resp.StatusCode == http.StatusTooManyRequests {
					var e struct {
						Error apiError `json:"error"`
					}
					_ = json.Unmarshal(body, &e)
					if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 1 || e.Error.Code != "RATE_LIMITED" {
						t.Errorf("429 with Retry-After %q and %s, want seconds and RATE_LIMITED", resp.Header.Get("Retry-After"), body)
					}
				}
				mu.Lock()
				statuses[resp.StatusCode]++
				mu.Unlock()
			}
		})
	}
	// The valid key, as bearer and signing in, all along.
	flooding := make(chan struct{})
	validDone := make(chan int)
	go func() {
		n := 0
		defer func() { validDone <- n }()
		for {
			select {
			case <-flooding:
				return
			// A client's pace; the loop ends with the flood.
			case <-time.After(100 * time.Millisecond):
			}
			want := http.StatusOK
			if n%5 == 4 {
				want = http.StatusCreated
			}
			if resp, body := send(valid, want == http.StatusCreated); resp != nil && resp.StatusCode != want {
				t.Errorf("the valid key during the flood: %d %s, want %d", resp.StatusCode, body, want)
			}
			n++
		}
	}()
	for i := range wrongKeys {
		// Spread the keys over 10 s rather than all at once: a slow machine only stretches it.
		time.Sleep(time.Until(start.Add(time.Duration(i) * pace)))
		keys <- i
	}
	close(keys)
	wg.Wait()
	elapsed := time.Since(start)
	close(flooding)
	if n := <-validDone; n < 10 {
		t.Errorf("the valid key was tried %d times during the flood, want at least 10", n)
	}

	// 60 failures in any rolling minute come back as 401 (the flood takes less than one);
	// everything else is 429.
	allowed := 60
	t.Logf("%d wrong keys in %v: %v", wrongKeys, elapsed.Round(time.Millisecond), statuses)
	if statuses[http.StatusUnauthorized]+statuses[http.StatusTooManyRequests] != wrongKeys {
		t.Errorf("statuses %v: want only 401 and 429 for %d wrong keys", statuses, wrongKeys)
	}
	if n := statuses[http.StatusUnauthorized]; n != allowed {
		t.Errorf("%d wrong keys answered 401 in %v, want %d", n, elapsed, allowed)
	}

	// /mcp authenticates bearer keys on its own and shares the budget: the address is past it,
	// so a wrong key there is 429 too, and the valid key still opens a session.
	mcp := func(key string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, srv.Base+"/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"it","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("POST /mcp: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp
	}
	if resp := mcp("mj_wrong_mcp_key"); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a wrong key on /mcp past the budget: %d, Retry-After %q; want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if resp := mcp(valid); resp.StatusCode != http.StatusOK {
		t.Errorf("the valid key on /mcp past the budget: %d, want 200", resp.StatusCode)
	}

	var lines []string
	for _, l := range strings.Split(srv.log.String(), "\n") {
		if strings.Contains(l, "too many failed authentications") {
			lines = append(lines, l)
		}
	}
	if max := 1 + int(elapsed/time.Minute); len(lines) < 1 || len(lines) > max {
		t.Errorf("%d log lines about failed authentications in %v, want 1 to %d:\n%s", len(lines), elapsed, max, strings.Join(lines, "\n"))
	}
	for _, l := range lines {
		if !strings.Contains(l, `"client":"127.0.0.1"`) || strings.Contains(l, "mj_") {
			t.Errorf("log line %s: want the client address and nothing of a key", l)
		}
	}
}
