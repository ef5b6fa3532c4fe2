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
