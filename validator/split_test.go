package validator

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// splittableCorpus are the corpus commands proved splittable, by name: every other accepted
// corpus command is refused a split with a reason.
var splittableCorpus = []string{
	"x264 crf aac", "vcodec acodec mov", "profile level pix_fmt",
	"gop settings", "x264-params", "x264opts", "tune film",
	"lossless qp0", "size abbreviation", "codec long form",
	"quiet stats", "threads", "color tags", "sws flags option", "scale keep aspect",
	"scale pad letterbox", "crop", "crop half", "crop square quoted", "scale quoted expr",
	"scale flags", "hflip", "transpose", "unsharp", "eq", "grayscale hue", "drawbox",
	"drawtext default font", "drawtext staged fontfile", "drawtext font family",
	"drawtext pts expansion", "drawtext positional fontfile",
	"drawtext instance name", "subtitles staged", "subtitles force_style",
	"subtitles named filename", "subtitles quoted name", "subtitles remote staged", "ass staged",
	"lut3d positional", "lut3d named interp", "lut1d", "overlay staged logo", "setsar setdar", "pad even", "format gray", "pixel art scale",
	"filter v stream index", "instance and whitespace", "compute cpu x264", "compute gpu x264",
	"asset https", "staged url input", "output format given", "backslash escapes in shell",
	"subtitles unstaged", "drawtext fontfile unstaged", "escaped quote keeps textfile inside text",
	"lut3d unstaged",
}

func TestSplittableCorpus(t *testing.T) {
	t.Parallel()
	var got []string
	for _, c := range loadCorpus(t) {
		r := Validate(c.Command, c.Options)
		s := Splittable(r.Plan)
		if s.OK == (s.Reason != "") {
			t.Errorf("%s: Splittable = %+v, want OK or a reason, not both", c.Name, s)
		}
		if !c.Valid && s.OK {
			t.Errorf("%s: a refused command is splittable", c.Name)
		}
		if s.OK {
			got = append(got, c.Name)
			continue
		}
		t.Logf("%s: %s", c.Name, s.Reason)
	}
	if diff := cmp.Diff(splittableCorpus, got); diff != "" {
		t.Errorf("splittable corpus commands (-want +got):\n%s", diff)
	}
}

