package integration

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestBatchCompletes: a batch of three short jobs, one failing on a bad input, completes with
// two succeeded and one failed, and one signed batch.completed reaches a local HTTPS receiver,
// through the real binary.
func TestBatchCompletes(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		recv := newWebhookReceiver(t)
		s := startServer(t, serverOpts{Backend: b, Env: map[string]string{
			"MEDIAJOBS_ALLOW_PRIVATE_NETWORKS": "127.0.0.0/8", "SSL_CERT_FILE": recv.certFile}})
		acct := createAccount(t, s, "free")
		c := newClient(t, s, acct.APIKey)

		var ep struct {
			Secret string `json:"secret"`
		}
		c.do(http.MethodPost, "/webhook-endpoints", map[string]any{"name": "batches", "url": recv.srv.URL + "/hooks",
			"subscribedEvents": []string{"batch.completed"}}, nil).decode(t, http.StatusCreated, &ep)

		good := ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=5 -frames:v 1 frame.png", nil, nil)
		bad := ffmpegJob("ffmpeg -i bad.mp4 -frames:v 1 frame.png", map[string]any{"bad.mp4": map[string]any{"content": "not a video"}}, nil)
		var cr struct {
			ID     string `json:"id"`
			Status string `json:"status"`
			Total  int    `json:"total"`
			Jobs   []struct {
				ID string `json:"id"`
			} `json:"jobs"`
		}
		c.do(http.MethodPost, "/batches", map[string]any{"jobs": []any{good, bad, good}}, nil).decode(t, http.StatusCreated, &cr)
		if cr.Status != "running" || cr.Total != 3 || len(cr.Jobs) != 3 {
			t.Fatalf("POST /batches answered %+v", cr)
		}

		type batchView struct {
			ID          string   `json:"id"`
			Status      string   `json:"status"`
			Total       int      `json:"total"`
			Succeeded   int      `json:"succeeded"`
			Failed      int      `json:"failed"`
			Cancelled   int      `json:"cancelled"`
			Jobs        []string `json:"jobs"`
			CompletedAt *int64   `json:"completedAt"`
		}
		var v batchView
		deadline := time.Now().Add(90 * time.Second)
		for {
			c.do(http.MethodGet, "/batches/"+cr.ID, nil, nil).decode(t, http.StatusOK, &v)
			if v.Status == "complete" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("batch %s not complete after 90 s: %+v", cr.ID, v)
			}
			time.Sleep(300 * time.Millisecond) // the poll interval of a wait on the batch
		}
		if v.Succeeded != 2 || v.Failed != 1 || v.Cancelled != 0 || v.Total != 3 || v.CompletedAt == nil {
			t.Fatalf("complete batch %+v, want 2 succeeded and 1 failed", v)
		}
		if j := c.job(cr.Jobs[1].ID); j.Status != "failed" {
			t.Fatalf("the bad input's job is %s, want failed", j.Status)
		}

		got := recv.next(t, ep.Secret, "batch.completed delivery")
		h := got.header
		var ev struct {
			Event     string `json:"event"`
			BatchID   string `json:"batchId"`
			Total     int    `json:"total"`
			Succeeded int    `json:"succeeded"`
			Failed    int    `json:"failed"`
			Cancelled int    `json:"cancelled"`
			Timing    struct {
				CompletedAt int64 `json:"completedAt"`
			} `json:"timing"`
		}
		if err := json.Unmarshal(got.body, &ev); err != nil {
			t.Fatal(err)
		}
		type brief struct {
			Event, BatchID, Header        string
			Total, Succeeded, Failed, Cnc int
			CompletedAt                   int64
		}
		want := brief{"batch.completed", cr.ID, "batch.completed", 3, 2, 1, 0, *v.CompletedAt}
		gotBrief := brief{ev.Event, ev.BatchID, h.Get("X-Service-Event"), ev.Total, ev.Succeeded, ev.Failed, ev.Cancelled, ev.Timing.CompletedAt}
		if d := cmp.Diff(want, gotBrief); d != "" {
			t.Fatalf("batch.completed delivery (-want +got):\n%s", d)
		}
		// Exactly one: nothing else arrives.
		select {
		case extra := <-recv.got:
			t.Fatalf("a second delivery: %s", extra.body)
		case <-time.After(2 * time.Second):
		}
	})
}
