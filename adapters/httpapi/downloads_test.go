package httpapi_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
)

// view reads the job through the API, as a client would, to get its signed URLs.
func (b *testBundle) view(t *testing.T, id string) service.View {
	t.Helper()
	res := b.do(t, request{method: "GET", path: "/jobs/" + id, key: b.key})
	var v service.View
	res.data(t, &v)
	if v.Output == nil {
		t.Fatalf("job %s has no output: %s", id, res.body)
	}
	return v
}

func TestDownloadSingleFile(t *testing.T) {
	t.Parallel()
	b := setup(t)
	j := b.seedJob(t, job.StatusComplete, map[string]string{"out.mp4": "0123456789"})
	u := b.view(t, j.ID).Output.File.URL
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	token := parsed.Query().Get("token")
	other := b.seedJob(t, job.StatusComplete, map[string]string{"other.mp4": "x"})
	empty := b.view(t, b.seedJob(t, job.StatusComplete, map[string]string{"empty.mp4": ""}).ID).Output.File.URL

	tests := []struct {
		name    string
		method  string
		target  string
		rng     string
		status  int
		body    string
		headers map[string]string
	}{
		{"get", "GET", u, "", 200, "0123456789", map[string]string{"Content-Type": "video/mp4", "Content-Length": "10"}},
		{"range", "GET", u, "bytes=0-3", 206, "0123", map[string]string{"Content-Range": "bytes 0-3/10", "Content-Length": "4"}},
		{"suffix range", "GET", u, "bytes=-2", 206, "89", nil},
		{"suffix range longer than the file", "GET", u, "bytes=-20", 206, "0123456789", nil},
		{"empty suffix range", "GET", u, "bytes=-0", 416, "", map[string]string{"Content-Type": "application/json", "Content-Range": "bytes */10"}},
		{"empty suffix range, zeros", "GET", u, "bytes= -000", 416, "", map[string]string{"Content-Range": "bytes */10"}},
		{"head", "HEAD", u, "", 200, "", map[string]string{"Content-Length": "10", "Content-Type": "video/mp4"}},
		// An empty file has no range to give: it is served whole, as nothing.
		{"suffix range of an empty file", "GET", empty, "bytes=-5", 200, "", map[string]string{"Content-Length": "0", "Content-Range": ""}},
		{"range of an empty file", "GET", empty, "bytes=0-", 200, "", map[string]string{"Content-Length": "0", "Content-Range": ""}},
		{"unsatisfiable range", "GET", u, "bytes=20-", 416, "", map[string]string{"Content-Type": "application/json", "Content-Range": "bytes */10"}},
		{"range with spaces", "GET", u, "bytes= 1 - 2", 206, "12", map[string]string{"Content-Range": "bytes 1-2/10"}},
		// A malformed Range is ignored (RFC 9110 §14.2): the whole file, not 416.
		{"range not a number", "GET", u, "bytes=a-3", 200, "0123456789", map[string]string{"Content-Length": "10", "Content-Range": ""}},
		{"range without a unit", "GET", u, "0-3", 200, "0123456789", map[string]string{"Content-Length": "10"}},
		{"range of another unit", "GET", u, "items=0-3", 200, "0123456789", nil},
		{"range without a dash", "GET", u, "bytes=3", 200, "0123456789", nil},
		{"range backwards", "GET", u, "bytes=5-2", 200, "0123456789", nil},
		{"range of a negative", "GET", u, "bytes=--2", 200, "0123456789", nil},
		{"range empty", "GET", u, "bytes=", 200, "0123456789", nil},
		{"range of only a dash", "GET", u, "bytes=-", 200, "0123456789", nil},
		{"range past int64", "GET", u, "bytes=0-99999999999999999999", 200, "0123456789", nil},
		// Several ranges are served as the whole file, not as a multipart answer.
		{"two ranges", "GET", u, "bytes=0-0,2-3", 200, "0123456789", map[string]string{"Content-Length": "10"}},
		{"thousands of ranges", "GET", u, "bytes=" + strings.Repeat("0-0,", 5000) + "1-1", 200, "0123456789", map[string]string{"Content-Length": "10"}},
		{"missing token", "GET", "/dl/" + j.ID, "", 403, "", nil},
		{"forged token", "GET", "/dl/" + j.ID + "?token=" + strings.Repeat("A", len(token)), "", 403, "", nil},
		{"token of another job", "GET", "/dl/" + other.ID + "?token=" + token, "", 403, "", nil},
		{"missing job", "GET", "/dl/job_missing?token=" + token, "", 403, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := map[string]string{}
			if tt.rng != "" {
				h["Range"] = tt.rng
			}
			res := b.do(t, request{method: tt.method, path: tt.target, header: h})
			if res.status != tt.status {
				t.Fatalf("status %d, body %s", res.status, res.body)
			}
			if tt.body != "" && string(res.body) != tt.body {
				t.Fatalf("body %q, want %q", res.body, tt.body)
			}
			for k, v := range tt.headers {
				if got := res.header.Get(k); got != v {
					t.Fatalf("%s = %q, want %q", k, got, v)
				}
			}
			if tt.status == 403 {
				if code, msg := res.errorBody(t); code != problem.CodeForbidden || !strings.Contains(msg, "not valid") && !strings.Contains(msg, "required") {
					t.Fatalf("error %s %q", code, msg)
				}
			}
		})
	}
}

