package integration

import (
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// slowMediaServer answers every request after delay, so that a runner fetching from it is busy
// downloading, its FFmpeg step not started, when a cancel comes.
func slowMediaServer(t *testing.T, body []byte, delay time.Duration) (url, certFile string) {
	t.Helper()
	stop := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(delay):
		case <-stop:
		case <-r.Context().Done():
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	certFile = filepath.Join(t.TempDir(), "cert.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return srv.URL, certFile
}

// TestNoChargeWithoutCompute races 200 submits each cancelled at once, with the runner on, and
// runs a job whose input cannot be fetched: none of them is charged, since no compute ran.
func TestNoChargeWithoutCompute(t *testing.T) {
	t.Parallel()
	src, cert := slowMediaServer(t, makeMedia(t, 1), 2*time.Second)
	s := startServer(t, serverOpts{Backend: sqliteBackend, Unthrottled: true, Env: map[string]string{
		"MEDIAJOBS_ALLOW_PRIVATE_NETWORKS": "127.0.0.0/8", "SSL_CERT_FILE": cert, "MEDIAJOBS_SLOTS": "2"}})
	c := newClient(t, s, createAccount(t, s, "pro").APIKey)

	// A free port: the connection is refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unreachable := "https://" + ln.Addr().String() + "/in.mp4"
	ln.Close()
	failed := c.submit(ffmpegJob("ffmpeg -i "+unreachable+" -c copy out.mp4", nil, nil))

	const n = 200
	ids := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ids[i] = c.submit(ffmpegJob("ffmpeg -i "+src+"/clip.mp4 -c copy out.mp4", nil, nil))
			var v jobView
			c.do(http.MethodPost, "/jobs/"+ids[i]+"/cancel", nil, nil).decode(t, http.StatusOK, &v)
			if v.Status != "cancelled" || v.Cost == nil || v.Cost.Amount != 0 {
				t.Errorf("cancel of %s: %s, cost %+v", ids[i], v.Status, v.Cost)
			}
		})
	}
	wg.Wait()

	j := c.waitTerminal(failed)
	if j.Status != "failed" || j.Error.Code != "INPUT_FETCH_FAILED" || j.Cost == nil || j.Cost.Amount != 0 {
		t.Fatalf("unreachable input: %s %s, cost %+v", j.Status, errorText(j), j.Cost)
	}
	if j.Error.Detail != nil || len(j.Error.Message) > 300 {
		t.Fatalf("the error says more than the user needs: %q", j.Error.Message)
	}
	for id, k := range charges(t, c) {
		t.Errorf("job %s was charged %d times; nothing ran", id, k)
	}
}
