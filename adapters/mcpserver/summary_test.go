package mcpserver

import (
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/service"
)

func TestSummarizeRunning(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	ms := func(v int64) *int64 { return &v }
	tests := []struct {
		name     string
		progress *float64
		done     *int64
		want     string
	}{
		{"progress known", f(0.42), ms(4200), "(42%)"},
		{"no length known", f(0), ms(12_340), "(12.3s of media written; its length is not known)"},
		{"nothing yet", f(0), nil, "(0%)"},
		{"not running", nil, nil, "is dispatched;"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status := job.StatusRunning
			if tc.progress == nil {
				status = job.StatusDispatched
			}
			got := summarize(service.View{ID: "job_1", Status: status, Progress: tc.progress, ProcessedMs: tc.done})
			if !strings.Contains(got, tc.want) {
				t.Fatalf("summarize = %q, want it to hold %q", got, tc.want)
			}
		})
	}
}
