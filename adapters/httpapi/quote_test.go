package httpapi_test

import (
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/core/problem"
)

// TestRefusalsQuoteLittle holds every refusal that quotes what the client sent to a short quote:
// a value of 64 KiB never comes back whole. Each still names the field.
func TestRefusalsQuoteLittle(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 64<<10)
	digits := strings.Repeat("9", 64<<10)
	job := func(params string) string {
		return `{"type":"ffmpeg","inputs":{"in.mp4":"https://example.com/a.mp4"},"params":` + params + `}`
	}
	for _, tt := range []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int
		want                     string
	}{
		{"unknown field", "POST", "/jobs", `{"type":"ffmpeg","` + long + `":1}`, nil, 400, `field "xxx`},
		{"unknown params field", "POST", "/jobs", job(`{"command":"ffmpeg -i in.mp4 out.mp4","` + long + `":1}`), nil, 400, `field "params.xxx`},
		{"duplicate key", "POST", "/jobs", `{"type":"ffmpeg","` + long + `":1,"` + long + `":2}`, nil, 400, `duplicate key "xxx`},
		{"type", "POST", "/jobs", `{"type":"` + long + `"}`, nil, 400, `type "xxx`},
		{"long number", "POST", "/jobs", job(`{"command":"ffmpeg -i in.mp4 out.mp4","timeout":` + digits + `}`), nil, 400, "params.timeout must be an integer, not number 999"},
		{"variable value", "POST", "/jobs", job(`{"preset":"web-mp4","variables":{"height":"` + long + `"}}`), nil, 400, `params.variables.height must be a integer, not "xxx`},
		{"variable name", "POST", "/jobs", job(`{"preset":"web-mp4","variables":{"` + long + `":1}}`), nil, 400, "params.variables.xxx"},
		{"If-Match", "PUT", "/presets/web-mp4", `{"command":"ffmpeg -i in.mp4 out.mp4"}`, map[string]string{"If-Match": long}, 400, `If-Match "xxx`},
		{"Content-Type", "POST", "/jobs", `{}`, map[string]string{"Content-Type": "text/" + long}, 415, `Content-Type "text/xxx`},
		{"preset", "POST", "/jobs", job(`{"preset":"` + long + `"}`), nil, 400, `params.preset "xxx`},
		{"renamed preset", "PUT", "/presets/mine", `{"name":"` + long + `","command":"ffmpeg -i in.mp4 out.mp4","version":1}`, nil, 400, `name "xxx`},
		{"Idempotency-Key", "POST", "/jobs", `{}`, map[string]string{"Idempotency-Key": long}, 400, "Idempotency-Key"},
		{"query", "GET", "/presets/thumbnail-sprite/index.vtt?" + long + "=1&" + long + "=2", "", nil, 400, "query parameter xxx"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{maxJSONBody: 1 << 20})
			r := b.do(t, request{method: tt.method, path: tt.path, key: b.key, body: []byte(tt.body), header: tt.header})
			code, msg := r.errorBody(t)
			if r.status != tt.status || code != problem.CodeValidation || !strings.Contains(msg, tt.want) || len(msg) > 600 {
				t.Errorf("got %d %s, a message of %d bytes %.300q; want %d naming %q in at most 600 bytes", r.status, code, len(msg), msg, tt.status, tt.want)
			}
		})
	}
}
