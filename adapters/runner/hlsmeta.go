package runner

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/mediajobs/mediajobs/core/job"
)

// segmentFormats are the formats a probe gives the segments of an HLS stream (formatName), by
// extension: what a segment's meta says when it was not probed.
var segmentFormats = map[string]string{".ts": "ts", ".m4s": "mov", ".aac": "aac", ".vtt": "vtt"}

// fillFromPlaylists completes the meta of the segments that were not probed (collect probes
// MaxProbes files) from what the stream says of them: each HLS media playlist among the files
// gives its segments' durations (#EXTINF), the extension gives the container, and a probed
// segment of the same playlist gives the picture size, which every segment of one rendition
// shares. A playlist is the command's output, so it is read as untrusted: without following
// links, a bounded number of bytes, and only names that are files of the job.
func fillFromPlaylists(work string, files []job.File) {
	index := make(map[string]int, len(files))
	for i, f := range files {
		index[f.Path] = i
	}
	for _, f := range files {
		if strings.ToLower(filepath.Ext(f.Path)) != ".m3u8" {
			continue
		}
		segs := playlistSegments(filepath.Join(work, f.Path))
		var w, h int
		for _, s := range segs {
			if i, ok := index[s.name]; ok && files[i].Meta != nil && files[i].Meta.Width > 0 {
				w, h = files[i].Meta.Width, files[i].Meta.Height
				break
			}
		}
		for _, s := range segs {
			i, ok := index[s.name]
			if !ok || files[i].Meta != nil {
				continue
			}
			m := &job.Meta{Format: segmentFormats[strings.ToLower(filepath.Ext(s.name))], DurationMs: s.durationMs}
			if files[i].Type == job.FileVideo {
				m.Width, m.Height = w, h
			}
			if *m != (job.Meta{}) {
				files[i].Meta = m
			}
		}
	}
}

// segment is one media segment a playlist names.
type segment struct {
	name       string
	durationMs int64
}

// maxPlaylistBytes bounds what fillFromPlaylists reads of one playlist (a day of 1-second
// segments is about 2 MB).
const maxPlaylistBytes = 4 << 20

// playlistSegments reads the segments of an HLS media playlist: each #EXTINF duration with the
// URI line after it. A master playlist, or a file that cannot be read, names none.
func playlistSegments(path string) []segment {
	fd, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil
	}
	defer fd.Close()
	if st, err := fd.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil
	}
	var segs []segment
	durationMs := int64(-1)
	sc := bufio.NewScanner(io.LimitReader(fd, maxPlaylistBytes))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "#EXTINF:"):
			v, _, _ := strings.Cut(strings.TrimPrefix(line, "#EXTINF:"), ",")
			if sec, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && sec >= 0 && sec < 1e6 {
				durationMs = int64(sec*1000 + 0.5)
			}
		case line == "" || strings.HasPrefix(line, "#"):
		default:
			if durationMs >= 0 {
				segs = append(segs, segment{name: line, durationMs: durationMs})
			}
			durationMs = -1
		}
	}
	return segs
}