func TestDownloadStream(t *testing.T) {
	t.Parallel()
	b := setup(t)
	j := b.seedJob(t, job.StatusComplete, map[string]string{
		"index.m3u8": "#EXTM3U\nseg_000.ts\nseg_001.ts\n", "seg_000.ts": "TS0", "seg_001.ts": "TS1", "manifest.mpd": "<MPD/>",
	})
	v := b.view(t, j.ID)
	manifest := v.Output.File.URL
	if !strings.HasPrefix(manifest, b.url+"/v/"+j.ID+"/") || !strings.HasSuffix(manifest, "/index.m3u8") {
		t.Fatalf("manifest URL %q", manifest)
	}
	// A segment is fetched by the name the manifest gives it, relative to the manifest's URL.
	relative := func(name string) string {
		base, _ := url.Parse(manifest)
		ref, _ := url.Parse(name)
		return base.ResolveReference(ref).String()
	}
	parts := strings.Split(strings.TrimPrefix(manifest, b.url+"/v/"), "/")
	token := parts[1]

	tests := []struct {
		name   string
		method string
		target string
		rng    string
		status int
		ctype  string
		body   string
	}{
		{"manifest", "GET", manifest, "", 200, "application/vnd.apple.mpegurl", ""}, // re-signed: TestPlaylistResigned
		{"manifest as written", "GET", manifest + "?raw=1", "", 200, "application/vnd.apple.mpegurl", "#EXTM3U\nseg_000.ts\nseg_001.ts\n"},
		{"segment by relative name", "GET", relative("seg_001.ts"), "", 200, "video/mp2t", "TS1"},
		{"segment range", "GET", relative("seg_000.ts"), "bytes=1-", 206, "video/mp2t", "S0"},
		{"dash manifest", "GET", relative("manifest.mpd"), "", 200, "application/dash+xml", "<MPD/>"},
		{"head", "HEAD", relative("seg_000.ts"), "", 200, "video/mp2t", ""},
		{"file not in the output", "GET", relative("seg_999.ts"), "", 404, "application/json", ""},
		{"forged token", "GET", "/v/" + j.ID + "/" + strings.Repeat("B", len(token)) + "/seg_000.ts", "", 403, "application/json", ""},
		{"malformed token", "GET", "/v/" + j.ID + "/xyz/seg_000.ts", "", 403, "application/json", ""},
		{"tampered job id", "GET", "/v/job_other/" + token + "/seg_000.ts", "", 403, "application/json", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := map[string]string{}
			if tt.rng != "" {
				h["Range"] = tt.rng
			}
			res := b.do(t, request{method: tt.method, path: tt.target, header: h})
			if res.status != tt.status || res.header.Get("Content-Type") != tt.ctype {
				t.Fatalf("got %d %q, want %d %q; body %s", res.status, res.header.Get("Content-Type"), tt.status, tt.ctype, res.body)
			}
			if tt.body != "" && string(res.body) != tt.body {
				t.Fatalf("body %q, want %q", res.body, tt.body)
			}
			if tt.status == 200 && res.header.Get("Access-Control-Allow-Origin") != "*" {
				t.Fatal("downloads must allow cross-origin players")
			}
			if tt.status/100 == 2 {
				// Segments are media, shown inline; manifests are not, so they download
				// (players fetch them, which Content-Disposition does not affect).
				want := "attachment"
				if strings.HasPrefix(tt.ctype, "video/") {
					want = "inline"
				}
				if d := res.header.Get("Content-Disposition"); !strings.HasPrefix(d, want+";") || res.header.Get("X-Content-Type-Options") != "nosniff" {
					t.Fatalf("Content-Disposition %q, X-Content-Type-Options %q; want %s and nosniff", d, res.header.Get("X-Content-Type-Options"), want)
				}
			}
		})
	}
}

