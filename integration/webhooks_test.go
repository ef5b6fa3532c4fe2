package integration

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// webhookReceiver is a local HTTPS receiver; certFile is its certificate, for SSL_CERT_FILE.
type webhookReceiver struct {
	srv      *httptest.Server
	certFile string
	got      chan webhookRequest
}

type webhookRequest struct {
	path   string
	header http.Header
	body   []byte
}

func newWebhookReceiver(t *testing.T) *webhookReceiver {
	t.Helper()
	r := &webhookReceiver{got: make(chan webhookRequest, 16)}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.got <- webhookRequest{path: req.URL.Path, header: req.Header.Clone(), body: body}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	r.certFile = filepath.Join(t.TempDir(), "receiver.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
	if err := os.WriteFile(r.certFile, pemBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	return r
}

// next waits up to 60 s for the receiver's next delivery and checks its signature with an
// independent HMAC-SHA256 over "<X-Service-Timestamp>.<raw body>" under secret.
func (r *webhookReceiver) next(t *testing.T, secret, what string) webhookRequest {
	t.Helper()
	return r.nextOf(t, func(string) string { return secret }, what)
}

// nextOf is next for a receiver of several endpoints: secretOf gives the secret of the
// delivery's URL path.
func (r *webhookReceiver) nextOf(t *testing.T, secretOf func(path string) string, what string) webhookRequest {
	t.Helper()
	var got webhookRequest
	select {
	case got = <-r.got:
	case <-time.After(60 * time.Second):
		t.Fatalf("no %s within 60 s", what)
	}
	h := got.header
	m := hmac.New(sha256.New, []byte(secretOf(got.path)))
	m.Write([]byte(h.Get("X-Service-Timestamp") + "." + string(got.body)))
	if want := "sha256=" + hex.EncodeToString(m.Sum(nil)); h.Get("X-Service-Signature") != want {
		t.Fatalf("X-Service-Signature %q on %s, independent HMAC %q", h.Get("X-Service-Signature"), got.path, want)
	}
	return got
}

// TestWebhookJobCompleted: a job completes and a signed job.completed reaches a local HTTPS
// receiver, through the real binary.
func TestWebhookJobCompleted(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		recv := newWebhookReceiver(t)
		s := startServer(t, serverOpts{Backend: b, Env: map[string]string{
			"MEDIAJOBS_ALLOW_PRIVATE_NETWORKS": "127.0.0.0/8", "SSL_CERT_FILE": recv.certFile}})
		acct := createAccount(t, s, "free")
		c := newClient(t, s, acct.APIKey)

		var ep struct {
			ID     string `json:"id"`
			Secret string `json:"secret"`
		}
		c.do(http.MethodPost, "/webhook-endpoints", map[string]any{"name": "it", "url": recv.srv.URL + "/hooks",
			"subscribedEvents": []string{"job.completed"}}, nil).decode(t, http.StatusCreated, &ep)

		j := c.complete(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=5 -frames:v 1 hook.png", nil, nil))
		got := recv.next(t, ep.Secret, "job.completed delivery")
		h := got.header
		var ev struct {
			Event  string `json:"event"`
			JobID  string `json:"jobId"`
			Output *struct {
				Files []struct {
					URL string `json:"url"`
				} `json:"files"`
			} `json:"output"`
		}
		if err := json.Unmarshal(got.body, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Event != "job.completed" || ev.JobID != j.ID || h.Get("X-Service-Event") != "job.completed" ||
			ev.Output == nil || len(ev.Output.Files) != 1 || ev.Output.Files[0].URL == "" {
			t.Fatalf("delivery %s %v: want a job.completed of %s with a signed file URL", got.body, h, j.ID)
		}
		// The history shows it, succeeded.
		deadline := time.Now().Add(10 * time.Second)
		for {
			var ds []struct {
				ID    string `json:"id"`
				State string `json:"state"`
			}
			c.do(http.MethodGet, "/webhook-endpoints/"+ep.ID+"/deliveries", nil, nil).decode(t, http.StatusOK, &ds)
			if len(ds) == 1 && ds[0].State == "succeeded" && ds[0].ID == h.Get("X-Service-Delivery") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("deliveries %+v: want the one delivery succeeded", ds)
			}
			time.Sleep(100 * time.Millisecond) // the poll interval of a wait on the deliveries
		}
	})
}

// TestWebhookJobCancelled: cancelling a job — waiting, and running — delivers a signed
// job.cancelled with its cost to a subscribed endpoint, and the cancel's answer carries the same
// cost as GET /jobs/{id}.
func TestWebhookJobCancelled(t *testing.T) {
	t.Parallel()
	recv := newWebhookReceiver(t)
	s := startServer(t, serverOpts{Backend: sqliteBackend, Unthrottled: true, Env: map[string]string{
		"MEDIAJOBS_ALLOW_PRIVATE_NETWORKS": "127.0.0.0/8", "SSL_CERT_FILE": recv.certFile, "MEDIAJOBS_SLOTS": "1"}})
	c := newClient(t, s, createAccount(t, s, "pro").APIKey)
	var ep struct {
		Secret string `json:"secret"`
	}
	c.do(http.MethodPost, "/webhook-endpoints", map[string]any{"name": "cancels", "url": recv.srv.URL + "/hooks",
		"subscribedEvents": []string{"job.cancelled"}}, nil).decode(t, http.StatusCreated, &ep)

	marker := "cancelhook_" + randomHex(4)
	running := c.submit(ffmpegJob(longCommand(marker+".mp4"), nil, map[string]any{"timeout": 120}))
	c.waitFor(running, "running", func(j jobView) bool { return j.Status == "running" })
	waitProcesses(t, marker, true)
	waiting := c.submit(ffmpegJob(longCommand("other_"+marker+".mp4"), nil, nil)) // the one slot is taken
	for _, id := range []string{waiting, running} {
		var v jobView
		c.do(http.MethodPost, "/jobs/"+id+"/cancel", nil, nil).decode(t, http.StatusOK, &v)
		if v.Status != "cancelled" || v.Cost == nil {
			t.Fatalf("cancel of %s answered %+v, want cancelled with its cost", id, v)
		}
		if got := c.job(id); got.Cost == nil || got.Cost.Amount != v.Cost.Amount {
			t.Fatalf("GET after the cancel: cost %+v, the cancel said %+v", got.Cost, v.Cost)
		}
		got := recv.next(t, ep.Secret, "job.cancelled delivery")
		var ev struct {
			Event string `json:"event"`
			JobID string `json:"jobId"`
			Cost  *struct {
				Amount int64 `json:"amount"`
			} `json:"cost"`
		}
		if err := json.Unmarshal(got.body, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Event != "job.cancelled" || ev.JobID != id || got.header.Get("X-Service-Event") != "job.cancelled" ||
			ev.Cost == nil || ev.Cost.Amount != v.Cost.Amount {
			t.Fatalf("delivery %s: want a job.cancelled of %s with cost %d", got.body, id, v.Cost.Amount)
		}
	}
	waitProcesses(t, marker, false)
}

// TestWebhookCancelledToEveryTerminalSubscriber: the spec fires a webhook on any terminal
// status. An endpoint subscribed to both of the spec's terminal events, job.completed and
// job.failed, receives job.cancelled without listing it; one subscribed to job.completed alone
// does not.
func TestWebhookCancelledToEveryTerminalSubscriber(t *testing.T) {
	t.Parallel()
	recv := newWebhookReceiver(t)
	s := startServer(t, serverOpts{Backend: sqliteBackend, Unthrottled: true, Env: map[string]string{
		"MEDIAJOBS_ALLOW_PRIVATE_NETWORKS": "127.0.0.0/8", "SSL_CERT_FILE": recv.certFile}})
	c := newClient(t, s, createAccount(t, s, "pro").APIKey)
	type endpoint struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	var every, completed endpoint
	c.do(http.MethodPost, "/webhook-endpoints", map[string]any{"name": "every outcome", "url": recv.srv.URL + "/every",
		"subscribedEvents": []string{"job.completed", "job.failed"}}, nil).decode(t, http.StatusCreated, &every)
	c.do(http.MethodPost, "/webhook-endpoints", map[string]any{"name": "results only", "url": recv.srv.URL + "/completed",
		"subscribedEvents": []string{"job.completed"}}, nil).decode(t, http.StatusCreated, &completed)
	secrets := map[string]string{"/every": every.Secret, "/completed": completed.Secret}

	marker := "cancelled_every_" + randomHex(4)
	cancelled := c.submit(ffmpegJob(longCommand(marker+".mp4"), nil, nil))
	c.do(http.MethodPost, "/jobs/"+cancelled+"/cancel", nil, nil).decode(t, http.StatusOK, nil)
	done := c.complete(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=5 -frames:v 1 after.png", nil, nil))

	// Events are relayed in order, so each endpoint's deliveries for the cancelled job are made
	// before those for the completed one: once /every has both and /completed its one, nothing
	// else is coming.
	type got struct{ path, event, jobID string }
	want := []got{
		{"/every", "job.cancelled", cancelled},
		{"/every", "job.completed", done.ID},
		{"/completed", "job.completed", done.ID},
	}
	var seen []got
	for len(seen) < len(want) {
		r := recv.nextOf(t, func(path string) string { return secrets[path] }, "delivery")
		var ev struct {
			Event string `json:"event"`
			JobID string `json:"jobId"`
		}
		if err := json.Unmarshal(r.body, &ev); err != nil {
			t.Fatal(err)
		}
		seen = append(seen, got{r.path, ev.Event, ev.JobID})
	}
	slices.SortFunc(seen, func(a, b got) int { return strings.Compare(a.path+a.event, b.path+b.event) })
	slices.SortFunc(want, func(a, b got) int { return strings.Compare(a.path+a.event, b.path+b.event) })
	if d := cmp.Diff(want, seen, cmp.AllowUnexported(got{})); d != "" {
		t.Fatalf("deliveries (-want +got):\n%s", d)
	}
	var ds []struct {
		Event string `json:"event"`
	}
	c.do(http.MethodGet, "/webhook-endpoints/"+completed.ID+"/deliveries", nil, nil).decode(t, http.StatusOK, &ds)
	if len(ds) != 1 || ds[0].Event != "job.completed" {
		t.Fatalf("deliveries of the job.completed-only endpoint: %+v, want its one job.completed", ds)
	}
	waitProcesses(t, marker, false)
}
