package integration

import (
	"net/http"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/adapters/sqlstore/pgtest"
)

// TestCancelAcrossReplicas: two replicas share one PostgreSQL; A only serves the API, B runs
// jobs. A cancel accepted by A stops FFmpeg on B: at once over a bus both share (NATS
// JetStream carries the cancel), and at B's runner's next heartbeat without one (the heartbeat
// answers that the job is cancelled).
func TestCancelAcrossReplicas(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	tests := []struct {
		name   string
		busURL string
	}{
		{name: "NATS", busURL: "nats://127.0.0.1:4222"},
		{name: "InProcess", busURL: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.busURL != "" {
				requireNATS(t)
			}
			marker := "replica_" + randomHex(6) + ".mp4"
			// Registered first, so it runs after both servers have stopped: nothing outlives the test.
			t.Cleanup(func() { waitProcesses(t, marker, false) })

			a := startServer(t, serverOpts{Backend: postgresBackend, Unthrottled: true,
				Env: map[string]string{"MEDIAJOBS_RUNNER": "false", "MEDIAJOBS_BUS_URL": tt.busURL}})
			var dsn, pricing string
			for _, kv := range a.env {
				if v, ok := strings.CutPrefix(kv, "MEDIAJOBS_DATABASE_URL="); ok {
					dsn = v
				}
				if v, ok := strings.CutPrefix(kv, "MEDIAJOBS_PRICING="); ok {
					pricing = v
				}
			}
			startServer(t, serverOpts{Backend: sqliteBackend, Env: map[string]string{"MEDIAJOBS_DATABASE_URL": dsn,
				"MEDIAJOBS_PRICING": pricing, "MEDIAJOBS_SLOTS": "1", "MEDIAJOBS_BUS_URL": tt.busURL}})
			ca := newClient(t, a, createAccount(t, a, "pro").APIKey)

			id := ca.submit(ffmpegJob(longCommand(marker), nil, map[string]any{"timeout": 300}))
			ca.waitFor(id, "running", func(j jobView) bool { return j.Status == "running" })
			// A runs no runner: the FFmpeg process is B's.
			waitProcesses(t, marker, true)

			var v jobView
			ca.do(http.MethodPost, "/jobs/"+id+"/cancel", nil, nil).decode(t, http.StatusOK, &v)
			if v.Status != "cancelled" {
				t.Fatalf("cancel on A answered %s, want cancelled", v.Status)
			}
			waitProcesses(t, marker, false)
			if j := ca.job(id); j.Status != "cancelled" {
				t.Errorf("job is %s after the cancel, want cancelled", j.Status)
			}
		})
	}
}
