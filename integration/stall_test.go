package integration

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestStallWatchdog: through the binary, on both stores, an FFmpeg that really hangs (select=0
// lets no frame through, so the -t it waits for never comes) is stopped within the plan's stall
// time (lowered to 2 seconds) plus 5 seconds, long before its timeout, and the job fails
// RUNNER_STALLED, retryable and free; its FFmpeg is gone. GET /account shows the stall time.
func TestStallWatchdog(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		srv := startServer(t, serverOpts{Backend: b, Env: map[string]string{
			"MEDIAJOBS_PRICING": editedPricing(t, dir, "stall.json", func(_ string, plan map[string]any) { plan["stallSeconds"] = 2 })}})
		c := newClient(t, srv, createAccount(t, srv, "pro").APIKey)

		var acct struct {
			Limits struct {
				StallSeconds int `json:"stallSeconds"`
			} `json:"limits"`
		}
		c.do(http.MethodGet, "/account", nil, nil).decode(t, http.StatusOK, &acct)
		if acct.Limits.StallSeconds != 2 {
			t.Errorf("GET /account limits.stallSeconds = %d, want the pricing's 2", acct.Limits.StallSeconds)
		}

		marker := "stalled_" + randomHex(4) + ".mp4"
		id := c.submit(ffmpegJob("ffmpeg -f lavfi -i testsrc=s=64x64:r=25 -vf select=0 -t 5 "+marker, nil, map[string]any{"timeout": 600}))
		j := c.waitWithin(id, "terminal", 2*time.Minute, func(j jobView) bool { return terminal[j.Status] })
		if j.Status != "failed" || j.Error == nil || j.Error.Code != "RUNNER_STALLED" || !j.Error.Retryable || !strings.Contains(j.Error.Message, "2 seconds") {
			t.Fatalf("job %s: %s %s; want failed RUNNER_STALLED, retryable, naming the 2 seconds", id, j.Status, errorText(j))
		}
		if j.StartedAt == nil || j.CompletedAt == nil || time.Duration(*j.CompletedAt-*j.StartedAt)*time.Millisecond > 7*time.Second {
			t.Errorf("job %s ran from %v to %v; want it stopped within the stall time plus 5 s", id, j.StartedAt, j.CompletedAt)
		}
		if j.Cost == nil || j.Cost.Amount != 0 {
			t.Errorf("job %s cost %+v; a stalled job is free", id, j.Cost)
		}
		if charge := c.chargeOf(t, id, 0); charge != nil {
			t.Errorf("a stalled job was charged: %+v", charge)
		}
		waitProcesses(t, marker, false)
	})
}
