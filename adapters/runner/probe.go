package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
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

// Probe reads a file's meta with ffprobe in the sandbox. Unknown fields stay zero (omitted).
func Probe(ctx context.Context, sb *sandbox.Sandbox, dir, name string) (*job.Meta, error) {
	var out bytes.Buffer
	res, err := sb.Run(ctx, sandbox.Spec{Dir: dir, Program: sandbox.FFprobe, Timeout: 20 * time.Second, Stdout: &out,
		Args: []string{"-v", "error", "-print_format", "json", "-show_format", "-show_streams", "file:" + name}})
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("ffprobe %s exited with status %d", name, res.ExitCode)
	}
	var p ffprobeOutput
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		return nil, err
	}
	m := &job.Meta{Format: p.Format.FormatName}
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

func parseSeconds(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0
	}
	return v
}
