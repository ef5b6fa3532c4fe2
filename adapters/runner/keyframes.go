package runner

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// Keyframes reads the times of the keyframes of a file's first video stream, in seconds from
// the file's start and in order, with ffprobe in the sandbox as Probe does. It reads packets and
// their K flag, not frames, so nothing is decoded: a long input takes as long as reading its
// index. These are the times validator.SplitCommands may cut at: FFmpeg's -ss and -to before an
// -i count from the file's start time (1.4 s into an MPEG-TS file, say), so the times are
// counted from it too, and seeking to one lands on that keyframe.
func Keyframes(ctx context.Context, sb sandbox.Runner, dir, name string) ([]float64, error) {
	keys, _, err := packets(ctx, sb, dir, name)
	return keys, err
}

// packets reads the video's keyframe times (Keyframes) and the times of all its packets.
func packets(ctx context.Context, sb sandbox.Runner, dir, name string) (keys, times []float64, err error) {
	out, err := ffprobe(ctx, sb, dir, name, 60*time.Second, "-v", "error", "-select_streams", "v:0", "-show_entries",
		"packet=pts_time,flags:format=start_time", "-of", "csv=p=1")
	if err != nil {
		return nil, nil, err
	}
	keys, times, err = parsePackets(string(out))
	if err != nil {
		return nil, nil, fmt.Errorf("ffprobe %s: %w", name, err)
	}
	if len(keys) == 0 {
		return nil, nil, fmt.Errorf("%s has no video keyframes", name)
	}
	return keys, times, nil
}

// steady says whether frames at times (in any order) come one every 1/rate seconds, each gap
// within half a frame of it: a split counts a part's frames from times (its lead-in and
// lead-out, validator.SplitCommands), and a frame missing or doubled would move every frame of
// the part after it by one.
func steady(times []float64, rate float64) bool {
	if len(times) < 2 || !(rate > 0) {
		return false
	}
	t := slices.Sorted(slices.Values(times))
	step := 1 / rate
	for i := 1; i < len(t); i++ {
		if math.Abs(t[i]-t[i-1]-step) > step/2 {
			return false
		}
	}
	return true
}

// SplitSource is what a split needs to know of its input beyond the command: where it may be
// cut, how long it is, whether it has audio for SplitCommands to encode, what the video and the
// audio are made of (for an estimate of what each costs to encode), and, when it cannot be
// split whatever the command, why.
type SplitSource struct {
	Keyframes []float64 // as Keyframes reads them
	Duration  float64   // seconds
	Audio     bool
	// FrameRate is the video's frame rate, frames per second (constantRate), where every frame
	// follows the one before by 1/FrameRate (steady); 0 when it is not known or not constant.
	FrameRate float64
	// Width and Height are the first video stream's, 0 when not known.
	Width, Height int
	// SampleRate and Channels are the first audio stream's, 0 when not known.
	SampleRate, Channels int
	// Reason is set when the input is not split: it has no video stream, or a subtitle stream,
	// which the whole command would carry into its output by FFmpeg's default stream selection
	// while the parts and the audio encode drop it (refused even where the command's -sn or
	// -map would drop it too: the plan is not read here).
	Reason string
}

// ProbeSplit reads a split's SplitSource with ffprobe in the sandbox: the streams and the
// duration in one run, the keyframes (Keyframes) in another.
func ProbeSplit(ctx context.Context, sb sandbox.Runner, dir, name string) (SplitSource, error) {
	out, err := ffprobe(ctx, sb, dir, name, 20*time.Second, "-v", "error", "-show_entries",
		"stream=codec_type,width,height,sample_rate,channels,r_frame_rate,avg_frame_rate:format=duration", "-of", "csv=p=1:nk=0")
	if err != nil {
		return SplitSource{}, err
	}
	src, video := parseSplitStreams(string(out))
	if !video {
		return SplitSource{Reason: workqueue.SplitNoVideo}, nil
	}
	var times []float64
	if src.Keyframes, times, err = packets(ctx, sb, dir, name); err != nil {
		return SplitSource{}, err
	}
	if src.FrameRate > 0 && !steady(times, src.FrameRate) {
		src.FrameRate = 0 // its rate is a mean, not each frame's
	}
	return src, nil
}

// StillImage says whether name is one still frame that FFmpeg reads as an image (PNG, JPEG, BMP
// or WebP, one packet), as a split's overlay needs: an animated PNG, or a video under an
// image's name, would start again at each part. It reads with ffprobe in the sandbox; a file it
// cannot read is not one.
func StillImage(ctx context.Context, sb sandbox.Runner, dir, name string) bool {
	out, err := ffprobe(ctx, sb, dir, name, 20*time.Second, "-v", "error", "-count_packets", "-show_entries",
		"stream=codec_type,codec_name,nb_read_packets:format=format_name", "-of", "csv=p=1:nk=0")
	return err == nil && parseStill(string(out))
}