func TestSplittableReasons(t *testing.T) {
	t.Parallel()
	const in = "ffmpeg -i https://cdn.example.com/in.mp4 "
	tests := []struct{ command, reason string }{
		{in + "-vf fps=30 -c:v libx264 out.mp4", "filter fps changes which frames there are"},
		{in + "-i https://cdn.example.com/b.mp4 -c:v libx264 out.mp4", "two inputs"},
		{in + "-c:v libx264 -t 5 out.mp4", "the output's -t"},
		{in + "-c:v libx264 -to 5 out.mp4", "the output's -to"},
		{in + "-c:v libx264 -frames:v 10 out.mp4", "the output's -frames"},
		{"ffmpeg -ss 3 -i https://cdn.example.com/in.mp4 -c:v libx264 out.mp4", "the input's option -ss 3"},
		{in + "-c:v libx264 -r 30 out.mp4", "-r changes the frame rate"},
		{in + "-c:v libx264 -pass 2 out.mp4", "two-pass"},
		{in + "-c:v libx264 out.webm", `the output "out.webm" is not mp4, mkv or mov`},
		{in + "-c:v prores_ks out.mov", "the video encoder prores_ks"},
		{in + "-c copy out.mp4", "-c copy copies the video"},
		{in + "-c:v copy out.mp4", "the video is copied"},
		{in + "-vf \"drawtext=text='%{n}':x=1:y=1\" out.mp4", "drawtext's text expands the frame number"},
		{in + "-vf \"crop=100:100:n:0\" out.mp4", "filter crop reads n"},
		{in + "-vf \"drawtext=text=a:x=w-mod(n\\,w):y=1\" out.mp4", "filter drawtext reads n"},
		{in + "-vf rotate=PI/6 out.mp4", "filter rotate is not one a split is proved"},
		{in + "-c:v libx264 -force_key_frames 0,5 out.mp4", "-force_key_frames"},
		{in + "-c:v libx264 -shortest out.mp4", "-shortest"},
		{in + "-map 0 -c:v libx264 out.mkv", "-map 0 selects streams"},
		{in + "-c:v libx264 out_%03d.png", "numbered sequence"},
		{in + "-c:v libx264 -f hls index.m3u8", "a stream of files"},
		{in + "-c:v libx264 -f null -", "writes no file"},
		{"ffmpeg -copyts -i https://cdn.example.com/in.mp4 -c:v libx264 out.mp4", "the global option -copyts"},
		{in + "-q 2 out.mp4", "-q without :v or :a"},
		{in + "-map 0:a -c:v libx264 out.mp4", "-map selects the audio but not the video"},
		{in + "-vf drawtext=textfile=t.txt:x=1:y=1 out.mp4", "drawtext's textfile may expand the frame number"},
		{in + "-vf drawtext=f.ttf:hi:t.txt out.mp4", "drawtext's textfile may expand the frame number"},
		{in + "-vf \"scale=w='iw+mod(n\\,2)':h=-2:eval=frame\" out.mp4", "filter scale reads n"},
		{in + "-vf \"hue=H=2*PI*n/100\" out.mp4", "filter hue reads n"},
		{in + "-vf \"eq=gamma_r='1+n/20':eval=frame\" out.mp4", "filter eq reads n"},
		{in + "-vf \"eq=gamma_weight='random(0)':eval=frame\" out.mp4", "filter eq reads random"},
		{in + "-c:v libx264 -x264-params zones=0,40,q=45 out.mp4", `-x264-params key "zones"`},
		{in + "-c:v libx264 -x264-params frames=100 out.mp4", `-x264-params key "frames"`},
		// What does not match the single pass frame for frame.
		{in + "-c:v libx265 -crf 28 out.mp4", "libx265 places its B-frames from each part's start"},
		{in + "-c:v libvpx-vp9 -crf 33 -b:v 0 out.mkv", "libvpx-vp9 starts its rate control"},
		{in + "-c:v libsvtav1 out.mp4", "libsvtav1 closes each part's last mini-GOP"},
		{in + "-c:v libx264 -b:v 800k out.mp4", "-b:v 800k: a bitrate is met over each part"},
		{in + "-vb 1500k out.mp4", "-vb 1500k: a bitrate is met over each part"},
		{in + "-c:v libx264 -crf 23 -maxrate 2M -bufsize 4M out.mp4", "-maxrate 2M: a bitrate"},
		{in + "-c:v libx264 -x264-params bitrate=800 out.mp4", "-x264-params bitrate=800: a bitrate"},
		{in + "-c:v libx264 -x264opts vbv-maxrate=2000:vbv-bufsize=4000 out.mp4", "-x264opts vbv-maxrate=2000: a bitrate"},
		{in + "-c:v mpeg4 out.mov", "mpeg4 without -q:v aims at a bitrate"},
		{in + "-c:v libx264 -x264opts keyint=20.0 out.mp4", "-x264opts keyint=20.0 is not a whole number"},
		{"ffmpeg -i https://cdn.example.com/in.mp4 -i https://cdn.example.com/logo.png -filter_complex \"[0:v][1:v]overlay=10:10:eof_action=pass\" -c:v libx264 out.mp4", "overlay's eof_action=pass"},
		{"ffmpeg -i https://cdn.example.com/in.mp4 -i https://cdn.example.com/logo.png -filter_complex \"[0:v][1:v]overlay=10:10:pass\" -c:v libx264 out.mp4", "overlay's eof_action=pass"},
		{"ffmpeg -i https://cdn.example.com/in.mp4 -i https://cdn.example.com/logo.png -filter_complex \"[0:v][1:v]overlay=shortest=1\" -c:v libx264 out.mp4", "overlay's shortest=1"},
		{"ffmpeg -i https://cdn.example.com/in.mp4 -i https://cdn.example.com/logo.png -filter_complex \"[0:v][1:v]overlay=repeatlast=0\" -c:v libx264 out.mp4", "overlay's repeatlast=0"},
		{in + "-vf \"[in]drawtext=text=a:x=t*10:y=1[out]\" out.mp4", "names its links"},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			t.Parallel()
			r := Validate(tt.command, Options{})
			if !r.Valid {
				t.Fatalf("Validate: %s", r.Error)
			}
			s := Splittable(r.Plan)
			if s.OK || !strings.Contains(s.Reason, tt.reason) {
				t.Fatalf("Splittable = %+v, want a reason containing %q", s, tt.reason)
			}
		})
	}
	if s := Splittable(nil); s.OK || s.Reason == "" {
		t.Errorf("Splittable(nil) = %+v, want a reason", s)
	}
}