// After the hour, a URL is refused as expired, and reading the job again mints one that works.
func TestDownloadExpired(t *testing.T) {
	t.Parallel()
	b := setup(t)
	single := b.seedJob(t, job.StatusComplete, map[string]string{"out.mp4": "x"})
	set := b.seedJob(t, job.StatusComplete, map[string]string{"a.png": "A", "b.png": "B"})
	oldSingle := b.view(t, single.ID).Output.File.URL
	oldMember := b.view(t, set.ID).Output.Files[0].URL

	b.clock.Advance(time.Hour)
	for _, u := range []string{oldSingle, oldMember} {
		res := b.do(t, request{method: "GET", path: u})
		code, msg := res.errorBody(t)
		if res.status != 403 || code != problem.CodeForbidden || !strings.Contains(msg, "expired") {
			t.Fatalf("%s: got %d %s %q, want 403 FORBIDDEN saying expired", u, res.status, code, msg)
		}
	}
	fresh := b.view(t, single.ID).Output.File.URL
	if res := b.do(t, request{method: "GET", path: fresh}); res.status != 200 || string(res.body) != "x" {
		t.Fatalf("fresh URL: %d %s", res.status, res.body)
	}
}

// An HLS playlist fetched through /v/ names its members with a token minted at fetch time,
// valid for the URL lifetime plus the playlist's duration, but never past the expiry of the
// link the player came by plus that duration: a two-hour stream loaded in its link's last
// minute still plays to its end, and no later.
func TestPlaylistResigned(t *testing.T) {
	t.Parallel()
	b := setup(t)
	media := "#EXTM3U\n#EXT-X-TARGETDURATION:3600\n#EXT-X-MAP:URI=\"init.mp4\"\n#EXTINF:3600.0,\nseg_000.m4s\n#EXTINF:3600.0,\nseg_001.m4s\n#EXT-X-ENDLIST\n"
	master := "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=800000\nlow.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=90000\nhttps://cdn.example.com/other.m3u8\n"
	j := b.seedJob(t, job.StatusComplete, map[string]string{
		"master.m3u8": master, "low.m3u8": media, "init.mp4": "INIT", "seg_000.m4s": "S0", "seg_001.m4s": "S1",
	})
	var masterURL string
	for _, f := range b.view(t, j.ID).Output.Files {
		if f.Path == "master.m3u8" {
			masterURL = f.URL
		}
	}
	// Near the end of the master link's hour, the player loads the master, then the variant.
	b.clock.Advance(59 * time.Minute)
	res := b.do(t, request{method: "GET", path: masterURL})
	if res.status != 200 {
		t.Fatalf("master: %d %s", res.status, res.body)
	}
	lines := strings.Split(strings.TrimSpace(string(res.body)), "\n")
	if lines[4] != "https://cdn.example.com/other.m3u8" {
		t.Errorf("an absolute URL was rewritten: %q", lines[4])
	}
	variant := lines[2]
	if !strings.HasPrefix(variant, "/v/"+j.ID+"/") || !strings.HasSuffix(variant, "/low.m3u8") || strings.Contains(masterURL, variant) {
		t.Fatalf("variant line %q: want a fresh /v/ path", variant)
	}
	res = b.do(t, request{method: "GET", path: variant})
	if res.status != 200 {
		t.Fatalf("variant: %d %s", res.status, res.body)
	}
	body := string(res.body)
	var members []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "/v/") {
			members = append(members, l)
		}
	}
	initURI := regexp.MustCompile(`URI="([^"]+)"`).FindStringSubmatch(body)
	if len(members) != 2 || initURI == nil || !strings.HasPrefix(initURI[1], "/v/"+j.ID+"/") {
		t.Fatalf("variant playlist not re-signed:\n%s", body)
	}
	// Two hours on, the original link has long expired; the members still play.
	b.clock.Advance(2 * time.Hour)
	if res := b.do(t, request{method: "GET", path: masterURL}); res.status != 403 {
		t.Errorf("the original master link after 2 h 59 min: %d, want 403", res.status)
	}
	for _, m := range append(members, initURI[1]) {
		if res := b.do(t, request{method: "GET", path: m}); res.status != 200 {
			t.Errorf("%s after 2 h 59 min: %d %s", m, res.status, res.body)
		}
	}
	// At the link's hour plus the media's two, they end too.
	b.clock.Advance(time.Minute)
	if res := b.do(t, request{method: "GET", path: members[1]}); res.status != 403 {
		t.Errorf("a member past the link's hour plus the media's duration: %d, want 403", res.status)
	}
}

