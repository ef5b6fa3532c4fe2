package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/core/destination"
	"github.com/mediajobs/mediajobs/core/problem"
)

// TestDestinations drives /destinations and POST /jobs/{id}/deliver through the handlers:
// registration (201 with Location, the secret never shown, the key ID masked), list and get,
// each refusal with its status and the field it names, another account's destination as 404,
// and a destination in use as 409.
func TestDestinations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	call := func(key, method, path, body string) response {
		var raw []byte
		if body != "" {
			raw = []byte(body)
		}
		return b.do(t, request{method: method, path: path, key: key, body: raw})
	}
	refused := func(name string, r response, status int, code problem.Code, want string) {
		t.Helper()
		if got, msg := r.errorBody(t); r.status != status || got != code || !strings.Contains(msg, want) {
			t.Errorf("%s: %d %s %q; want %d %s containing %q", name, r.status, got, msg, status, code, want)
		}
	}
	const secret = "the-secret-access-key"
	good := `{"name":"exports","endpoint":"https://s3.example.com","bucket":"exports","region":"us-east-1",` +
		`"prefix":"media","pathStyle":true,"accessKeyId":"AKIAEXAMPLE1234","secretAccessKey":"` + secret + `"}`

	for _, tt := range []struct {
		name, body string
		want       string
	}{
		{"Unknown", strings.Replace(good, `"name"`, `"secret":"x","name"`, 1), "secret"},
		{"NotJSON", `{"name":`, ""},
		{"Endpoint", strings.Replace(good, "https://s3.example.com", "s3.example.com", 1), "endpoint"},
		{"Bucket", strings.Replace(good, `"bucket":"exports"`, `"bucket":"Ex"`, 1), "bucket"},
		{"Prefix", strings.Replace(good, `"prefix":"media"`, `"prefix":"../media"`, 1), "prefix"},
		{"NoSecret", strings.Replace(good, secret, "", 1), "secretAccessKey"},
	} {
		r := call(b.key, http.MethodPost, "/destinations", tt.body)
		refused(tt.name, r, http.StatusBadRequest, problem.CodeValidation, tt.want)
		if strings.Contains(string(r.body), secret) {
			t.Errorf("%s: the refusal shows the secret: %s", tt.name, r.body)
		}
	}
	b.h.Deliverer.Fail(fmt.Errorf("%w: AccessDenied", destination.ErrCredentials))
	refused("Refused", call(b.key, http.MethodPost, "/destinations", good), http.StatusBadRequest, problem.CodeValidation, "accessKeyId/secretAccessKey")
	b.h.Deliverer.Fail(nil)
	var none []any
	r := call(b.key, http.MethodGet, "/destinations", "")
	if r.data(t, &none); r.status != http.StatusOK || len(none) != 0 {
		t.Fatalf("list after the refusals: %d %s; want none saved", r.status, r.body)
	}

	r = call(b.key, http.MethodPost, "/destinations", good)
	var d struct {
		ID          string `json:"id"`
		AccessKeyID string `json:"accessKeyId"`
	}
	r.data(t, &d)
	if r.status != http.StatusCreated || r.header.Get("Location") != "/destinations/"+d.ID || d.AccessKeyID != "***********1234" ||
		strings.Contains(string(r.body), secret) {
		t.Fatalf("created %d %v %s", r.status, r.header, r.body)
	}
	for _, path := range []string{"/destinations", "/destinations/" + d.ID} {
		if r := call(b.key, http.MethodGet, path, ""); r.status != http.StatusOK || !strings.Contains(string(r.body), d.ID) ||
			strings.Contains(string(r.body), secret) || strings.Contains(string(r.body), "AKIAEXAMPLE1234") {
			t.Errorf("GET %s: %d %s", path, r.status, r.body)
		}
	}
	// Another account sees none of it.
	refused("OtherGet", call(b.otherKey, http.MethodGet, "/destinations/"+d.ID, ""), http.StatusNotFound, problem.CodeNotFound, d.ID)
	refused("OtherDelete", call(b.otherKey, http.MethodDelete, "/destinations/"+d.ID, ""), http.StatusNotFound, problem.CodeNotFound, d.ID)
	refused("Missing", call(b.key, http.MethodGet, "/destinations/dst_missing", ""), http.StatusNotFound, problem.CodeNotFound, "dst_missing")

	// Jobs that name it: a bad template or another's destination is refused naming the field.
	submit := func(key, dest string) response {
		return call(key, http.MethodPost, "/jobs", `{"type":"ffmpeg","params":{"command":"ffmpeg -f lavfi -i testsrc=duration=1 out.mp4"},"destination":`+dest+`}`)
	}
	before := b.jobCount(t)
	for _, tt := range []struct {
		name, key, dest, want string
	}{
		{"Absolute", b.key, `{"id":"` + d.ID + `","path":"/{name}"}`, "destination.path"},
		{"Placeholder", b.key, `{"id":"` + d.ID + `","path":"{user}/{name}"}`, "destination.path"},
		{"NoName", b.key, `{"id":"` + d.ID + `","path":"{job_id}.mp4"}`, "destination.path"},
		{"UnknownField", b.key, `{"id":"` + d.ID + `","bucket":"x"}`, "bucket"},
		{"NotMine", b.otherKey, `{"id":"` + d.ID + `"}`, "destination.id"},
	} {
		refused(tt.name, submit(tt.key, tt.dest), http.StatusBadRequest, problem.CodeValidation, tt.want)
	}
	if n := b.jobCount(t); n != before {
		t.Fatalf("%d jobs after the refusals; want %d", n, before)
	}
	var created struct {
		ID string `json:"id"`
	}
	submit(b.key, `{"id":"`+d.ID+`","path":"{job_id}/{name}"}`).data(t, &created)
	var got struct {
		Delivery struct {
			Status, Destination, Path string
		} `json:"delivery"`
	}
	call(b.key, http.MethodGet, "/jobs/"+created.ID, "").data(t, &got)
	if got.Delivery.Status != "pending" || got.Delivery.Destination != d.ID || got.Delivery.Path != "{job_id}/{name}" {
		t.Fatalf("GET /jobs delivery %+v; want pending to %s", got.Delivery, d.ID)
	}
	refused("DeliverWaiting", call(b.key, http.MethodPost, "/jobs/"+created.ID+"/deliver", ""), http.StatusConflict, problem.CodeConflict, "waiting")
	refused("DeliverOther", call(b.otherKey, http.MethodPost, "/jobs/"+created.ID+"/deliver", ""), http.StatusNotFound, problem.CodeNotFound, created.ID)
	refused("InUse", call(b.key, http.MethodDelete, "/destinations/"+d.ID, ""), http.StatusConflict, problem.CodeConflict, "not yet delivered")
	// Cancelled, the job has nothing to deliver: the destination is free.
	call(b.key, http.MethodPost, "/jobs/"+created.ID+"/cancel", "")
	b.h.Drain(t)
	if r := call(b.key, http.MethodDelete, "/destinations/"+d.ID, ""); r.status != http.StatusNoContent {
		t.Fatalf("DELETE once free: %d %s", r.status, r.body)
	}
}