func TestSplittableAccepts(t *testing.T) {
	t.Parallel()
	const in = "ffmpeg -i https://cdn.example.com/in.mp4 "
	for _, command := range []string{
		in + "-vf drawtext=textfile=t.txt:expansion=none:x=1:y=1 out.mp4",
		in + "-vf \"drawtext=text=hi:x=10*t:y=1:enable='gte(t,2)'\" out.mp4",
		in + "-vf \"crop=100:100:'mod(t*10,50)':0\" out.mp4",
		in + "-map 0:v -map 0:a -c:v libx264 -crf 30 -c:a aac -b:a 96k out.mov",
		in + "-vf scale=640:-2,setsar=1,format=yuv420p -c:v libx264 -qp 20 -b:v 0 -b:a 128k out.mkv",
		in + "-c:v mpeg4 -q:v 3 -an out.mkv",
		in + "-c:v libx264 -x264-params keyint=48:min-keyint=48:scenecut=0 out.mp4",
		"ffmpeg -i https://cdn.example.com/in.mp4 -i https://cdn.example.com/logo.png -filter_complex \"[0:v][1:v]overlay=10:10:repeat:shortest=0:repeatlast=1\" -c:v libx264 out.mp4",
	} {
		r := Validate(command, Options{})
		if !r.Valid {
			t.Fatalf("Validate(%q): %s", command, r.Error)
		}
		if s := Splittable(r.Plan); !s.OK {
			t.Errorf("Splittable(%q) = %+v, want OK", command, s)
		}
	}
}

