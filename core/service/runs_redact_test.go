package service_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// A failure a worker reports names the input URL it could not fetch; the secret in its query
// does not reach the job's error (which the job.failed event and its deliveries carry).
func TestReportedFailuresAreRedacted(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc := h.open(t, account.PlanPro, 100)
	j := h.submitJob(t, acc, `{}`)
	const secret = "sig0123456789abcdef"
	url := "https://bucket.s3.example.com/in.mp4?X-Amz-Signature=" + secret + "&X-Amz-Expires=300"
	h.run(t, job.ClassCPU, workqueue.Result{Failure: &workqueue.Failure{Kind: workqueue.KindFetch,
		Message: "input " + url + " could not be fetched: 403 Forbidden", Detail: "GET " + url}}, false)
	got := h.job(t, j.ID)
	if got.Error == nil || !strings.Contains(got.Error.Message, "https://bucket.s3.example.com/in.mp4?") {
		t.Fatalf("job error %+v; want the fetch failure naming the input", got.Error)
	}
	b, _ := json.Marshal(got.Error)
	if strings.Contains(string(b), secret) {
		t.Errorf("job error keeps the URL's secret: %s", b)
	}
}
