package integration

import (
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestIdempotencyKey: 50 submits at once with one Idempotency-Key, through the real binary on
// each store, make one job and one charge and all answer that job; the same key with another
// body is refused.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		srv := startServer(t, serverOpts{Backend: b, Unthrottled: true})
		c := newClient(t, srv, createAccount(t, srv, "pro").APIKey)
		body := ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=5 -frames:v 1 once.png", nil, nil)
		key := http.Header{"Idempotency-Key": {"retry-" + randomHex(8)}}

		const n = 50
		answers := make([]response, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[i] = c.do(http.MethodPost, "/jobs", body, key.Clone())
			}()
		}
		wg.Wait()
		var first created
		answers[0].decode(t, http.StatusCreated, &first)
		replayed := 0
		for i, a := range answers {
			var cr created
			a.decode(t, http.StatusCreated, &cr)
			if cr.ID != first.ID {
				t.Errorf("answer %d names job %s, answer 0 names %s", i, cr.ID, first.ID)
			}
			if a.Header.Get("Idempotent-Replayed") == "true" {
				replayed++
			}
		}
		if replayed != n-1 {
			t.Errorf("%d answers were replays, want %d", replayed, n-1)
		}

		var jobs []jobView
		c.do(http.MethodGet, "/jobs?limit=100", nil, nil).decode(t, http.StatusOK, &jobs)
		if len(jobs) != 1 {
			t.Fatalf("%d submits with one key made %d jobs, want 1", n, len(jobs))
		}
		if j := c.waitTerminal(first.ID); j.Status != "complete" {
			t.Fatalf("job %s ended %s: %s", j.ID, j.Status, errorText(j))
		}
		if e := c.chargeOf(t, first.ID, 5*time.Second); e == nil {
			t.Fatalf("no charge for %s", first.ID)
		}
		charges := 0
		for _, e := range c.ledger(t) {
			if e.Kind == "charge" {
				charges++
			}
		}
		if charges != 1 {
			t.Errorf("the ledger holds %d charges, want 1", charges)
		}

		// A repeat after the job finished still answers the first response.
		var again created
		c.do(http.MethodPost, "/jobs", body, key.Clone()).decode(t, http.StatusCreated, &again)
		if again.ID != first.ID || again.Status != "waiting" {
			t.Errorf("a later repeat answered %+v, want the first answer %+v", again, first)
		}
		other := ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=5 -frames:v 1 twice.png", nil, nil)
		if e := c.do(http.MethodPost, "/jobs", other, key.Clone()).errorOf(t, http.StatusConflict); e.Code != "IDEMPOTENCY_KEY_REUSED" {
			t.Errorf("another body under the key: %+v, want IDEMPOTENCY_KEY_REUSED", e)
		}
	})
}
