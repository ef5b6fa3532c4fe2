package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/mediajobs/mediajobs/core/preset"
	"github.com/mediajobs/mediajobs/core/problem"
)

// TestPresets drives /presets through the handlers: create, list, get, update at a version
// (If-Match or the body's), delete, the refusals of each with their status and field, and a
// job that names the preset.
func TestPresets(t *testing.T) {
	t.Parallel()
	b := setup(t)
	call := func(method, path, body string, header map[string]string) response {
		var raw []byte
		if body != "" {
			raw = []byte(body)
		}
		return b.do(t, request{method: method, path: path, key: b.key, body: raw, header: header})
	}
	refused := func(name string, r response, status int, code problem.Code, want string) {
		t.Helper()
		if got, msg := r.errorBody(t); r.status != status || got != code || !strings.Contains(msg, want) {
			t.Errorf("%s: %d %s %q; want %d %s containing %q", name, r.status, got, msg, status, code, want)
		}
	}
	small := `{"name":"small","command":"ffmpeg -i in.mp4 -vf scale=-2:{{height}} -crf {{crf}} out.mp4",` +
		`"variables":{"height":{"type":"integer","default":144,"min":72,"max":720},"crf":{"type":"integer","min":18,"max":40}}}`

	for _, tt := range []struct {
		name, body string
		status     int
		code       problem.Code
		want       string
	}{
		{"NoCommand", `{"name":"x"}`, 400, problem.CodeValidation, "command is required"},
		{"BadName", `{"name":"-x","command":"ffmpeg -i in.mp4 out.mp4"}`, 400, problem.CodeValidation, "name"},
		{"Unknown", `{"name":"x","command":"ffmpeg -i in.mp4 out.mp4","inputs":["in.mp4"]}`, 400, problem.CodeValidation, "inputs"},
		{"Version", `{"name":"x","command":"ffmpeg -i in.mp4 out.mp4","version":1}`, 400, problem.CodeValidation, "version"},
		{"AsFlag", `{"name":"x","command":"ffmpeg -i in.mp4 -{{c}} 1 out.mp4","variables":{"c":{"type":"integer","min":1,"max":2}}}`, 400, problem.CodeValidation, "{{c}}"},
		{"AsPath", `{"name":"x","command":"ffmpeg -i in.mp4 {{c}}.mp4","variables":{"c":{"type":"integer","min":1,"max":2}}}`, 400, problem.CodeValidation, "{{c}}"},
		{"Undeclared", `{"name":"x","command":"ffmpeg -i in.mp4 -crf {{c}} out.mp4"}`, 400, problem.CodeValidation, "not a declared variable"},
		{"Builtin", `{"name":"web-mp4","command":"ffmpeg -i in.mp4 out.mp4"}`, 409, problem.CodeConflict, "built-in"},
	} {
		refused(tt.name, call(http.MethodPost, "/presets", tt.body, nil), tt.status, tt.code, tt.want)
	}

	r := call(http.MethodPost, "/presets", small, nil)
	var p preset.Preset
	r.data(t, &p)
	if r.status != http.StatusCreated || p.Version != 1 || p.Builtin || r.header.Get("ETag") != `"1"` ||
		r.header.Get("Location") != "/presets/small" || strings.Join(p.Inputs, ",") != "in.mp4" {
		t.Fatalf("created %d %v %+v", r.status, r.header, p)
	}
	refused("Twice", call(http.MethodPost, "/presets", small, nil), 409, problem.CodeConflict, "exists")

	var list []preset.Preset
	call(http.MethodGet, "/presets", "", nil).data(t, &list)
	var names []string
	for _, p := range list {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, " "); got != "gif-preview hls-ladder loudness-r128 thumbnail-sprite web-mp4 small" {
		t.Errorf("listed %s", got)
	}
	var other []preset.Preset
	b.do(t, request{method: http.MethodGet, path: "/presets", key: b.otherKey}).data(t, &other)
	if len(other) != 5 {
		t.Errorf("another account lists %d presets, want the 5 built-ins", len(other))
	}
	refused("OtherAccount", b.do(t, request{method: http.MethodGet, path: "/presets/small", key: b.otherKey}), 404, problem.CodeNotFound, "small")
	call(http.MethodGet, "/presets/web-mp4", "", nil).data(t, &p)
	if !p.Builtin || p.Version != 1 || p.Variables["height"].Type != preset.Integer {
		t.Errorf("web-mp4: %+v", p)
	}

	changed := strings.Replace(small, "-crf", "-tune fastdecode -crf", 1)
	refused("NoVersion", call(http.MethodPut, "/presets/small", changed, nil), 400, problem.CodeValidation, "version is required")
	refused("BadIfMatch", call(http.MethodPut, "/presets/small", changed, map[string]string{"If-Match": "abc"}), 400, problem.CodeValidation, "If-Match")
	refused("Rename", call(http.MethodPut, "/presets/small", strings.Replace(changed, `"small"`, `"big"`, 1), map[string]string{"If-Match": `"1"`}), 400, problem.CodeValidation, "renamed")
	refused("Missing", call(http.MethodPut, "/presets/nope", strings.Replace(changed, `"small"`, `"nope"`, 1), map[string]string{"If-Match": `"1"`}), 404, problem.CodeNotFound, "nope")
	r = call(http.MethodPut, "/presets/small", changed, map[string]string{"If-Match": `"1"`})
	r.data(t, &p)
	if r.status != http.StatusOK || p.Version != 2 || r.header.Get("ETag") != `"2"` || !strings.Contains(p.Command, "fastdecode") {
		t.Errorf("updated %d %+v", r.status, p)
	}
	refused("Stale", call(http.MethodPut, "/presets/small", strings.Replace(changed, "{", `{"version":1,`, 1), nil), 409, problem.CodeConflict, "version 2, not 1")
	refused("BuiltinPut", call(http.MethodPut, "/presets/web-mp4", changed, map[string]string{"If-Match": `"1"`}), 403, problem.CodeForbidden, "read-only")
	refused("BuiltinDelete", call(http.MethodDelete, "/presets/web-mp4", "", nil), 403, problem.CodeForbidden, "read-only")

	submit := func(params string) response {
		return call(http.MethodPost, "/jobs", `{"type":"ffmpeg","inputs":{"in.mp4":"https://example.com/a.mp4"},"params":`+params+`}`, nil)
	}
	refused("ValueOutOfRange", submit(`{"preset":"small","variables":{"crf":99}}`), 400, problem.CodeValidation, "params.variables.crf")
	refused("ValueRequired", submit(`{"preset":"small"}`), 400, problem.CodeValidation, "params.variables.crf")
	refused("ValueAsFlag", submit(`{"preset":"web-mp4","variables":{"speed":"-i /etc/passwd"}}`), 400, problem.CodeValidation, "params.variables.speed")
	refused("NoSuchPreset", submit(`{"preset":"nope"}`), 400, problem.CodeValidation, "params.preset")
	refused("PresetAndCommand", submit(`{"preset":"small","command":"ffmpeg -i in.mp4 out.mp4"}`), 400, problem.CodeValidation, "params.command")
	r = submit(`{"preset":"small","variables":{"crf":30}}`)
	var created struct{ ID string }
	r.data(t, &created)
	r = call(http.MethodGet, "/jobs/"+created.ID, "", nil)
	var j struct {
		Params struct {
			Command string     `json:"command"`
			Preset  preset.Ref `json:"preset"`
		} `json:"params"`
	}
	r.data(t, &j)
	if j.Params.Preset.Name != "small" || j.Params.Preset.Version != 2 ||
		string(j.Params.Preset.Variables["height"]) != "144" || !strings.Contains(j.Params.Command, "scale=-2:144") {
		t.Errorf("job from a preset: %d %s", r.status, r.body)
	}

	r = call(http.MethodDelete, "/presets/small", "", nil)
	if r.status != http.StatusNoContent {
		t.Errorf("delete: %d %s", r.status, r.body)
	}
	refused("Deleted", call(http.MethodGet, "/presets/small", "", nil), 404, problem.CodeNotFound, "small")
	refused("DeleteAgain", call(http.MethodDelete, "/presets/small", "", nil), 404, problem.CodeNotFound, "small")
}

