package validator

import "testing"

func TestLimitsLayer(t *testing.T) {
	t.Parallel()
	in := "ffmpeg -i " + testURL + " "
	runLayerTable(t, layerLimits, []layerCase{
		{name: "compute auto", command: in + "out.mp4", opts: Options{Compute: "auto"}},
		{name: "compute unknown", command: in + "out.mp4", opts: Options{Compute: "tpu"}, wantMsg: `compute "tpu" is not one of auto, cpu, gpu`},
		{name: "cpu nvenc", command: in + "-c:v h264_nvenc out.mp4", opts: Options{Compute: "cpu"}, wantMsg: "encoder h264_nvenc needs a GPU but compute is cpu"},
		{name: "cpu hevc nvenc", command: in + "-vcodec hevc_nvenc out.mp4", opts: Options{Compute: "cpu"}, wantMsg: "encoder hevc_nvenc"},
		{name: "cpu av1 nvenc", command: in + "-c av1_nvenc out.mkv", opts: Options{Compute: "cpu"}, wantMsg: "encoder av1_nvenc"},
		{name: "cpu hwaccel", command: "ffmpeg -hwaccel cuda -i " + testURL + " out.mp4", opts: Options{Compute: "cpu"}, wantMsg: "-hwaccel cuda needs a GPU"},
		{name: "cpu cuda filter", command: in + "-vf scale_cuda=1:1 out.mp4", opts: Options{Compute: "cpu"}, wantMsg: "filter scale_cuda needs a GPU"},
		{name: "timeout 900", command: in + "out.mp4", opts: Options{Timeout: 900}},
		{name: "timeout 901", command: in + "out.mp4", opts: Options{Timeout: 901}, wantMsg: "timeout 901 is out of range"},
		{name: "timeout negative", command: in + "out.mp4", opts: Options{Timeout: -3}, wantMsg: "timeout -3"},
		{name: "inline 64KB", command: "ffmpeg -i s.srt s.vtt", opts: Options{Inputs: map[string]Input{"s.srt": {Inline: true, ContentSize: 65536}}}},
		{name: "inline over", command: "ffmpeg -i s.srt s.vtt", opts: Options{Inputs: map[string]Input{"s.srt": {Inline: true, ContentSize: 65537}}}, wantMsg: `inline input "s.srt" is 65537 bytes`},
		{name: "input name", command: in + "out.mp4", opts: Options{Inputs: map[string]Input{"../s.srt": {Inline: true}}}, wantMsg: `input name "../s.srt"`},
	})
}

func TestCompute(t *testing.T) {
	t.Parallel()
	tests := []struct {
		command, compute, want string
	}{
		{"-c:v libx264 out.mp4", "", "cpu"},
		{"-c:v libx264 out.mp4", "gpu", "gpu"},
		{"-c:v h264_nvenc out.mp4", "", "gpu"},
		{"-c:v h264_nvenc out.mp4", "auto", "gpu"},
		{"-vf scale_npp=1:1 -c:v libx264 out.mp4", "auto", "gpu"},
		{"-c:v libx264 out.mp4", "cpu", "cpu"},
	}
	for _, tt := range tests {
		t.Run(tt.compute+" "+tt.command, func(t *testing.T) {
			t.Parallel()
			r := Validate("ffmpeg -i "+testURL+" "+tt.command, Options{Compute: tt.compute})
			if !r.Valid || r.Plan.Compute != tt.want {
				t.Fatalf("compute %q for %q: %+v %v, want %s", tt.compute, tt.command, r.Plan, r.Error, tt.want)
			}
		})
	}
}

