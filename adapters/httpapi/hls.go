package httpapi

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs/core/blob"
)

// maxPlaylist bounds a playlist read into memory to be re-signed; a larger one is served as
// stored.
const maxPlaylist = 4 << 20

// maxPlaylistTTL bounds how long the links of a re-signed playlist live, however long its media.
const maxPlaylistTTL = 24 * time.Hour

// resignPlaylist rewrites an HLS playlist served under /v/ so that every member it names
// (segments, variant playlists, init sections, renditions) points at a token minted now, valid
// for the URL lifetime plus the playlist's own duration: a player that loads a playlist can
// play it to its end even past the one-hour life of the link it came by, and a master
// playlist's variants are re-signed again when the player fetches them. Members are written as
// absolute paths (/v/<job>/<token>/<file>), so they resolve on whatever host served the
// playlist. Absolute URLs in the playlist are left alone.
//
// origin is the expiry of the link the request's token descends from. The members' tokens
// never outlive it by more than this playlist's duration, and carry it on: a member's token
// also opens the playlist, and without the bound each opening would mint later tokens than
// the last, so a link once given out would never expire.
func (a *api) resignPlaylist(jobID, file string, b blob.Blob, origin time.Time) (blob.Blob, error) {
	if b.Size() > maxPlaylist {
		return b, nil
	}
	body, err := io.ReadAll(b)
	if err != nil {
		return nil, err
	}
	length := min(time.Duration(math.Ceil(playlistSeconds(body)))*time.Second, maxPlaylistTTL)
	expires := a.opts.Now().Add(min(a.opts.URLTTL+length, maxPlaylistTTL))
	if bound := origin.Add(length); bound.Before(expires) {
		expires = bound
	}
	token := a.opts.Verifier.MemberToken(jobID, expires, origin)
	dir := path.Dir(file)
	member := func(uri string) string {
		if uri == "" || strings.Contains(uri, "://") || strings.HasPrefix(uri, "/") || strings.HasPrefix(uri, "data:") {
			return uri
		}
		u, err := url.Parse(uri)
		if err != nil {
			return uri
		}
		name := path.Clean(path.Join(dir, u.Path))
		if name == "." || strings.HasPrefix(name, "../") || name == ".." {
			return uri
		}
		out := "/v/" + url.PathEscape(jobID) + "/" + token + "/" + url.PathEscape(name)
		if u.RawQuery != "" {
			out += "?" + u.RawQuery
		}
		return out
	}
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), maxPlaylist)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
		case strings.HasPrefix(trimmed, "#"):
			line = uriAttr.ReplaceAllStringFunc(line, func(attr string) string {
				return `URI="` + member(attr[len(`URI="`):len(attr)-1]) + `"`
			})
		default:
			line = member(trimmed)
		}
		out.WriteString(line)
		out.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("playlist %s: %w", file, err)
	}
	return memBlob{Reader: bytes.NewReader(out.Bytes()), mod: b.ModTime()}, nil
}

// uriAttr is a tag's URI attribute (#EXT-X-MAP, #EXT-X-MEDIA, #EXT-X-I-FRAME-STREAM-INF, ...).
var uriAttr = regexp.MustCompile(`URI="[^"]*"`)

// playlistSeconds sums a media playlist's #EXTINF durations (0 for a master playlist).
func playlistSeconds(body []byte) float64 {
	var total float64
	for _, line := range bytes.Split(body, []byte("\n")) {
		rest, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("#EXTINF:"))
		if !ok {
			continue
		}
		d, _, _ := bytes.Cut(rest, []byte(","))
		if s, err := strconv.ParseFloat(string(d), 64); err == nil && s > 0 {
			total += s
		}
	}
	return total
}

// memBlob is a rewritten playlist.
type memBlob struct {
	*bytes.Reader
	mod time.Time
}

func (m memBlob) Close() error       { return nil }
func (m memBlob) ModTime() time.Time { return m.mod }
func (m memBlob) Size() int64        { return m.Reader.Size() }
