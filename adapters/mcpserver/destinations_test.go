package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/adapters/mcpserver"
	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/destination"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
)

// TestDestinationToolsAnswerAsREST: list_destinations answers GET /destinations' data (no
// secret, the key ID masked), and submit_job's destination makes the delivery POST /jobs
// makes, with the same refusals naming destination.id or destination.path; get_job shows the
// delivery as GET /jobs/{id} does.
func TestDestinationToolsAnswerAsREST(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cs := mustConnect(t, b.url, b.key, "")
	ctx := context.Background()

	var empty mcpserver.DestinationList
	if res := mustSucceed(t, cs, "list_destinations", map[string]any{}, &empty); len(empty.Data) != 0 || !strings.Contains(text(res), "No destinations") {
		t.Fatalf("list_destinations with none: %+v %s", empty, text(res))
	}
	const secret = "the-secret-access-key"
	d, err := b.h.Destinations.Create(ctx, b.acct, destination.Params{Name: "exports", Endpoint: "https://s3.example.com",
		Bucket: "exports", Region: "us-east-1", AccessKeyID: "AKIAEXAMPLE1234", SecretAccessKey: secret})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := b.h.Open(t, "acct_other", account.PlanFree, 100)
	theirs, err := b.h.Destinations.Create(ctx, other, destination.Params{Name: "theirs", Endpoint: "https://s3.example.com",
		Bucket: "theirs", Region: "us-east-1", AccessKeyID: "AKIAOTHER", SecretAccessKey: secret})
	if err != nil {
		t.Fatal(err)
	}

	var list mcpserver.DestinationList
	res := mustSucceed(t, cs, "list_destinations", map[string]any{}, &list)
	if diff := cmp.Diff([]service.DestinationView{service.ViewDestination(d)}, list.Data); diff != "" {
		t.Errorf("list_destinations is not GET /destinations' data (-rest +mcp):\n%s", diff)
	}
	if strings.Contains(text(res), secret) || list.Data[0].AccessKeyID != "***********1234" {
		t.Errorf("list_destinations shows the secret or the whole key: %s", text(res))
	}

	job := func(dest map[string]any) map[string]any {
		return map[string]any{"type": "ffmpeg", "params": map[string]any{"command": "ffmpeg -f lavfi -i testsrc=duration=1 out.mp4"},
			"destination": dest}
	}
	for _, tt := range []struct {
		name     string
		dest     map[string]any
		contains string
	}{
		{"another account's", map[string]any{"id": theirs.ID}, "destination.id"},
		{"unknown", map[string]any{"id": "dst_missing"}, "destination.id"},
		{"absolute path", map[string]any{"id": d.ID, "path": "/{name}"}, "destination.path"},
		{"no name", map[string]any{"id": d.ID, "path": "{job_id}.mp4"}, "destination.path"},
	} {
		te := toolError(t, cs, "submit_job", job(tt.dest))
		if te.Code != problem.CodeValidation || !strings.Contains(te.Message, tt.contains) {
			t.Errorf("%s: %s %q, want VALIDATION_ERROR naming %s", tt.name, te.Code, te.Message, tt.contains)
		}
	}
	var sub mcpserver.SubmittedJob
	mustSucceed(t, cs, "submit_job", job(map[string]any{"id": d.ID, "path": "{date}/{job_id}/{name}"}), &sub)
	st, err := b.h.Destinations.Status(ctx, b.acct, sub.ID)
	if err != nil || st == nil || st.Destination != d.ID || st.Path != "{date}/{job_id}/{name}" || st.Status != "pending" {
		t.Fatalf("the submitted job's delivery: %+v, %v", st, err)
	}
	// get_job answers GET /jobs/{id}'s data: the job with its delivery.
	var got map[string]any
	res = mustSucceed(t, cs, "get_job", map[string]any{"id": sub.ID}, &got)
	v, err := b.h.Jobs.Get(ctx, b.acct, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	rest, err := b.h.Destinations.WithDelivery(ctx, b.acct, v)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(asJSON(t, rest), got); diff != "" || !strings.Contains(text(res), "delivery to "+d.ID+" is pending") {
		t.Errorf("get_job is not GET /jobs/{id}'s data (-rest +mcp):\n%s\n%s", diff, text(res))
	}
}