func TestResourceLimits(t *testing.T) {
	t.Parallel()
	img := Options{Inputs: map[string]Input{"img.png": {Inline: true}, "a.mp3": {Inline: true}}}
	runLayerTable(t, layerLimits, []layerCase{
		{name: "looped image bounded by -t", command: "ffmpeg -loop 1 -i img.png -c:v libx264 -t 15 -pix_fmt yuv420p out.mp4", opts: img},
		{name: "looped image bounded on the input", command: "ffmpeg -loop 1 -t 5 -i img.png out.mp4", opts: img},
		{name: "looped image with audio and -shortest", command: "ffmpeg -loop 1 -i img.png -i a.mp3 -c:a copy -shortest out.mp4", opts: img},
		{name: "looped image with frames", command: "ffmpeg -loop 1 -i img.png -frames:v 100 out.mp4", opts: img},
		{name: "looped image with vframes", command: "ffmpeg -loop 1 -i img.png -vframes 100 out.mp4", opts: img},
		{name: "looped image unbounded", command: "ffmpeg -loop 1 -i img.png out.mp4", opts: img, wantMsg: `output "out.mp4" never ends: an input never ends (-loop 1)`},
		{name: "looped image -shortest alone", command: "ffmpeg -loop 1 -i img.png -shortest out.mp4", opts: img, wantMsg: "never ends"},
		{name: "loop 0 ends", command: "ffmpeg -loop 0 -i img.png out.mp4", opts: img},
		{name: "stream_loop forever", command: "ffmpeg -stream_loop -1 -i a.mp3 out.mp3", opts: img, wantMsg: "(-stream_loop -1)"},
		{name: "stream_loop forever bounded", command: "ffmpeg -stream_loop -1 -i a.mp3 -t 60 out.mp3", opts: img},
		{name: "stream_loop 3", command: "ffmpeg -stream_loop 3 -i a.mp3 out.mp3", opts: img},
		{name: "stream_loop huge", command: "ffmpeg -stream_loop 100000 -i a.mp3 out.mp3", opts: img, wantMsg: "-stream_loop 100000 is over the maximum of 1000 repeats"},
		{name: "lavfi source without duration", command: "ffmpeg -f lavfi -i testsrc out.mp4", wantMsg: "-f lavfi source testsrc without a duration"},
		{name: "lavfi source with duration", command: "ffmpeg -f lavfi -i testsrc=duration=2:size=320x240:rate=25 out.mp4"},
		{name: "lavfi source with d", command: "ffmpeg -f lavfi -i sine=f=440:d=3 out.wav"},
		{name: "lavfi source trimmed", command: "ffmpeg -f lavfi -i mandelbrot,trim=end=3 out.mp4"},
		{name: "lavfi anullsrc shortest", command: "ffmpeg -i " + testURL + " -f lavfi -i anullsrc=r=48000:cl=stereo -c:v copy -shortest out.mp4"},
		{name: "second output unbounded", command: "ffmpeg -loop 1 -i img.png -t 5 a.mp4 b.mp4", opts: img, wantMsg: `output "b.mp4" never ends`},
		{name: "graph source unbounded", command: "ffmpeg -i " + testURL + ` -filter_complex "color=c=black:s=1280x720[bg];[bg][0:v]overlay" out.mp4`, wantMsg: "(source color in -filter_complex without a duration)"},
		{name: "graph source shortest", command: "ffmpeg -i " + testURL + ` -filter_complex "color=c=black:s=1280x720[bg];[bg][0:v]overlay=shortest=1" out.mp4`},
		{name: "graph source with duration", command: "ffmpeg -i " + testURL + ` -filter_complex "color=c=black:s=1280x720:d=5[bg];[bg][0:v]overlay" out.mp4`},
		{name: "graph source bounded output", command: "ffmpeg -i " + testURL + ` -filter_complex "color=c=black:s=1280x720[bg];[bg][0:v]overlay" -t 10 out.mp4`},
		{name: "audio graph source amix shortest", command: "ffmpeg -i " + testURL + ` -filter_complex "sine=f=440[s];[0:a][s]amix=inputs=2:duration=shortest" out.mp4`},
		{name: "audio graph source amix longest", command: "ffmpeg -i " + testURL + ` -filter_complex "sine=f=440[s];[0:a][s]amix=inputs=2" out.mp4`, wantMsg: "source sine in -filter_complex"},
		{name: "fs bounds", command: "ffmpeg -f lavfi -i testsrc -fs 10M out.mp4"},
		{name: "threads", command: "ffmpeg -i " + testURL + " -threads 8 out.mp4"},
		{name: "threads auto", command: "ffmpeg -i " + testURL + " -threads auto out.mp4"},
		{name: "threads absurd", command: "ffmpeg -i " + testURL + " -threads 100000 out.mp4", wantMsg: "-threads 100000 is over the maximum of 64 threads"},
		{name: "filter threads absurd", command: "ffmpeg -filter_complex_threads 1000 -i " + testURL + " out.mp4", wantMsg: "-filter_complex_threads 1000"},
		{name: "threads negative", command: "ffmpeg -i " + testURL + " -threads -1 out.mp4", wantMsg: `-threads "-1" is not a thread count`},
		{name: "size", command: "ffmpeg -i " + testURL + " -s 1280x720 out.mp4"},
		{name: "size abbreviation", command: "ffmpeg -i " + testURL + " -s hd720 out.mp4"},
		{name: "size absurd", command: "ffmpeg -i " + testURL + " -s 100000x100000 out.mp4", wantMsg: "-s 100000x100000 is over the maximum frame size"},
		{name: "video_size absurd", command: "ffmpeg -f rawvideo -video_size 9000x10 -i in.yuv out.mp4", wantMsg: "-video_size 9000x10"},
		{name: "rate", command: "ffmpeg -i " + testURL + " -r 30000/1001 out.mp4"},
		{name: "rate name", command: "ffmpeg -i " + testURL + " -r ntsc out.mp4"},
		{name: "rate absurd", command: "ffmpeg -i " + testURL + " -r 100000 out.mp4", wantMsg: "-r 100000 is over the maximum frame rate of 480"},
		{name: "framerate absurd", command: "ffmpeg -framerate 1000000 -i img%03d.png out.mp4", wantMsg: "-framerate 1000000"},
		{name: "rate not a rate", command: "ffmpeg -i " + testURL + " -r fast out.mp4", wantMsg: `-r "fast" is not a frame rate`},
	})
}

