package integration

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// metricSeries returns the series of /metrics whose name starts with prefix.
func metricSeries(t *testing.T, s *server, prefix string) map[string]bool {
	t.Helper()
	resp, err := http.Get(s.Base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, prefix) {
			series, _, _ := strings.Cut(line, "} ")
			out[series] = true
		}
	}
	return out
}

// An anonymous client sending 20,000 requests with invented methods adds no series to /metrics
// beyond the closed set: the method label is a known method or "other".
func TestRandomMethodsAddNoSeries(t *testing.T) {
	t.Parallel()
	srv := startServer(t, serverOpts{Unthrottled: true})
	http.Get(srv.Base + "/healthz") // the series of a plain request exist before the count
	before := metricSeries(t, srv, "mediajobs_http_requests_total")
	const requests, clients = 20_000, 8
	var wg sync.WaitGroup
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	for w := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 23))
			for i := w; i < requests; i += clients {
				method := fmt.Sprintf("M%06X", rng.Uint32()&0xFFFFFF)
				req, _ := http.NewRequest(method, srv.Base+[]string{"/jobs", "/healthz", "/x/" + method}[i%3], nil)
				resp, err := hc.Do(req)
				if err != nil {
					t.Errorf("request %d: %v", i, err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		})
	}
	wg.Wait()
	after := metricSeries(t, srv, "mediajobs_http_requests_total")
	var added []string
	for s := range after {
		if !before[s] {
			added = append(added, s)
			if !strings.Contains(s, `method="other"`) {
				t.Errorf("a series with an invented method: %s", s)
			}
		}
	}
	// One series per route pattern and status class an unknown method can meet, at most.
	if len(added) > 12 {
		t.Fatalf("%d series added by 20,000 requests with invented methods: %v", len(added), added)
	}
}

// A presigned input URL's secret query appears nowhere a failed fetch is reported: not in the
// job's answer, its job.failed webhook, the delivery history, nor the server's log.
func TestSecretsInURLsAreRedacted(t *testing.T) {
	t.Parallel()
	recv := newWebhookReceiver(t)
	srv := startServer(t, serverOpts{Env: map[string]string{
		"MEDIAJOBS_ALLOW_PRIVATE_NETWORKS": "127.0.0.0/8", "SSL_CERT_FILE": recv.certFile}})
	acct := createAccount(t, srv, "free")
	c := newClient(t, srv, acct.APIKey)
	var ep struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	c.do(http.MethodPost, "/webhook-endpoints", map[string]any{"name": "it", "url": recv.srv.URL + "/hooks",
		"subscribedEvents": []string{"job.failed"}}, nil).decode(t, http.StatusCreated, &ep)

	const sig, cred = "SIGSECRET0123456789abcdef", "CREDSECRET42"
	// .invalid never resolves (RFC 6761): the fetch fails, with the URL in hand.
	input := "https://media.invalid/clip.mp4?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" + cred +
		"&X-Amz-Signature=" + sig + "&X-Amz-Expires=3600"
	id := c.submit(ffmpegJob("ffmpeg -i clip.mp4 -t 1 out.mp4", map[string]any{"clip.mp4": input}, nil))
	j := c.waitTerminal(id)
	if j.Status != "failed" || j.Error == nil || j.Error.Code != "INPUT_FETCH_FAILED" {
		t.Fatalf("job %s %+v, want failed INPUT_FETCH_FAILED", j.Status, j.Error)
	}
	got := recv.next(t, ep.Secret, "job.failed delivery")
	authed := func(target string) []byte {
		r := c.do(http.MethodGet, target, nil, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", target, r.Status, r.Body)
		}
		return r.Body
	}
	var history []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) { // a poll on the history
		history = authed("/webhook-endpoints/" + ep.ID + "/deliveries")
		if bytes.Contains(history, []byte(`"succeeded"`)) || time.Now().After(deadline) {
			break
		}
	}
	for where, b := range map[string][]byte{
		"GET /jobs/{id}":   authed("/jobs/" + id),
		"GET /jobs":        authed("/jobs"),
		"job.failed":       got.body,
		"delivery history": history,
		"server log":       []byte(srv.log.String()),
	} {
		for _, secret := range []string{sig, cred} {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s shows the secret %s:\n%s", where, secret, tail(string(b), 2000))
			}
		}
	}
	if !bytes.Contains(got.body, []byte("media.invalid")) {
		t.Errorf("job.failed no longer names the input's host, so it tells nothing: %s", got.body)
	}
}
