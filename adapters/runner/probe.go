package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/core/job"
)

// ffprobeOutput is the part of `ffprobe -print_format json -show_format -show_streams` read here.
type ffprobeOutput struct {
	Format struct {
		FormatName string `json:"format_name"`
		Duration   string `json:"duration"`
	} `json:"format"`
	Streams []struct {
		CodecType string `json:"codec_type"`
		Width     int    `json:"width"`
		Height    int    `json:"height"`
		Duration  string `json:"duration"`
	} `json:"streams"`
}

// ffprobe runs ffprobe in the sandbox on the file name in dir, within timeout, with args before
// it, and returns what it printed.
func ffprobe(ctx context.Context, sb sandbox.Runner, dir, name string, timeout time.Duration, args ...string) ([]byte, error) {
	var out bytes.Buffer
	res, err := sb.Run(ctx, sandbox.Spec{Dir: dir, Program: sandbox.FFprobe, Timeout: timeout, Stdout: &out,
		Args: append(args, "file:"+name)})
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("ffprobe %s exited with status %d", name, res.ExitCode)
	}
	return out.Bytes(), nil
}

// Probe reads a file's meta with ffprobe in the sandbox. Unknown fields stay zero (omitted).
func Probe(ctx context.Context, sb sandbox.Runner, dir, name string) (*job.Meta, error) {
	out, err := ffprobe(ctx, sb, dir, name, 20*time.Second, "-v", "error", "-print_format", "json", "-show_format", "-show_streams")
	if err != nil {
		return nil, err
	}
	var p ffprobeOutput
	if err := json.Unmarshal(out, &p); err != nil {
		return nil, err
	}
	m := &job.Meta{Format: formatName(p.Format.FormatName, name)}
	seconds := parseSeconds(p.Format.Duration)
	for _, s := range p.Streams {
		if s.CodecType == "video" && m.Width == 0 {
			m.Width, m.Height = s.Width, s.Height
		}
		if seconds == 0 {
			seconds = parseSeconds(s.Duration)
		}
	}
	m.DurationMs = int64(math.Round(seconds * 1000))
	return m, nil
}

// formatName picks, from ffprobe's demuxer list ("mov,mp4,m4a,3gp,3g2,mj2"), the name that
// matches the file's extension, so an .mp4 reads "mp4"; otherwise the demuxer's first name.
func formatName(names, file string) string {
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(file)), ".")
	if ext == "jpeg" {
		ext = "jpg"
	}
	list := strings.Split(names, ",")
	for _, n := range list {
		if n == ext {
			return n
		}
	}
	aliases := map[string][]string{"mkv": {"matroska"}, "m4a": {"mov"}, "ts": {"mpegts"}, "m3u8": {"hls"},
		"mpd": {"dash"}, "jpg": {"image2", "jpeg_pipe"}, "png": {"image2", "png_pipe"}, "oga": {"ogg"},
		"opus": {"ogg"}, "vtt": {"webvtt"}}
	for _, n := range list {
		for _, a := range aliases[ext] {
			if a == n {
				return ext
			}
		}
	}
	return list[0]
}

func parseSeconds(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0
	}
	return v
}