// A member's token opens the playlist too, which names its members with fresh tokens; followed
// member by member, a link with 5 seconds of life left stops working within those 5 seconds
// plus the playlist's 4, however often the playlist is fetched again.
func TestPlaylistChainEnds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	j := b.seedJob(t, job.StatusComplete, map[string]string{
		"index.m3u8": "#EXTM3U\n#EXTINF:2.0,\nseg_000.ts\n#EXTINF:1.5,\nseg_001.ts\n#EXT-X-ENDLIST\n", "seg_000.ts": "TS0", "seg_001.ts": "TS1",
	})
	v := b.view(t, j.ID)
	link := time.UnixMilli(*v.Output.ExpiresAt)
	const playlist = 4 * time.Second // 3.5 s of #EXTINF, counted in whole seconds
	b.clock.Set(link.Add(-5 * time.Second))

	memberOf := func(t *testing.T, target string) string {
		t.Helper()
		res := b.do(t, request{method: "GET", path: target})
		if res.status != 200 {
			t.Fatalf("GET %s at link%+v: %d %s", target, b.clock.Now().Sub(link), res.status, res.body)
		}
		for _, l := range strings.Split(string(res.body), "\n") {
			if strings.HasPrefix(l, "/v/") {
				return l
			}
		}
		t.Fatalf("playlist names no member:\n%s", res.body)
		return ""
	}
	// playlistOf opens the playlist with the token of a member's path.
	playlistOf := func(member string) string {
		return member[:strings.LastIndex(member, "/")] + "/index.m3u8"
	}
	target := v.Output.File.URL
	for b.clock.Now().Before(link.Add(playlist)) {
		member := memberOf(t, target)
		if res := b.do(t, request{method: "GET", path: member}); res.status != 200 {
			t.Fatalf("GET %s at link%+v: %d %s", member, b.clock.Now().Sub(link), res.status, res.body)
		}
		target = playlistOf(member)
		b.clock.Advance(time.Second)
	}
	for _, path := range []string{target, strings.TrimSuffix(target, "index.m3u8") + "seg_001.ts"} {
		res := b.do(t, request{method: "GET", path: path})
		if res.status != 403 {
			t.Errorf("GET %s at the link's life plus the playlist's: %d, want 403", path, res.status)
			continue
		}
		if code, msg := res.errorBody(t); code != problem.CodeForbidden || !strings.Contains(msg, "expired") {
			t.Errorf("GET %s at the link's life plus the playlist's: %s %q, want FORBIDDEN saying expired", path, code, msg)
		}
	}
}
