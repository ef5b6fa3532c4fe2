package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
)

func TestWebhookEndpoints(t *testing.T) {
	t.Parallel()
	b := setup(t)
	create := func(body string) response {
		return b.do(t, request{method: http.MethodPost, path: "/webhook-endpoints", key: b.key, body: []byte(body)})
	}

	for _, tt := range []struct{ name, body, want string }{
		{"NoName", `{"url":"https://example.com/h","subscribedEvents":["job.failed"]}`, "name is required"},
		{"LongName", `{"name":"` + strings.Repeat("n", 51) + `","url":"https://example.com/h","subscribedEvents":["job.failed"]}`, "1 to 50"},
		{"HTTP", `{"name":"n","url":"http://example.com/h","subscribedEvents":["job.failed"]}`, "must be https"},
		// A NUL reached the database as a 500.
		{"NUL in the name", `{"name":"a\u0000b","url":"https://example.com/h","subscribedEvents":["job.failed"]}`, "control character"},
		{"NoEvents", `{"name":"n","url":"https://example.com/h","subscribedEvents":[]}`, "at least one"},
		{"BadEvent", `{"name":"n","url":"https://example.com/h","subscribedEvents":["job.done"]}`, "not an event"},
		{"Unknown", `{"name":"n","url":"https://example.com/h","subscribedEvents":["job.failed"],"x":1}`, "x"},
	} {
		r := create(tt.body)
		if code, msg := r.errorBody(t); r.status != http.StatusBadRequest || code != problem.CodeValidation || !strings.Contains(msg, tt.want) {
			t.Errorf("%s: %d %s %q, want 400 VALIDATION_ERROR containing %q", tt.name, r.status, code, msg, tt.want)
		}
	}

	r := create(`{"name":"prod","url":"https://example.com/hooks","subscribedEvents":["job.completed","job.failed"]}`)
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var e service.WebhookEndpointView
	r.data(t, &e)
	if !strings.HasPrefix(e.ID, "we_") || !strings.HasPrefix(e.Secret, "whsec_") || !e.Enabled {
		t.Fatalf("created %+v: want an enabled we_ endpoint with its whsec_ secret", e)
	}
	path := "/webhook-endpoints/" + e.ID

	var got service.WebhookEndpointView
	b.do(t, request{method: http.MethodGet, path: path, key: b.key}).data(t, &got)
	if got.Secret != "" || got.Name != "prod" {
		t.Errorf("GET shows %+v; want the endpoint without its secret", got)
	}
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		if r := b.do(t, request{method: m, path: path, key: b.otherKey}); r.status != http.StatusNotFound {
			t.Errorf("%s of another account's endpoint: %d, want 404", m, r.status)
		}
	}
	var list []service.WebhookEndpointView
	b.do(t, request{method: http.MethodGet, path: "/webhook-endpoints", key: b.key}).data(t, &list)
	if len(list) != 1 || list[0].ID != e.ID {
		t.Errorf("list: %+v", list)
	}
	b.do(t, request{method: http.MethodPatch, path: path, key: b.key, body: []byte(`{"name":"renamed","enabled":true,"subscribedEvents":["job.running"]}`)}).data(t, &got)
	if got.Name != "renamed" || len(got.SubscribedEvents) != 1 || got.SubscribedEvents[0] != "job.running" {
		t.Errorf("after PATCH: %+v", got)
	}
	// A field given as null is refused, naming it, and nothing changes.
	for _, field := range []string{"name", "url", "subscribedEvents", "enabled"} {
		r := b.do(t, request{method: http.MethodPatch, path: path, key: b.key, body: []byte(`{"` + field + `":null}`)})
		if code, msg := r.errorBody(t); r.status != http.StatusBadRequest || code != problem.CodeValidation || !strings.Contains(msg, field+" is null") {
			t.Errorf("PATCH %s null: %d %s %s; want 400 naming it", field, r.status, code, msg)
		}
	}
	var after service.WebhookEndpointView
	b.do(t, request{method: http.MethodGet, path: path, key: b.key}).data(t, &after)
	if after.UpdatedAt != got.UpdatedAt {
		t.Errorf("refused PATCHes changed the endpoint: %v then %v", got.UpdatedAt, after.UpdatedAt)
	}
	var rotated service.WebhookEndpointView
	b.do(t, request{method: http.MethodPost, path: path + "/rotate-secret", key: b.key}).data(t, &rotated)
	if rotated.Secret == e.Secret || !strings.HasPrefix(rotated.Secret, "whsec_") || rotated.PreviousSecretExpiresAt == nil {
		t.Errorf("rotate: %+v; want a new secret and the end of the window", rotated)
	}
	// A second rotation inside the window is refused and says until when; the secrets stay.
	r2 := b.do(t, request{method: http.MethodPost, path: path + "/rotate-secret", key: b.key})
	if code, msg := r2.errorBody(t); r2.status != http.StatusConflict || code != problem.CodeConflict || !strings.Contains(msg, "until") {
		t.Errorf("second rotate: %d %s %s, want 409 CONFLICT saying until when", r2.status, code, msg)
	}
	b.clock.Advance(24 * time.Hour)
	var again2 service.WebhookEndpointView
	b.do(t, request{method: http.MethodPost, path: path + "/rotate-secret", key: b.key}).data(t, &again2)
	if again2.Secret == rotated.Secret {
		t.Errorf("rotate after the window kept the secret")
	}

	var test service.DeliveryView
	r = b.do(t, request{method: http.MethodPost, path: path + "/test", key: b.key})
	if r.status != http.StatusAccepted {
		t.Fatalf("test: %d %s", r.status, r.body)
	}
	r.data(t, &test)
	if test.Event != "webhook.test" || test.State != "pending" || !strings.HasPrefix(test.ID, "del_") {
		t.Errorf("test delivery %+v", test)
	}
	var again service.DeliveryView
	b.do(t, request{method: http.MethodPost, path: "/deliveries/" + test.ID + "/redeliver", key: b.key}).data(t, &again)
	if again.RedeliveryOf == nil || *again.RedeliveryOf != test.ID || again.ID == test.ID {
		t.Errorf("redeliver: %+v", again)
	}
	if r := b.do(t, request{method: http.MethodPost, path: "/deliveries/" + test.ID + "/redeliver", key: b.otherKey}); r.status != http.StatusNotFound {
		t.Errorf("redeliver of another account's delivery: %d, want 404", r.status)
	}
	r = b.do(t, request{method: http.MethodGet, path: path + "/deliveries?limit=1", key: b.key})
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"id":"del_`) || !strings.Contains(string(r.body), `"nextCursor":"`) {
		t.Errorf("deliveries page: %d %s", r.status, r.body)
	}
	if r := b.do(t, request{method: http.MethodGet, path: path + "/deliveries?cursor=bad", key: b.key}); r.status != http.StatusBadRequest {
		t.Errorf("bad cursor: %d", r.status)
	}
	if r := b.do(t, request{method: http.MethodDelete, path: path, key: b.key}); r.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if r := b.do(t, request{method: http.MethodGet, path: path, key: b.key}); r.status != http.StatusNotFound {
		t.Errorf("GET after delete: %d, want 404", r.status)
	}
}