// stillCodecs are the image decoders of a still frame, and stillFormats FFmpeg's demuxers of one.
var (
	stillCodecs  = map[string]bool{"png": true, "mjpeg": true, "bmp": true, "webp": true}
	stillFormats = map[string]bool{"png_pipe": true, "jpeg_pipe": true, "bmp_pipe": true, "webp_pipe": true, "image2": true}
)

// parseStill reads StillImage's ffprobe lines: one stream, a video stream of an image codec and
// one packet, in an image demuxer.
func parseStill(csv string) bool {
	streams, still := 0, false
	format := ""
	for line := range strings.Lines(csv) {
		kind, kv := csvRecord(line)
		switch kind {
		case "stream":
			streams++
			still = kv["codec_type"] == "video" && stillCodecs[kv["codec_name"]] && kv["nb_read_packets"] == "1"
		case "format":
			format = kv["format_name"]
		}
	}
	return streams == 1 && still && stillFormats[format]
}

// csvRecord reads one line of ffprobe's csv=p=1:nk=0 output, "stream,codec_type=video,...":
// the section it is of, and its key=value fields.
func csvRecord(line string) (kind string, kv map[string]string) {
	f := strings.Split(strings.TrimSpace(line), ",")
	kv = map[string]string{}
	for _, field := range f[1:] {
		if k, v, ok := strings.Cut(field, "="); ok {
			kv[k] = v
		}
	}
	return f[0], kv
}

// parseSplitStreams reads ffprobe's "stream,codec_type=video,width=1280,..." and
// "format,duration=60.0" lines: the first video stream's and the first audio stream's facts,
// whether there is a video stream, and the reason a subtitle stream gives.
func parseSplitStreams(csv string) (src SplitSource, video bool) {
	for line := range strings.Lines(csv) {
		kind, kv := csvRecord(line)
		switch {
		case kind == "stream" && kv["codec_type"] == "video":
			if !video {
				src.FrameRate = constantRate(kv["r_frame_rate"], kv["avg_frame_rate"])
				src.Width, src.Height = positive(kv["width"]), positive(kv["height"])
			}
			video = true
		case kind == "stream" && kv["codec_type"] == "audio":
			if !src.Audio {
				src.SampleRate, src.Channels = positive(kv["sample_rate"]), positive(kv["channels"])
			}
			src.Audio = true
		case kind == "stream" && kv["codec_type"] == "subtitle" && src.Reason == "":
			src.Reason = workqueue.SplitSubtitles
		case kind == "format":
			src.Duration = parseSeconds(kv["duration"])
		}
	}
	return src, video
}

// positive is s as a positive number, or 0.
func positive(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// constantRate is a video's frame rate from ffprobe's r_frame_rate (the rate its timestamps
// are a multiple of) and avg_frame_rate (its frames over its duration): the first when the two
// agree within 1%, the rate at which an encode counts the frames of a constant-rate video; 0
// when either is unknown or they differ (a variable-rate video, whose frame counts are not its
// times).
func constantRate(r, avg string) float64 {
	rr, ar := parseRate(r), parseRate(avg)
	if rr == 0 || ar == 0 || math.Abs(rr-ar) > rr/100 {
		return 0
	}
	return rr
}

// parseKeyframes reads ffprobe's "packet,PTS_TIME,FLAGS[,side_data,...]" and
// "format,START_TIME" lines: the times of the packets flagged K less the start time, sorted,
// each once. A packet without a time (N/A) cannot be cut at and is left out, and so is the
// start time when there is none.
func parseKeyframes(csv string) ([]float64, error) {
	keys, _, err := parsePackets(csv)
	return keys, err
}

// parsePackets is parseKeyframes, and the times of every packet that has one, as printed.
func parsePackets(csv string) (keys, times []float64, err error) {
	start := 0.0
	for _, line := range strings.Split(csv, "\n") {
		f := strings.Split(strings.TrimSpace(line), ",")
		switch {
		case len(f) >= 2 && f[0] == "format" && f[1] != "N/A":
			t, err := probeTime(f[1])
			if err != nil {
				return nil, nil, err
			}
			start = t
		case len(f) >= 2 && f[0] == "packet":
			t, err := probeTime(f[1])
			key := len(f) >= 3 && strings.HasPrefix(f[2], "K") && f[1] != "N/A"
			if err != nil && key {
				return nil, nil, err
			}
			if err == nil {
				times = append(times, t)
			}
			if key {
				keys = append(keys, t)
			}
		}
	}
	for i := range keys {
		keys[i] -= start
	}
	slices.Sort(keys)
	return slices.Compact(keys), times, nil
}

// probeTime reads a time ffprobe printed, which may be negative.
func probeTime(s string) (float64, error) {
	t, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(t) || math.IsInf(t, 0) {
		return 0, fmt.Errorf("time %q is not a number", s)
	}
	return t, nil
}