// TestSpriteIndex answers the thumbnail-sprite index from query values, and names a bad one.
func TestSpriteIndex(t *testing.T) {
	t.Parallel()
	b := setup(t)
	get := func(query string) response {
		return b.do(t, request{method: http.MethodGet, path: "/presets/thumbnail-sprite/index.vtt" + query, key: b.key})
	}
	r := get("?interval=2&columns=2&rows=1")
	want := "WEBVTT\n\n00:00:00.000 --> 00:00:02.000\nsprite.jpg#xywh=0,0,160,90\n\n00:00:02.000 --> 00:00:04.000\nsprite.jpg#xywh=160,0,160,90\n"
	if r.status != http.StatusOK || string(r.body) != want || !strings.HasPrefix(r.header.Get("Content-Type"), "text/vtt") {
		t.Errorf("index: %d %q", r.status, r.body)
	}
	for _, tt := range []struct{ query, want string }{
		{"?interval=0", "query parameter interval"},
		{"?rows=x", "query parameter rows"},
		{"?depth=1", "query parameter depth"},
		{"?rows=1&rows=2", "rows"},
	} {
		r := get(tt.query)
		if code, msg := r.errorBody(t); r.status != 400 || code != problem.CodeValidation || !strings.Contains(msg, tt.want) {
			t.Errorf("%s: %d %s %q; want 400 naming %q", tt.query, r.status, code, msg, tt.want)
		}
	}
}

