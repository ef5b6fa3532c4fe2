package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/core/jobtype/captionburn"
	"github.com/mediajobs/mediajobs/core/jobtype/extractmetadata"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// Metadata executes extract.metadata jobs: fetch the source, ffprobe it in the sandbox, answer
// with extractmetadata.Metadata in output.data.
type Metadata struct {
	FFmpeg *FFmpeg
}

// Execute runs one extract.metadata job.
func (m *Metadata) Execute(ctx context.Context, a workqueue.Assignment, work string, h Hooks) workqueue.Result {
	src, err := extractmetadata.Parse(a.Inputs, a.Params)
	if err == nil {
		_, err = captionburn.CheckURLs(map[string]string{captionburn.InputSource: src}, m.FFmpeg.env(a))
	}
	if err != nil {
		return workqueue.Result{Failure: invalid(err.Error())}
	}
	if e := m.FFmpeg.Fetch.Fetch(ctx, a, src, filepath.Join(work, localSource)); e != nil {
		return workqueue.Result{Failure: e}
	}
	if e := refuseList(work, localSource, "inputs.source"); e != nil {
		return workqueue.Result{Failure: e}
	}
	h.Executing()
	md, wall, err := probeMetadata(ctx, m.FFmpeg.Sandbox, work, localSource, a.Timeout)
	if err != nil {
		return workqueue.Result{ComputeMs: wall.Milliseconds(), Failure: exitFail("the source could not be read as media", []byte(err.Error()))}
	}
	data, err := json.Marshal(md)
	if err != nil {
		return workqueue.Result{Failure: m.FFmpeg.internal(a.Lease.JobID, "encoding the metadata failed", err)}
	}
	h.Progress(1)
	return workqueue.Result{Data: data, ComputeMs: max(1, wall.Milliseconds())}
}

// containerFormat is formatName, except that a file staged without an extension and read by
// the ISO demuxer ("mov,mp4,m4a,3gp,3g2,mj2") is named by its major brand: an MP4 says "mp4".
func containerFormat(names, file, brand string) string {
	if filepath.Ext(file) != "" || !strings.Contains(","+names+",", ",mp4,") {
		return formatName(names, file)
	}
	switch strings.TrimSpace(brand) {
	case "qt":
		return "mov"
	case "M4A", "M4B":
		return "m4a"
	case "3gp4", "3gp5", "3gp6", "3gg6":
		return "3gp"
	default:
		return "mp4"
	}
}

// localSource is the name the source input is staged under: without an extension FFmpeg probes
// the content.
const localSource = "source"

// fullProbe is the part of ffprobe's JSON extract.metadata reads.
type fullProbe struct {
	Format struct {
		FormatName     string            `json:"format_name"`
		FormatLongName string            `json:"format_long_name"`
		Duration       string            `json:"duration"`
		Size           string            `json:"size"`
		BitRate        string            `json:"bit_rate"`
		Tags           map[string]string `json:"tags"`
	} `json:"format"`
	Streams []struct {
		Index         int               `json:"index"`
		CodecType     string            `json:"codec_type"`
		CodecName     string            `json:"codec_name"`
		Profile       string            `json:"profile"`
		Width         int               `json:"width"`
		Height        int               `json:"height"`
		AvgFrameRate  string            `json:"avg_frame_rate"`
		RFrameRate    string            `json:"r_frame_rate"`
		PixFmt        string            `json:"pix_fmt"`
		SampleRate    string            `json:"sample_rate"`
		Channels      int               `json:"channels"`
		ChannelLayout string            `json:"channel_layout"`
		Duration      string            `json:"duration"`
		BitRate       string            `json:"bit_rate"`
		Tags          map[string]string `json:"tags"`
	} `json:"streams"`
}

// probeMetadata runs ffprobe on name in the sandbox and maps its answer to the stable shape.
func probeMetadata(ctx context.Context, sb sandbox.Runner, dir, name string, timeout time.Duration) (extractmetadata.Metadata, time.Duration, error) {
	var out bytes.Buffer
	if timeout <= 0 || timeout > time.Minute {
		timeout = time.Minute
	}
	res, err := sb.Run(ctx, sandbox.Spec{Dir: dir, Program: sandbox.FFprobe, Timeout: timeout, Stdout: &out,
		Args: []string{"-v", "error", "-print_format", "json", "-show_format", "-show_streams", "file:" + name}})
	if err != nil {
		return extractmetadata.Metadata{}, res.Wall, err
	}
	if res.ExitCode != 0 {
		return extractmetadata.Metadata{}, res.Wall, fmt.Errorf("ffprobe exited with status %d: %s", res.ExitCode, bytes.TrimSpace(res.StderrTail))
	}
	var p fullProbe
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		return extractmetadata.Metadata{}, res.Wall, fmt.Errorf("ffprobe answer: %w", err)
	}
	if p.Format.FormatName == "" {
		return extractmetadata.Metadata{}, res.Wall, fmt.Errorf("ffprobe found no container format")
	}
	md := extractmetadata.Metadata{
		Format: containerFormat(p.Format.FormatName, name, p.Format.Tags["major_brand"]), FormatLong: p.Format.FormatLongName,
		DurationMs: millis(p.Format.Duration), Size: integer(p.Format.Size), BitRate: integer(p.Format.BitRate),
		Streams: []extractmetadata.Stream{}, Tags: tags(p.Format.Tags),
	}
	for _, s := range p.Streams {
		st := extractmetadata.Stream{Index: s.Index, Type: s.CodecType, Codec: s.CodecName, Profile: s.Profile,
			Width: s.Width, Height: s.Height, PixelFormat: s.PixFmt, SampleRate: int(integer(s.SampleRate)),
			Channels: s.Channels, ChannelLayout: s.ChannelLayout, DurationMs: millis(s.Duration), BitRate: integer(s.BitRate),
			Tags: tags(s.Tags)}
		if s.CodecType == "video" {
			st.FrameRate = rate(s.AvgFrameRate)
			if st.FrameRate == 0 {
				st.FrameRate = rate(s.RFrameRate)
			}
		}
		if l := st.Tags["language"]; l != "" && l != "und" {
			st.Language = l
		}
		md.Streams = append(md.Streams, st)
	}
	if md.DurationMs == 0 {
		for _, s := range md.Streams {
			md.DurationMs = max(md.DurationMs, s.DurationMs)
		}
	}
	return md, res.Wall, nil
}

func millis(s string) int64 { return int64(math.Round(parseSeconds(s) * 1000)) }

func integer(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// rate reads ffprobe's "30000/1001" as frames per second, to three decimals.
func rate(s string) float64 {
	num, den, ok := strings.Cut(s, "/")
	n, err1 := strconv.ParseFloat(num, 64)
	d := 1.0
	var err2 error
	if ok {
		d, err2 = strconv.ParseFloat(den, 64)
	}
	if err1 != nil || err2 != nil || d == 0 || n <= 0 || math.IsInf(n/d, 0) {
		return 0
	}
	return math.Round(n/d*1000) / 1000
}

// tags lower-cases keys and bounds what a file can make the answer carry.
func tags(in map[string]string) map[string]string {
	if len(in) == 0 {
		return nil
	}
	// The first 64 keys in sorted order, so the same file always gives the same answer.
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]string, min(len(in), 64))
	for _, k := range keys {
		if len(out) == 64 {
			break
		}
		v := in[k]
		if len(v) > 1024 {
			v = v[:1024]
		}
		out[strings.ToLower(k)] = strings.ToValidUTF8(v, "")
	}
	return out
}
