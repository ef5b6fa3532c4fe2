package integration

import (
	"bufio"
	"bytes"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHLSLinkExpires: an HLS link with a 5-second life (MEDIAJOBS_URL_TTL=5s) stops working
// within its life plus the playlist's duration when followed member by member. Each member's
// token also opens the playlist, which names its members with fresh tokens; those never reach
// past the first link's expiry plus the playlist's duration, however often the playlist is
// fetched again.
func TestHLSLinkExpires(t *testing.T) {
	t.Parallel()
	srv := startServer(t, serverOpts{Unthrottled: true, Backend: sqliteBackend, Env: map[string]string{"MEDIAJOBS_URL_TTL": "5s"}})
	c := newClient(t, srv, createAccount(t, srv, "pro").APIKey)
	j := c.complete(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=3:size=64x36:rate=10 -c:v libx264 -preset ultrafast -pix_fmt yuv420p -g 10 "+
		"-f hls -hls_time 1 -hls_playlist_type vod -hls_segment_filename seg_%03d.ts index.m3u8", nil, nil))
	j = c.job(j.ID)
	if j.Output == nil || j.Output.File == nil || j.Output.ExpiresAt == nil || j.Output.File.Path != "index.m3u8" {
		t.Fatalf("job %s: output %+v, want the index.m3u8 playlist with expiresAt", j.ID, j.Output)
	}
	link := time.UnixMilli(*j.Output.ExpiresAt)
	var seconds float64
	for _, line := range playlistLines(c.mustGet(j.Output.File.URL + "?raw=1")) {
		if d, ok := strings.CutPrefix(line, "#EXTINF:"); ok {
			v, _ := strconv.ParseFloat(strings.Split(d, ",")[0], 64)
			seconds += v
		}
	}
	if seconds <= 0 {
		t.Fatal("the playlist has no #EXTINF durations")
	}
	// The service counts a playlist's duration in whole seconds, rounded up.
	deadline := link.Add(time.Duration(math.Ceil(seconds)) * time.Second)

	target, lastServed := j.Output.File.URL, time.Time{}
	// follow fetches url and tells whether it was served; a refusal must be for expiry, and
	// not before the link's own.
	follow := func(url string) ([]byte, bool) {
		t.Helper()
		start := time.Now()
		r := c.get(url, nil)
		if r.Status == http.StatusOK {
			// The server checked the token after start: serving it says start was before its end.
			if !start.Before(deadline) {
				t.Fatalf("GET %s served %v after the link's life plus the playlist's (%v)", url, start.Sub(deadline), deadline)
			}
			lastServed = start
			return r.Body, true
		}
		if e := r.errorOf(t, http.StatusForbidden); e.Code != "FORBIDDEN" || !strings.Contains(e.Message, "expired") {
			t.Fatalf("GET %s: %+v, want FORBIDDEN saying expired", url, e)
		}
		if time.Now().Before(link) {
			t.Fatalf("GET %s refused before the link itself expired", url)
		}
		return nil, false
	}
	for {
		playlist, ok := follow(target)
		if !ok {
			break
		}
		var member string
		for _, line := range playlistLines(playlist) {
			if strings.HasPrefix(line, "/v/") {
				member = line
				break
			}
		}
		if member == "" {
			t.Fatalf("the playlist at %s names no /v/ member:\n%s", target, playlist)
		}
		if _, ok := follow(srv.Base + member); !ok {
			break
		}
		// The member's token, on the playlist's name: a player would not do it, a scraper may.
		target = srv.Base + member[:strings.LastIndex(member, "/")] + "/index.m3u8"
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatalf("the chain of member tokens still opens the playlist 10 s past %v", deadline)
		}
		// A player's pace: the chain is followed until a token is refused.
		time.Sleep(200 * time.Millisecond) // a player's pace between fetches
	}
	if !lastServed.After(link) {
		t.Errorf("nothing was served after the link's own expiry (last at %v, link %v): members must outlive it by the playlist's duration",
			lastServed, link)
	}
}

// playlistLines are the non-empty lines of a playlist.
func playlistLines(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			out = append(out, line)
		}
	}
	return out
}