func TestWantsGPU(t *testing.T) {
	t.Parallel()
	tests := []struct {
		command string
		want    bool
	}{
		{"ffmpeg -i in.mp4 -c:v libx264 out.mp4", false},
		{"ffmpeg -i in.mp4 -c:v h264_nvenc -preset p4 out.mp4", true},
		{"ffmpeg -i in.mp4 -c:v:0 hevc_nvenc out.mp4", true},
		{"ffmpeg -i in.mp4 -vcodec av1_nvenc out.mkv", true},
		{"ffmpeg -c:v h264_cuvid -i in.mp4 -c:v libx264 out.mp4", true},
		{"ffmpeg -hwaccel cuda -i in.mp4 -c:v libx264 out.mp4", true},
		{"ffmpeg -hwaccel none -i in.mp4 out.mp4", false},
		{"ffmpeg -hwaccel_output_format cuda -i in.mp4 out.mp4", true},
		{"ffmpeg -i in.mp4 -vf scale_cuda=1280:720 out.mp4", true},
		{"ffmpeg -i in.mp4 -vf hwupload_cuda,scale_npp=640:360,hwdownload,format=nv12 out.mp4", true},
		{"ffmpeg -i in.mp4 -filter_complex [0:v]yadif_cuda[v] -map [v] out.mp4", true},
		{"ffmpeg -i in.mp4 -vf scale=640:-2 out.mp4", false},
		{"ffmpeg -i h264_nvenc.mp4 out.mp4", false}, // a file name, not a codec
		{"ffmpeg -metadata title=h264_nvenc -i in.mp4 out.mp4", false},
		{"ffmpeg -c:v", false},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			t.Parallel()
			args, err := split(tt.command)
			if err != nil {
				t.Fatal(err.Message)
			}
			if got := WantsGPU(args); got != tt.want {
				t.Errorf("WantsGPU(%q) = %v, want %v", args, got, tt.want)
			}
			if got := WantsGPU(append([]string{"ffmpeg"}, args...)); got != tt.want {
				t.Errorf("WantsGPU with ffmpeg first = %v, want %v", got, tt.want)
			}
			if r := Validate(tt.command, Options{}); r.Valid && (r.Plan.Compute == "gpu") != tt.want {
				t.Errorf("Validate routes %q to %s, WantsGPU says %v", tt.command, r.Plan.Compute, tt.want)
			}
		})
	}
}