// TestPresetIfMatch holds PUT /presets/{name} to If-Match's strong comparison (RFC 9110
// §13.1.1): a weak ETag never matches, even the current version's, and changes nothing; * matches
// the preset that exists.
func TestPresetIfMatch(t *testing.T) {
	t.Parallel()
	const body = `{"name":"small","command":"ffmpeg -i in.mp4 -crf 20 out.mp4"}`
	for _, tt := range []struct {
		name, ifMatch, path string
		status              int
		version             int // of the preset after the request
		want                string
	}{
		{"Strong", `"1"`, "/presets/small", 200, 2, ""},
		{"Bare", `1`, "/presets/small", 200, 2, ""},
		{"Any", `*`, "/presets/small", 200, 2, ""},
		{"AnyMissing", `*`, "/presets/nope", 404, 1, "nope"},
		{"Weak", `W/"1"`, "/presets/small", 412, 1, `If-Match "W/\"1\"" holds only weak ETags`},
		{"WeakBare", `W/1`, "/presets/small", 412, 1, "weak ETags"},
		{"WeakStale", `W/"7"`, "/presets/small", 412, 1, "weak ETags"},
		// A list matches when one of its strong ETags does; its weak ones never do.
		{"WeakThenStrong", `W/"1", "1"`, "/presets/small", 200, 2, ""},
		{"StrongThenWeak", `"1", W/"1"`, "/presets/small", 200, 2, ""},
		{"ListWithCurrent", `"7", "1"`, "/presets/small", 200, 2, ""},
		{"ListStale", `"7", "8"`, "/presets/small", 409, 1, "at version 1, not 7"},
		{"WeakList", `W/"1", W/"2"`, "/presets/small", 412, 1, "only weak ETags"},
		{"ListBad", `"1", x`, "/presets/small", 400, 1, `If-Match "x" is not`},
		{"ListTrailingComma", `"1",`, "/presets/small", 200, 2, ""},
		{"ListEmptyElements", `, "7",, "1" ,`, "/presets/small", 200, 2, ""},
		{"ListOfNothing", `, ,`, "/presets/small", 400, 1, "names no version"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			if r := b.do(t, request{method: http.MethodPost, path: "/presets", key: b.key, body: []byte(body)}); r.status != http.StatusCreated {
				t.Fatalf("create: %d %s", r.status, r.body)
			}
			r := b.do(t, request{method: http.MethodPut, path: tt.path, key: b.key, body: []byte(strings.Replace(body, "small", strings.TrimPrefix(tt.path, "/presets/"), 1)),
				header: map[string]string{"If-Match": tt.ifMatch}})
			if r.status != tt.status {
				t.Fatalf("PUT If-Match %s: %d %s; want %d", tt.ifMatch, r.status, r.body, tt.status)
			}
			if tt.status != http.StatusOK {
				if code, msg := r.errorBody(t); code != problem.CodeValidation && code != problem.CodeNotFound && code != problem.CodeConflict || !strings.Contains(msg, tt.want) {
					t.Errorf("PUT If-Match %s: %s %q; want a message containing %q", tt.ifMatch, code, msg, tt.want)
				}
			}
			var p preset.Preset
			b.do(t, request{method: http.MethodGet, path: "/presets/small", key: b.key}).data(t, &p)
			if p.Version != tt.version {
				t.Errorf("PUT If-Match %s left version %d, want %d", tt.ifMatch, p.Version, tt.version)
			}
		})
	}
}

