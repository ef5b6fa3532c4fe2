package integration

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/validator"
)

// TestFlagAllowlistServed: through the binary, GET /ffmpeg/flags lists every flag the validator
// lets through, each with its reason, without a key; the reference at /openapi.json (rendered at
// /docs) holds the same list; a listed flag passes POST /ffmpeg/validate's flags layer and an
// unlisted one is refused by name.
func TestFlagAllowlistServed(t *testing.T) {
	t.Parallel()
	srv := startServer(t, serverOpts{Backend: sqliteBackend, Unthrottled: true})
	c := newClient(t, srv, "")

	r := c.do(http.MethodGet, "/ffmpeg/flags", nil, nil)
	var flags []struct {
		Flag            string `json:"flag"`
		Reason          string `json:"reason"`
		TakesValue      bool   `json:"takesValue"`
		StreamSpecifier bool   `json:"streamSpecifier"`
	}
	r.decode(t, http.StatusOK, &flags)
	if cc := r.Header.Get("Cache-Control"); !strings.Contains(cc, "public") {
		t.Errorf("Cache-Control %q, want a public, cacheable answer", cc)
	}
	// The spec speaks of "about 120 flags"; ours is wider on purpose, and says so.
	if len(flags) < 120 {
		t.Fatalf("%d flags listed", len(flags))
	}
	byName := map[string]string{}
	for _, f := range flags {
		if !strings.HasPrefix(f.Flag, "-") || len(f.Reason) < 20 {
			t.Fatalf("flag %+v: want a dash and a reason", f)
		}
		byName[f.Flag] = f.Reason
	}
	for _, name := range []string{"-i", "-c", "-vf", "-filter_complex", "-map", "-hls_time"} {
		if byName[name] == "" {
			t.Errorf("%s is not listed", name)
		}
	}
	for _, name := range []string{"-filter_script", "-dump_attachment", "-report"} {
		if byName[name] != "" {
			t.Errorf("%s is refused by the validator but listed", name)
		}
	}
	if e := c.do(http.MethodGet, "/ffmpeg/flags?flag=-c", nil, nil).errorOf(t, http.StatusBadRequest); e.Code != "VALIDATION_ERROR" || !strings.Contains(e.Message, `"flag"`) {
		t.Errorf("a query parameter: %+v, want VALIDATION_ERROR naming it", e)
	}

	var doc struct {
		Tags []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"tags"`
	}
	if err := json.Unmarshal(c.mustGet(srv.Base+"/openapi.json"), &doc); err != nil {
		t.Fatal(err)
	}
	var described string
	for _, tag := range doc.Tags {
		if tag.Name == "ffmpeg" {
			described = tag.Description
		}
	}
	for name, reason := range byName {
		if !strings.Contains(described, "`"+name+"`") || !strings.Contains(described, "| "+reason+" |") {
			t.Fatalf("the reference's ffmpeg section lacks %s with its reason %q", name, reason)
		}
	}

	for _, tc := range []struct {
		command string
		valid   bool
	}{
		{"ffmpeg -f lavfi -i testsrc=d=1 -c:v libx264 -pix_fmt yuv420p out.mp4", true},
		{"ffmpeg -f lavfi -i testsrc=d=1 -dump_attachment:t a.ttf out.mp4", false},
	} {
		var v struct {
			Valid bool   `json:"valid"`
			Error string `json:"error"`
		}
		c.do(http.MethodPost, "/ffmpeg/validate", map[string]any{"command": tc.command}, nil).decode(t, http.StatusOK, &v)
		if v.Valid != tc.valid || (!tc.valid && !strings.Contains(v.Error, "flag -dump_attachment:t is not allowed")) {
			t.Errorf("validate %q: %+v, want valid %v", tc.command, v, tc.valid)
		}
	}
}

// TestDocsCountTheFlags: the README and the API guide say how many flags the allowlist holds;
// the count is the validator's.
func TestDocsCountTheFlags(t *testing.T) {
	t.Parallel()
	n := strconv.Itoa(len(validator.Flags()))
	for file, phrase := range map[string]string{
		"README.md":   "lets " + n + " FFmpeg flags through",
		"docs/api.md": "each with the reason it is safe: " + n + " today",
	} {
		b, err := os.ReadFile(filepath.Join("..", file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(strings.Fields(string(b)), " "), phrase) {
			t.Errorf("%s does not say %q: the allowlist holds %s flags", file, phrase, n)
		}
	}
}
