package preset

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

func bound(lo, hi float64) (*float64, *float64) { return &lo, &hi }

func integer(def int, lo, hi float64, description string) Variable {
	v := Variable{Type: Integer, Description: description, Default: json.RawMessage(fmt.Sprint(def))}
	v.Min, v.Max = bound(lo, hi)
	return v
}

func number(def string, lo, hi float64, description string) Variable {
	v := Variable{Type: Number, Description: description, Default: json.RawMessage(def)}
	v.Min, v.Max = bound(lo, hi)
	return v
}

// builtins are the presets every account sees, read-only, version 1. Each reads the input
// named in.mp4 (any media FFmpeg reads: the name is only the job's local name for it). A test
// validates every one with all its sample values, and ./integration runs each on a real clip.
var builtins = []*Preset{
	{
		Name:        "web-mp4",
		Description: "H.264/AAC MP4 for the web: scaled to height (width kept in proportion), yuv420p, moov atom first (faststart). Writes out.mp4.",
		Command:     "ffmpeg -i in.mp4 -vf scale=-2:{{height}},format=yuv420p -c:v libx264 -preset {{speed}} -crf {{crf}} -c:a aac -b:a {{audioKbps}}k -movflags +faststart out.mp4",
		Variables: map[string]Variable{
			"height":    integer(720, 144, 2160, "output height in pixels"),
			"crf":       integer(23, 16, 35, "x264 quality: lower is better and bigger"),
			"speed":     {Type: Enum, Description: "x264 preset", Default: json.RawMessage(`"veryfast"`), Values: []string{"ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow"}},
			"audioKbps": integer(128, 32, 320, "AAC bit rate in kbit/s"),
		},
	},
	{
		Name: "hls-ladder",
		Description: "HLS ladder of three H.264/AAC renditions (1080p, 720p, 480p) with a master playlist: master.m3u8, " +
			"stream_0.m3u8 to stream_2.m3u8 and their segments.",
		Command: "ffmpeg -i in.mp4 -filter_complex [0:v]split=3[a][b][c];[a]scale=-2:1080[v0];[b]scale=-2:720[v1];[c]scale=-2:480[v2] " +
			"-map [v0] -map 0:a -map [v1] -map 0:a -map [v2] -map 0:a -c:v libx264 -preset veryfast -crf {{crf}} -pix_fmt yuv420p " +
			"-g {{gop}} -c:a aac -b:a 128k -f hls -hls_time {{segment}} -hls_playlist_type vod " +
			"-hls_segment_filename stream_%v_%03d.ts -master_pl_name master.m3u8 -var_stream_map 'v:0,a:0 v:1,a:1 v:2,a:2' stream_%v.m3u8",
		Variables: map[string]Variable{
			"crf":     integer(23, 16, 35, "x264 quality of every rendition"),
			"segment": integer(6, 2, 12, "target segment length in seconds"),
			"gop":     integer(48, 12, 300, "key frame interval in frames: segments start on key frames"),
		},
	},
	{
		Name: "thumbnail-sprite",
		Description: "A sprite of thumbnails, one every interval seconds, columns×rows of width×height pixels, as sprite.jpg. " +
			"Its WebVTT index (sprite.vtt, cues mapping time ranges to sprite.jpg#xywh=...) is written by the control plane " +
			"from the same values: see SpriteIndex.",
		Command: "ffmpeg -i in.mp4 -vf fps=1/{{interval}},scale={{width}}:{{height}},tile={{columns}}x{{rows}} -frames:v 1 -q:v 3 sprite.jpg",
		Variables: map[string]Variable{
			"interval": integer(10, 1, 600, "seconds between thumbnails"),
			"width":    integer(160, 32, 640, "thumbnail width in pixels"),
			"height":   integer(90, 18, 360, "thumbnail height in pixels"),
			"columns":  integer(5, 1, 20, "thumbnails per row"),
			"rows":     integer(5, 1, 20, "rows"),
		},
	},
	{
		Name: "loudness-r128",
		Description: "EBU R128 loudness normalisation in two passes: step 1 measures (loudnorm, -f null -), step 2 applies loudnorm " +
			"with the measured values ({{measured.*}}, filled in by the runner) in linear mode. Writes out.m4a (AAC).",
		Steps: []string{
			"ffmpeg -i in.mp4 -vn -af loudnorm=I={{target}}:TP={{truePeak}}:LRA={{range}}:print_format=json -f null -",
			"ffmpeg -i in.mp4 -vn -af loudnorm=I={{target}}:TP={{truePeak}}:LRA={{range}}:measured_I={{measured.input_i}}:measured_TP={{measured.input_tp}}:measured_LRA={{measured.input_lra}}:measured_thresh={{measured.input_thresh}}:offset={{measured.target_offset}}:linear=true,aresample=48000 -c:a aac -b:a 192k out.m4a",
		},
		Variables: map[string]Variable{
			"target":   number("-23", -70, -5, "integrated loudness target in LUFS (EBU R128: -23)"),
			"truePeak": number("-1", -9, 0, "maximum true peak in dBTP"),
			"range":    number("7", 1, 20, "loudness range target in LU"),
		},
	},
	{
		Name:        "gif-preview",
		Description: "An animated GIF preview of the first duration seconds, fps frames a second, width pixels wide, with a palette made for it (palettegen and paletteuse in one graph). Writes preview.gif.",
		Command:     "ffmpeg -t {{duration}} -i in.mp4 -filter_complex fps={{fps}},scale={{width}}:-2:flags=lanczos,split[a][b];[a]palettegen[p];[b][p]paletteuse -loop 0 preview.gif",
		Variables: map[string]Variable{
			"duration": number("5", 0.5, 30, "seconds of the input the GIF shows, from its start"),
			"fps":      integer(10, 1, 30, "frames a second"),
			"width":    integer(480, 64, 1280, "width in pixels"),
		},
	},
}

// Builtins returns copies of the built-in presets, sorted by name.
func Builtins() []*Preset {
	out := make([]*Preset, len(builtins))
	for i, b := range builtins {
		out[i] = builtinCopy(b)
	}
	slices.SortFunc(out, func(a, b *Preset) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Builtin returns a copy of the built-in preset name, or nil.
func Builtin(name string) *Preset {
	for _, b := range builtins {
		if b.Name == name {
			return builtinCopy(b)
		}
	}
	return nil
}

func builtinCopy(b *Preset) *Preset {
	p := *b
	p.Builtin, p.Version = true, 1
	p.Inputs = []string{"in.mp4"}
	return &p
}

// SpriteIndex is the WebVTT index of a thumbnail sprite: one cue per tile, in time order,
// mapping [k×interval, (k+1)×interval) to the tile's rectangle of sprite (sprite.jpg#xywh=x,y,w,h).
// FFmpeg cannot write it; the geometry is the preset's values, so the index is the same for any
// input, and its cues past the input's end point at tiles FFmpeg left black.
func SpriteIndex(sprite string, interval, width, height, columns, rows int) string {
	var b strings.Builder
	b.WriteString("WEBVTT\n")
	for k := range columns * rows {
		fmt.Fprintf(&b, "\n%s --> %s\n%s#xywh=%d,%d,%d,%d\n", vttTime(k*interval), vttTime((k+1)*interval),
			sprite, (k%columns)*width, (k/columns)*height, width, height)
	}
	return b.String()
}

func vttTime(s int) string {
	return fmt.Sprintf("%02d:%02d:%02d.000", s/3600, s/60%60, s%60)
}