func TestSplitCommands(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		command string
		opts    Options
		cuts    []float64
		audio   bool
		rate    float64
		want    SplitRun
	}{
		{
			name:    "x264 with audio",
			command: "ffmpeg -hide_banner -i https://cdn.example.com/in.mp4 -vf scale=640:-2 -c:v libx264 -crf 23 -c:a aac -b:a 128k -movflags +faststart out.mp4",
			cuts:    []float64{2, 4.0333333333},
			audio:   true,
			rate:    30,
			want: SplitRun{
				Parts: [][]string{
					{"-hide_banner", "-to", "2.266667", "-i", "input_0.mp4", "-vf", "scale=640:-2", "-c:v", "libx264", "-crf", "23", "-force_key_frames", "expr:eq(n,60)", "-forced-idr", "1", "-an", "-sn", "-dn", "split_part_001.mp4"},
					{"-hide_banner", "-ss", "1.725000", "-to", "4.300000", "-i", "input_0.mp4", "-vf", "scale=640:-2", "-c:v", "libx264", "-crf", "23", "-force_key_frames", "expr:if(eq(n_forced,0),eq(n,8),gte(n,198+(n_forced-1)*250))+eq(n,69)", "-forced-idr", "1", "-an", "-sn", "-dn", "split_part_002.mp4"},
					{"-hide_banner", "-ss", "3.758333", "-i", "input_0.mp4", "-vf", "scale=640:-2", "-c:v", "libx264", "-crf", "23", "-force_key_frames", "expr:if(eq(n_forced,0),eq(n,8),gte(n,137+(n_forced-1)*250))", "-forced-idr", "1", "-an", "-sn", "-dn", "split_part_003.mp4"},
				},
				PartNames: []string{"split_part_001.mp4", "split_part_002.mp4", "split_part_003.mp4"},
				Leads:     []float64{8.0 / 30, 16.0 / 30, 8.0 / 30},
				Trims: [][]string{
					{"-hide_banner", "-i", "split_part_001.mp4", "-map", "0:v", "-c", "copy", "-frames:v", "60", "split_cut_001.mp4"},
					{"-hide_banner", "-i", "split_part_002.mp4", "-map", "0:v", "-c", "copy", "-frames:v", "69", "split_cut_002.mp4"},
				},
				Audio:     []string{"-hide_banner", "-i", "input_0.mp4", "-vn", "-sn", "-dn", "-c:a", "aac", "-b:a", "128k", "split_audio.mp4"},
				AudioName: "split_audio.mp4",
				ListName:  "split_parts.txt",
				List:      "file 'split_cut_001.mp4'\nfile 'split_cut_002.mp4'\ninpoint 0.266667\nfile 'split_part_003.mp4'\ninpoint 0.266667\n",
				Join:      []string{"-hide_banner", "-f", "concat", "-i", "split_parts.txt", "-i", "split_audio.mp4", "-map", "0:v", "-map", "1:a", "-map_metadata", "1", "-c", "copy", "-movflags", "+faststart", "out.mp4"},
			},
		},
		{
			name:    "no audio in the input, a tag on parts and join",
			command: "ffmpeg -i in.mov -c:v libx264 -tag:v avc1 out.mov",
			opts:    Options{Inputs: map[string]Input{"in.mov": {URL: "https://cdn.example.com/in.mov"}}},
			cuts:    []float64{1.5},
			rate:    24,
			want: SplitRun{
				Parts: [][]string{
					{"-to", "1.750000", "-i", "in.mov", "-c:v", "libx264", "-tag:v", "avc1", "-force_key_frames", "expr:eq(n,36)", "-forced-idr", "1", "-an", "-sn", "-dn", "split_part_001.mov"},
					{"-ss", "1.239583", "-i", "in.mov", "-c:v", "libx264", "-tag:v", "avc1", "-force_key_frames", "expr:if(eq(n_forced,0),eq(n,6),gte(n,220+(n_forced-1)*250))", "-forced-idr", "1", "-an", "-sn", "-dn", "split_part_002.mov"},
				},
				PartNames: []string{"split_part_001.mov", "split_part_002.mov"},
				Leads:     []float64{0.25, 0.25},
				Trims:     [][]string{{"-i", "split_part_001.mov", "-map", "0:v", "-c", "copy", "-frames:v", "36", "split_cut_001.mov"}},
				ListName:  "split_parts.txt",
				List:      "file 'split_cut_001.mov'\nfile 'split_part_002.mov'\ninpoint 0.250000\n",
				Join:      []string{"-f", "concat", "-i", "split_parts.txt", "-c", "copy", "-tag:v", "avc1", "out.mov"},
			},
		},
		{
			name:    "maps of the video and the audio, in either order",
			command: "ffmpeg -i https://cdn.example.com/in.mp4 -map 0:v -map 0:a? -c:v libx264 -c:a copy out.mkv",
			cuts:    []float64{4},
			audio:   true,
			rate:    25,
			want: SplitRun{
				Parts: [][]string{
					{"-to", "4.240000", "-i", "input_0.mp4", "-map", "0:v", "-c:v", "libx264", "-force_key_frames", "expr:eq(n,100)", "-forced-idr", "1", "-an", "-sn", "-dn", "split_part_001.mkv"},
					{"-ss", "3.750000", "-i", "input_0.mp4", "-map", "0:v", "-c:v", "libx264", "-force_key_frames", "expr:if(eq(n_forced,0),eq(n,6),gte(n,156+(n_forced-1)*250))", "-forced-idr", "1", "-an", "-sn", "-dn", "split_part_002.mkv"},
				},
				PartNames: []string{"split_part_001.mkv", "split_part_002.mkv"},
				Leads:     []float64{0.24, 0.24},
				Trims:     [][]string{{"-i", "split_part_001.mkv", "-map", "0:v", "-c", "copy", "-frames:v", "100", "split_cut_001.mkv"}},
				Audio:     []string{"-i", "input_0.mp4", "-vn", "-sn", "-dn", "-map", "0:a?", "-c:a", "copy", "split_audio.mkv"},
				AudioName: "split_audio.mkv",
				ListName:  "split_parts.txt",
				List:      "file 'split_cut_001.mkv'\nfile 'split_part_002.mkv'\ninpoint 0.240000\n",
				Join:      []string{"-f", "concat", "-i", "split_parts.txt", "-i", "split_audio.mkv", "-map", "0:v", "-map", "1:a", "-map_metadata", "1", "-c", "copy", "out.mkv"},
			},
		},
		{
			name:    "a map of the video alone drops the audio",
			command: "ffmpeg -i https://cdn.example.com/in.mp4 -map 0:v:0 -c:v libx264 out.mp4",
			cuts:    []float64{4},
			audio:   true,
			rate:    25,
			want: SplitRun{
				Parts: [][]string{
					{"-to", "4.240000", "-i", "input_0.mp4", "-map", "0:v:0", "-c:v", "libx264", "-force_key_frames", "expr:eq(n,100)", "-forced-idr", "1", "-an", "-sn", "-dn", "split_part_001.mp4"},
					{"-ss", "3.750000", "-i", "input_0.mp4", "-map", "0:v:0", "-c:v", "libx264", "-force_key_frames", "expr:if(eq(n_forced,0),eq(n,6),gte(n,156+(n_forced-1)*250))", "-forced-idr", "1", "-an", "-sn", "-dn", "split_part_002.mp4"},
				},
				PartNames: []string{"split_part_001.mp4", "split_part_002.mp4"},
				Leads:     []float64{0.24, 0.24},
				Trims:     [][]string{{"-i", "split_part_001.mp4", "-map", "0:v", "-c", "copy", "-frames:v", "100", "split_cut_001.mp4"}},
				ListName:  "split_parts.txt",
				List:      "file 'split_cut_001.mp4'\nfile 'split_part_002.mp4'\ninpoint 0.240000\n",
				Join:      []string{"-f", "concat", "-i", "split_parts.txt", "-c", "copy", "out.mp4"},
			},
		},
		{
			name:    "subtitles shifted to the source's time",
			command: "ffmpeg -i https://cdn.example.com/in.mp4 -vf subtitles=subs.srt -an out.mkv",
			opts:    Options{Inputs: map[string]Input{"subs.srt": {Inline: true, ContentSize: 10}}},
			cuts:    []float64{3},
			audio:   true,
			rate:    25,
			want: SplitRun{
				Parts: [][]string{
					{"-to", "3.240000", "-i", "input_0.mp4", "-vf", "subtitles=subs.srt", "-force_key_frames", "expr:eq(n,75)", "-forced-idr", "1", "-an", "-sn", "-dn", "split_part_001.mkv"},
					{"-ss", "2.750000", "-i", "input_0.mp4", "-vf", "setpts=round(PTS+2.750000/TB),subtitles=subs.srt,setpts=round(PTS-2.750000/TB)", "-force_key_frames", "expr:if(eq(n_forced,0),eq(n,6),gte(n,181+(n_forced-1)*250))", "-forced-idr", "1", "-an", "-sn", "-dn", "split_part_002.mkv"},
				},
				PartNames: []string{"split_part_001.mkv", "split_part_002.mkv"},
				Leads:     []float64{0.24, 0.24},
				Trims:     [][]string{{"-i", "split_part_001.mkv", "-map", "0:v", "-c", "copy", "-frames:v", "75", "split_cut_001.mkv"}},
				ListName:  "split_parts.txt",
				List:      "file 'split_cut_001.mkv'\nfile 'split_part_002.mkv'\ninpoint 0.240000\n",
				Join:      []string{"-f", "concat", "-i", "split_parts.txt", "-c", "copy", "out.mkv"},
			},
		},
		{
			name:    "still image overlay",
			command: "ffmpeg -i https://cdn.example.com/in.mp4 -i logo.png -filter_complex \"[0:v][1:v]overlay=10:10\" -c:v libx264 out.mp4",
			opts:    Options{Inputs: map[string]Input{"logo.png": {Inline: true, ContentSize: 10}}},
			cuts:    []float64{2},
			audio:   true,
			rate:    25,
			want: SplitRun{
				Parts: [][]string{
					{"-to", "2.240000", "-i", "input_0.mp4", "-i", "logo.png", "-filter_complex", "[0:v][1:v]overlay=10:10", "-c:v", "libx264", "-force_key_frames", "expr:eq(n,50)", "-forced-idr", "1", "-an", "-sn", "-dn", "split_part_001.mp4"},
					{"-ss", "1.750000", "-i", "input_0.mp4", "-i", "logo.png", "-filter_complex", "[0:v][1:v]overlay=10:10", "-c:v", "libx264", "-force_key_frames", "expr:if(eq(n_forced,0),eq(n,6),gte(n,206+(n_forced-1)*250))", "-forced-idr", "1", "-an", "-sn", "-dn", "split_part_002.mp4"},
				},
				PartNames: []string{"split_part_001.mp4", "split_part_002.mp4"},
				Leads:     []float64{0.24, 0.24},
				Trims:     [][]string{{"-i", "split_part_001.mp4", "-map", "0:v", "-c", "copy", "-frames:v", "50", "split_cut_001.mp4"}},
				Audio:     []string{"-i", "input_0.mp4", "-vn", "-sn", "-dn", "split_audio.mp4"},
				AudioName: "split_audio.mp4",
				ListName:  "split_parts.txt",
				List:      "file 'split_cut_001.mp4'\nfile 'split_part_002.mp4'\ninpoint 0.240000\n",
				Join:      []string{"-f", "concat", "-i", "split_parts.txt", "-i", "split_audio.mp4", "-map", "0:v", "-map", "1:a", "-map_metadata", "1", "-c", "copy", "out.mp4"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := Validate(tt.command, tt.opts)
			if !r.Valid {
				t.Fatalf("Validate: %s", r.Error)
			}
			got, err := SplitCommands(r.Plan, tt.cuts, tt.audio, tt.rate)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&tt.want, got); diff != "" {
				t.Fatalf("SplitCommands (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSplitCommandsRefusals(t *testing.T) {
	t.Parallel()
	ok := Validate("ffmpeg -i https://cdn.example.com/in.mp4 -c:v libx264 out.mp4", Options{}).Plan
	tests := []struct {
		name string
		plan *Plan
		cuts []float64
		rate float64
		want string
	}{
		{"not splittable", Validate("ffmpeg -i https://cdn.example.com/in.mp4 -c:v libx264 -t 3 out.mp4", Options{}).Plan, []float64{1}, 25, "the output's -t"},
		{"cuts out of order", ok, []float64{2, 1}, 25, "cut 1 is not a time after"},
		{"cut at zero", ok, []float64{0}, 25, "cut 0 is not a time after"},
		{"name the split writes", Validate("ffmpeg -i split_audio.mp4 -c:v libx264 out.mp4", Options{}).Plan, []float64{1}, 25, `"split_audio.mp4"`},
		{"no frame rate", ok, []float64{1}, 0, "the input's frame rate is not known"},
		{"a frame rate past the bound", ok, []float64{1}, 1001, "the input's frame rate is not known"},
		{"a frame rate that is not a number", ok, []float64{1}, math.NaN(), "the input's frame rate is not known"},
		{"a frame rate under one a second", ok, []float64{1}, 0.5, "the input's frame rate is not known"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := SplitCommands(tt.plan, tt.cuts, true, tt.rate)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("SplitCommands error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestKeyframeInterval: the whole encode's keyframe interval, which the parts follow: -g, the
// encoder's own keyint over -g, the encoder's default; none for keyint=infinite, whose parts
// need no frame rate.
func TestKeyframeInterval(t *testing.T) {
	t.Parallel()
	const in = "ffmpeg -i https://cdn.example.com/in.mp4 "
	tests := []struct {
		command string
		want    int
	}{
		{in + "out.mp4", 250},
		{in + "-c:v libx264 -crf 23 out.mp4", 250},
		{in + "-c:v libx264 -g 48 -keyint_min 48 out.mp4", 48},
		{in + "-c:v libx264 -g:v 48 out.mp4", 48},
		{in + "-c:v libx264 -g 48 -x264-params keyint=96:min-keyint=96 out.mp4", 96},
		{in + "-c:v libx264 -x264opts keyint=infinite out.mp4", 0},
		{in + "-c:v mpeg4 -q:v 3 out.mov", 12},
		{in + "-c:v mpeg4 -q:v 3 -g 30 out.mov", 30},
		{in + "-c:v libx264 -g 1 out.mp4", 1},
		{in + "-c:v libx264 -g 48.0 out.mp4", 48},
		{in + "-c:v libx264 -g 1e2 out.mp4", 100},
		{in + "-c:v libx264 -x265-params keyint=60 out.mp4", 250}, // x265's options are not x264's
	}
	for _, tt := range tests {
		r := Validate(tt.command, Options{})
		sh, reason := splitParse(r.Plan)
		if reason != "" {
			t.Fatalf("%q: %s", tt.command, reason)
		}
		if got := sh.keyframeInterval(); got != tt.want {
			t.Errorf("%q: keyframe interval %d, want %d", tt.command, got, tt.want)
		}
		// Without a grid to follow (none, or every frame a keyframe), no frame rate is needed.
		if _, err := SplitCommands(r.Plan, []float64{1}, true, 0); (err == nil) != (tt.want <= 1) {
			t.Errorf("%q without a frame rate: %v", tt.command, err)
		}
	}
}

// TestCutPoints: the parts of an x264 encode without scene-cut detection start on the whole
// encode's keyframe grid; any other starts at the input's keyframes.
func TestCutPoints(t *testing.T) {
	t.Parallel()
	keys := []float64{0, 1.333333, 2.666667}
	in := "ffmpeg -i https://cdn.example.com/in.mp4 "
	tests := []struct {
		name, command  string
		duration, rate float64
		keys, want     []float64
	}{
		{"-g 48 -sc_threshold 0", in + "-c:v libx264 -g 48 -sc_threshold 0 out.mp4", 4, 30, keys, []float64{0, 1.6, 3.2}},
		{"the container's default encoder", in + "-g 48 -sc_threshold 0 out.mkv", 4, 30, keys, []float64{0, 1.6, 3.2}},
		{"scenecut=0 in x264-params", in + "-c:v libx264 -x264-params keyint=50:scenecut=0 out.mp4", 5, 25, keys, []float64{0, 2, 4}},
		{"no-scenecut in x264opts", in + "-c:v libx264 -g 50 -x264opts no-scenecut=1 out.mp4", 4.5, 25, keys, []float64{0, 2, 4}},
		// x264 reads every spelling of the key it reads.
		{"noscenecut, no value", in + "-c:v libx264 -g 50 -x264-params noscenecut out.mp4", 4.5, 25, keys, []float64{0, 2, 4}},
		{"no_scenecut", in + "-c:v libx264 -g 50 -x264-params no_scenecut=true out.mp4", 4.5, 25, keys, []float64{0, 2, 4}},
		{"scenecut=false", in + "-c:v libx264 -g 50 -x264-params scenecut=false out.mp4", 4.5, 25, keys, []float64{0, 2, 4}},
		{"no-scenecut=0 is scene cuts on", in + "-c:v libx264 -g 50 -sc_threshold 0 -x264-params no-scenecut=0 out.mp4", 4.5, 25, keys, keys},
		{"the default keyint", in + "-c:v libx264 -sc_threshold 0 out.mp4", 25, 25, []float64{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24}, []float64{0, 10, 20}},
		{"a grid past the input's end", in + "-c:v libx264 -sc_threshold 0 out.mp4", 4, 30, keys, keys},
		{"scene cuts on", in + "-c:v libx264 -g 48 out.mp4", 4, 30, keys, keys},
		{"x264-params turn them on again", in + "-c:v libx264 -g 48 -sc_threshold 0 -x264-params scenecut=40 out.mp4", 4, 30, keys, keys},
		{"x265", in + "-c:v libx265 -g 48 -sc_threshold 0 out.mp4", 4, 30, keys, keys},
		{"every frame a keyframe", in + "-c:v libx264 -g 1 -sc_threshold 0 out.mp4", 4, 30, keys, keys},
		{"no frame rate", in + "-c:v libx264 -g 48 -sc_threshold 0 out.mp4", 4, 0, keys, keys},
		{"a video that starts late", in + "-c:v libx264 -g 48 -sc_threshold 0 out.mp4", 4, 30, []float64{0.5, 2}, []float64{0.5, 2}},
		{"not splittable", in + "-c:v libx264 -g 48 -sc_threshold 0 -t 3 out.mp4", 4, 30, keys, keys},
		{"a grid past the bound", in + "-c:v libx264 -g 2 -sc_threshold 0 out.mp4", 86400, 480, keys, keys},
		// A part would decode up to 20 s of the input before its start.
		{"keyframes too far apart", in + "-c:v libx264 -g 50 -sc_threshold 0 out.mp4", 60, 25, []float64{0, 20, 40}, []float64{0, 20, 40}},
		{"keyframes 10 s apart", in + "-c:v libx264 -g 125 -sc_threshold 0 out.mp4", 30, 25, []float64{0, 10, 20}, []float64{0, 5, 10, 15, 20, 25}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := Validate(tt.command, Options{})
			if !r.Valid {
				t.Fatalf("Validate: %s", r.Error)
			}
			if diff := cmp.Diff(tt.want, CutPoints(r.Plan, tt.keys, tt.duration, tt.rate)); diff != "" {
				t.Errorf("CutPoints (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLeadKeyframes: a part that leads in forces an IDR frame at its cut, then the whole
// encode's grid from there, counted in the part's frames, its lead-in's included.
func TestLeadKeyframes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cut, rate      float64
		gop, lead, end int
		want           string
	}{
		// The last part: an IDR frame at its cut (frame 150 of the input), then the grid
		// from the next of it, 250.
		{6, 25, 250, 12, -1, "expr:if(eq(n_forced,0),eq(n,12),gte(n,112+(n_forced-1)*250))"},
		// A middle part, to 12 s: and one at the next cut, its frame 12+150.
		{6, 25, 250, 12, 162, "expr:if(eq(n_forced,0),eq(n,12),gte(n,112+(n_forced-1)*250))+eq(n,162)"},
		{10, 25, 250, 12, 62, "expr:if(eq(n_forced,0),eq(n,12),gte(n,262+(n_forced-1)*250))+eq(n,62)"},    // a cut on the grid: the next one
		{0, 25, 250, 0, 150, "expr:eq(n,150)"},                                                            // the first part starts on the grid
		{4.004, 30000.0 / 1001, 48, 15, -1, "expr:if(eq(n_forced,0),eq(n,15),gte(n,39+(n_forced-1)*48))"}, // frame 120 at 29.97; the next is 144
		{6, 25, 0, 12, 62, "expr:eq(n,12)+eq(n,62)"},                                                      // no grid (keyint=infinite)
	}
	for _, tt := range tests {
		if got := leadKeyframes(tt.cut, tt.rate, tt.gop, tt.lead, tt.end); got != tt.want {
			t.Errorf("leadKeyframes(%v, %v, %d, %d, %d) = %s, want %s", tt.cut, tt.rate, tt.gop, tt.lead, tt.end, got, tt.want)
		}
	}
}

// TestKeyframeGrid: a part's forced keyframes are the frames of the whole encode's grid after
// the part's first, counted in the part's frames.
func TestKeyframeGrid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cut, rate float64
		gop       int
		want      string
	}{
		{6, 25, 250, "expr:gte(n,100+n_forced*250)"},              // frame 150; the grid's next is 250
		{10, 25, 250, "expr:gte(n,250+n_forced*250)"},             // on the grid: the next one
		{4.004, 30000.0 / 1001, 48, "expr:gte(n,24+n_forced*48)"}, // frame 120 at 29.97; the next is 144
		{1.333333, 30, 12, "expr:gte(n,8+n_forced*12)"},           // frame 40; the next is 48
	}
	for _, tt := range tests {
		if got := keyframeGrid(tt.cut, tt.rate, tt.gop); got != tt.want {
			t.Errorf("keyframeGrid(%v, %v, %d) = %s, want %s", tt.cut, tt.rate, tt.gop, got, tt.want)
		}
	}
}

// FuzzSplitCommands holds SplitCommands to its promise over any accepted command: it refuses or
// writes commands the validator accepts (it checks them itself), one part per cut and one more,
// every part writing a name of the list or one a trim cuts into a name of the list.
func FuzzSplitCommands(f *testing.F) {
	for _, c := range loadCorpus(f) {
		f.Add(c.Command, 1.5, 3.25, true)
	}
	f.Fuzz(func(t *testing.T, command string, a, b float64, audio bool) {
		r := Validate(command, Options{})
		if !r.Valid {
			return
		}
		run, err := SplitCommands(r.Plan, []float64{a, b}, audio, 25)
		if ok := Splittable(r.Plan).OK; !ok {
			if err == nil {
				t.Fatalf("SplitCommands(%q) split a command Splittable refuses", command)
			}
			return
		}
		if err != nil {
			if a > 0 && b > a && b < 1e9 && !strings.Contains(err.Error(), "a name the split writes") && !strings.Contains(err.Error(), "more than one chain") {
				t.Fatalf("SplitCommands(%q, %v, %v): %v", command, a, b, err)
			}
			return
		}
		if len(run.Parts) != 3 || len(run.PartNames) != 3 {
			t.Fatalf("SplitCommands(%q) wrote %d parts for 2 cuts", command, len(run.Parts))
		}
		// A part's file is listed, or cut by a trim whose file is.
		trimmed := map[string]string{}
		for _, tr := range run.Trims {
			if i := slices.Index(tr, "-i"); i >= 0 && i+1 < len(tr) {
				trimmed[tr[i+1]] = tr[len(tr)-1]
			}
		}
		for i, p := range run.Parts {
			joined := run.PartNames[i]
			if cut, ok := trimmed[joined]; ok {
				joined = cut
			}
			if p[len(p)-1] != run.PartNames[i] || !strings.Contains(run.List, "'"+joined+"'") {
				t.Fatalf("part %d writes %q, not its listed name", i, p[len(p)-1])
			}
		}
		if len(run.Leads) != len(run.Parts) || len(trimmed) != len(run.Trims) || len(run.Trims) > len(run.Parts)-1 {
			t.Fatalf("%d leads and %d trims of %d parts", len(run.Leads), len(run.Trims), len(run.Parts))
		}
		if !slices.Equal(run.Join[len(run.Join)-1:], r.Plan.Outputs) {
			t.Fatalf("the join writes %q, not the command's output %q", run.Join[len(run.Join)-1], r.Plan.Outputs)
		}
	})
}

// TestSplitCommandsWithoutTrims: for a runner that runs no trims, the parts lead in but end at
// their cut, and the list names their own files.
func TestSplitCommandsWithoutTrims(t *testing.T) {
	t.Parallel()
	r := Validate("ffmpeg -i https://cdn.example.com/in.mp4 -c:v libx264 -crf 23 out.mp4", Options{})
	run, err := SplitCommandsWithoutTrims(r.Plan, []float64{2, 4}, false, 30)
	if err != nil {
		t.Fatal(err)
	}
	want := &SplitRun{
		Parts: [][]string{
			{"-to", "2.000000", "-i", "input_0.mp4", "-c:v", "libx264", "-crf", "23", "-an", "-sn", "-dn", "split_part_001.mp4"},
			{"-ss", "1.725000", "-to", "4.000000", "-i", "input_0.mp4", "-c:v", "libx264", "-crf", "23", "-force_key_frames", "expr:if(eq(n_forced,0),eq(n,8),gte(n,198+(n_forced-1)*250))", "-forced-idr", "1", "-an", "-sn", "-dn", "split_part_002.mp4"},
			{"-ss", "3.725000", "-i", "input_0.mp4", "-c:v", "libx264", "-crf", "23", "-force_key_frames", "expr:if(eq(n_forced,0),eq(n,8),gte(n,138+(n_forced-1)*250))", "-forced-idr", "1", "-an", "-sn", "-dn", "split_part_003.mp4"},
		},
		PartNames: []string{"split_part_001.mp4", "split_part_002.mp4", "split_part_003.mp4"},
		Leads:     []float64{0, 8.0 / 30, 8.0 / 30},
		ListName:  "split_parts.txt",
		List:      "file 'split_part_001.mp4'\nfile 'split_part_002.mp4'\ninpoint 0.266667\nfile 'split_part_003.mp4'\ninpoint 0.266667\n",
		Join:      []string{"-f", "concat", "-i", "split_parts.txt", "-c", "copy", "out.mp4"},
	}
	if diff := cmp.Diff(want, run); diff != "" {
		t.Errorf("SplitCommandsWithoutTrims (-want +got):\n%s", diff)
	}
}
