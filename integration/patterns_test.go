package integration

import (
	"bufio"
	"bytes"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOutputPatterns runs one job of each output pattern and downloads what it wrote through
// the signed URLs.
func TestOutputPatterns(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		srv := startServer(t, serverOpts{Unthrottled: true, Backend: b})
		c := newClient(t, srv, createAccount(t, srv, "pro").APIKey)

		tests := []struct {
			name    string
			command string
			check   func(t *testing.T, c *client, o *output)
		}{
			{
				name:    "single mp4",
				command: "ffmpeg -f lavfi -i testsrc=duration=1:size=128x72:rate=10 -c:v libx264 -preset ultrafast -pix_fmt yuv420p out.mp4",
				check:   checkSingleMP4,
			},
			{
				name: "hls stream",
				command: "ffmpeg -f lavfi -i testsrc=duration=3:size=128x72:rate=10 -c:v libx264 -preset ultrafast -pix_fmt yuv420p -g 10 " +
					"-f hls -hls_time 1 -hls_playlist_type vod -hls_segment_filename seg_%03d.ts index.m3u8",
				check: checkHLS,
			},
			{
				name:    "image sequence set",
				command: "ffmpeg -f lavfi -i testsrc=duration=1:size=64x64:rate=4 frame_%03d.png",
				check: func(t *testing.T, c *client, o *output) {
					checkSet(t, c, o, "frame_", ".png", "image", 4)
				},
			},
			{
				name: "segment muxer set",
				command: "ffmpeg -f lavfi -i testsrc=duration=3:size=128x72:rate=10 -c:v libx264 -preset ultrafast -pix_fmt yuv420p -g 10 " +
					"-f segment -segment_time 1 -reset_timestamps 1 part_%03d.mp4",
				check: func(t *testing.T, c *client, o *output) {
					checkSet(t, c, o, "part_", ".mp4", "video", 3)
				},
			},
			// The pattern follows the command, not the count of files it happened to write.
			{
				name:    "image sequence of one image is a set",
				command: "ffmpeg -f lavfi -i testsrc=duration=1:size=64x64:rate=1 -frames:v 1 still_%03d.png",
				check: func(t *testing.T, c *client, o *output) {
					checkSet(t, c, o, "still_", ".png", "image", 1)
				},
			},
			{
				name: "segment command of one segment is a set",
				command: "ffmpeg -f lavfi -i testsrc=duration=1:size=128x72:rate=10 -c:v libx264 -preset ultrafast -pix_fmt yuv420p " +
					"-f segment -segment_time 10 one_%03d.mp4",
				check: func(t *testing.T, c *client, o *output) {
					checkSet(t, c, o, "one_", ".mp4", "video", 1)
				},
			},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				c := newClient(t, srv, c.Key)
				j := c.complete(ffmpegJob(tt.command, nil, nil))
				o := j.Output
				if o == nil {
					t.Fatalf("complete job %s has no output", j.ID)
				}
				if o.ExpiresAt == nil || len(o.Files) == 0 {
					t.Fatalf("output %+v: want files and expiresAt", o)
				}
				if string(o.Data) != "null" {
					t.Errorf("output.data = %s, want null", o.Data)
				}
				checkCost(t, j)
				tt.check(t, c, o)
			})
		}
	})
}

func checkSingleMP4(t *testing.T, c *client, o *output) {
	t.Helper()
	if o.File == nil || len(o.Files) != 1 || !cmp.Equal(*o.File, o.Files[0]) {
		t.Fatalf("single file pattern: file %+v, files %+v", o.File, o.Files)
	}
	f := *o.File
	if f.Path != "out.mp4" || f.Type != "video" || f.Size <= 0 {
		t.Errorf("file = %+v, want out.mp4 video", f)
	}
	if f.Meta == nil || f.Meta.Width != 128 || f.Meta.Height != 72 || f.Meta.DurationMs < 900 {
		t.Errorf("meta = %+v, want 128x72, about 1 s", f.Meta)
	}
	if !strings.Contains(f.URL, "/dl/") || !strings.Contains(f.URL, "token=") {
		t.Errorf("url %q is not a /dl/<job>?token= URL", f.URL)
	}
	whole := c.mustGet(f.URL)
	if int64(len(whole)) != f.Size || !bytes.Contains(whole[:min(len(whole), 64)], []byte("ftyp")) {
		t.Errorf("downloaded %d bytes, want %d of an MP4", len(whole), f.Size)
	}

	r := c.get(f.URL, http.Header{"Range": {"bytes=4-11"}})
	if r.Status != http.StatusPartialContent {
		t.Fatalf("Range GET: %d %s", r.Status, r.Body)
	}
	if diff := cmp.Diff(whole[4:12], r.Body); diff != "" {
		t.Errorf("Range bytes=4-11 (-want +got):\n%s", diff)
	}
	if got, want := r.Header.Get("Content-Range"), "bytes 4-11/"; !strings.HasPrefix(got, want) {
		t.Errorf("Content-Range = %q", got)
	}

	h := c.as("").do(http.MethodHead, f.URL, nil, nil)
	if h.Status != http.StatusOK || len(h.Body) != 0 {
		t.Fatalf("HEAD: %d, %d body bytes", h.Status, len(h.Body))
	}
	if got := h.Header.Get("Content-Type"); got != "video/mp4" {
		t.Errorf("HEAD Content-Type = %q, want video/mp4", got)
	}
	if got, want := h.Header.Get("Content-Length"), strconv.FormatInt(f.Size, 10); got != want {
		t.Errorf("HEAD Content-Length = %q, want %s", got, want)
	}
	if got := h.Header.Get("Accept-Ranges"); got != "bytes" {
		t.Errorf("Accept-Ranges = %q, want bytes", got)
	}
}

