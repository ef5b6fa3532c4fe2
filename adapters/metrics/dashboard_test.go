package metrics_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/adapters/metrics"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/validator"
)

// TestGrafanaDashboard keeps deploy/grafana/mediajobs.json true: it is valid JSON and every
// mediajobs_* metric its queries read is one this package registers.
func TestGrafanaDashboard(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "grafana", "mediajobs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	m := metrics.New(func(context.Context) (map[job.Class]int, error) { return nil, nil })
	// A vector is gathered once it has a child: touch every one.
	j := &job.Job{Type: "ffmpeg", Class: job.ClassCPU, Status: job.StatusComplete, ComputeMs: 1000, Cost: &job.Cost{Amount: 1}}
	m.JobSubmitted(j)
	m.JobDispatched(j, 0)
	m.JobFinished(j)
	m.SubmitRejected(&problem.Problem{Code: problem.CodeValidation, Cause: &validator.Error{Layer: "flags"}})
	m.Request("GET", "/x", 200, 0)
	m.Delivery("delivered", 0)
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, f := range families {
		known[f.GetName()] = true
	}
	name := regexp.MustCompile(`mediajobs_[a-z_]+`)
	used := 0
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, n := range name.FindAllString(tg.Expr, -1) {
				used++
				base := n
				for _, suf := range []string{"_bucket", "_count", "_sum"} {
					base = strings.TrimSuffix(base, suf)
				}
				if !known[base] {
					t.Errorf("panel %q reads %s, which the service does not export", p.Title, n)
				}
			}
		}
	}
	if used == 0 {
		t.Error("the dashboard reads no mediajobs metric")
	}
}