// A body's version is a preset's, from 1: -1 or 0 is refused, naming version, and changes
// nothing (-1 once stood for If-Match: * inside the handler).
func TestPresetBodyVersion(t *testing.T) {
	t.Parallel()
	for _, v := range []int{-1, 0, -2} {
		t.Run(fmt.Sprint(v), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			const body = `{"name":"small","command":"ffmpeg -i in.mp4 -crf 20 out.mp4"}`
			if r := b.do(t, request{method: http.MethodPost, path: "/presets", key: b.key, body: []byte(body)}); r.status != http.StatusCreated {
				t.Fatalf("create: %d %s", r.status, r.body)
			}
			r := b.do(t, request{method: http.MethodPut, path: "/presets/small", key: b.key,
				body: []byte(fmt.Sprintf(`{"name":"small","command":"ffmpeg -i in.mp4 -crf 40 out.mp4","version":%d}`, v))})
			if code, msg := r.errorBody(t); r.status != http.StatusBadRequest || code != problem.CodeValidation || !strings.Contains(msg, "version") {
				t.Fatalf("PUT version %d: %d %s %q; want 400 naming version", v, r.status, code, msg)
			}
			var p preset.Preset
			b.do(t, request{method: http.MethodGet, path: "/presets/small", key: b.key}).data(t, &p)
			if p.Version != 1 || !strings.Contains(p.Command, "-crf 20") {
				t.Errorf("PUT version %d changed the preset: version %d, %q", v, p.Version, p.Command)
			}
		})
	}
}

// Concurrent updates with If-Match: * all land: one that finds the version changed since its
// read reads it again rather than answering 409.
func TestPresetIfMatchAnyConcurrent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const body = `{"name":"race","command":"ffmpeg -i in.mp4 -crf 20 out.mp4"}`
	if r := b.do(t, request{method: http.MethodPost, path: "/presets", key: b.key, body: []byte(body)}); r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	const n = 8
	statuses := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			statuses <- b.do(t, request{method: http.MethodPut, path: "/presets/race", key: b.key, body: []byte(body),
				header: map[string]string{"If-Match": "*"}}).status
		})
	}
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != http.StatusOK {
			t.Errorf("PUT If-Match: * beside %d others: %d, want 200", n-1, s)
		}
	}
	var p preset.Preset
	b.do(t, request{method: http.MethodGet, path: "/presets/race", key: b.key}).data(t, &p)
	if p.Version != 1+n {
		t.Errorf("version %d after %d updates, want %d", p.Version, n, 1+n)
	}
}