func checkHLS(t *testing.T, c *client, o *output) {
	t.Helper()
	if o.File == nil || o.File.Path != "index.m3u8" || o.File.Type != "playlist" {
		t.Fatalf("stream pattern: file = %+v, want the index.m3u8 playlist", o.File)
	}
	var segs []string
	found := false
	for _, f := range o.Files {
		if cmp.Equal(f, *o.File) {
			found = true
		}
		if strings.HasSuffix(f.Path, ".ts") {
			segs = append(segs, f.Path)
		}
		if !strings.Contains(f.URL, "/v/") {
			t.Errorf("stream member url %q is not a /v/ URL", f.URL)
		}
	}
	if !found || len(segs) < 2 {
		t.Fatalf("files %+v: want the manifest and at least two segments", o.Files)
	}

	r := c.get(o.File.URL, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET manifest: %d %s", r.Status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/vnd.apple.mpegurl" {
		t.Errorf("manifest Content-Type = %q", ct)
	}
	var named []string
	sc := bufio.NewScanner(bytes.NewReader(r.Body))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			named = append(named, line)
		}
	}
	sort.Strings(segs)
	// The manifest names each segment by a path re-signed when it was fetched
	// (/v/<job>/<fresh token>/<segment>), so that playback outlives the manifest link's hour.
	var names []string
	for _, n := range named {
		if !strings.HasPrefix(n, "/v/") {
			t.Errorf("manifest line %q is not a re-signed /v/ path", n)
		}
		name, _ := url.PathUnescape(n[strings.LastIndexByte(n, '/')+1:])
		names = append(names, name)
	}
	if diff := cmp.Diff(segs, names); diff != "" {
		t.Errorf("segments named by the manifest (-files +manifest):\n%s", diff)
	}
	// A player resolves each segment against the manifest's URL.
	base, err := url.Parse(o.File.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range named {
		ref, _ := url.Parse(name)
		seg := c.get(base.ResolveReference(ref).String(), nil)
		if seg.Status != http.StatusOK || len(seg.Body) == 0 || seg.Body[0] != 0x47 {
			t.Errorf("GET segment %s through the manifest's token path: %d, %d bytes", name, seg.Status, len(seg.Body))
		}
		if ct := seg.Header.Get("Content-Type"); ct != "video/mp2t" {
			t.Errorf("segment Content-Type = %q", ct)
		}
	}
}

func checkSet(t *testing.T, c *client, o *output, prefix, ext, typ string, want int) {
	t.Helper()
	if o.File != nil {
		t.Errorf("set pattern: file = %+v, want null", o.File)
	}
	if len(o.Files) != want {
		t.Errorf("set has %d members, want %d: %+v", len(o.Files), want, o.Files)
	}
	for _, f := range o.Files {
		if !strings.HasPrefix(f.Path, prefix) || !strings.HasSuffix(f.Path, ext) || f.Type != typ || f.Size <= 0 {
			t.Errorf("member %+v: want %s*%s of type %s", f, prefix, ext, typ)
		}
		if !strings.Contains(f.URL, "/v/") {
			t.Errorf("set member url %q is not a /v/ URL", f.URL)
		}
		if got := c.mustGet(f.URL); int64(len(got)) != f.Size {
			t.Errorf("member %s: downloaded %d bytes, want %d", f.Path, len(got), f.Size)
		}
	}
}

// checkCost checks the cost a complete job must carry.
func checkCost(t *testing.T, j jobView) {
	t.Helper()
	if j.Cost == nil {
		t.Errorf("complete job %s has no cost", j.ID)
		return
	}
	if j.Cost.Amount < 0 || j.Cost.Currency == "" || j.Cost.Formatted == "" {
		t.Errorf("job %s: cost %+v is not a valid cost", j.ID, *j.Cost)
	}
}
