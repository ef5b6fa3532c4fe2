package validator

import (
	"math"
	"testing"
)

// TestSplitAudioShare: the audio's cost against the video's, per second, from the command's
// encoders and the input's streams; 0 wherever it cannot be told, which keeps the parts even.
func TestSplitAudioShare(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                string
		command             string
		width, height       int
		rate                float64
		sampleRate, channel int
		want                float64
	}{
		// The benchmark's command: 0.029 s a second of AAC against 0.0108 s a megapixel of
		// x264 at veryfast over 23.04 Mpx a second.
		{"aac against x264 veryfast", "ffmpeg -i in.mp4 -c:v libx264 -preset veryfast -crf 23 -c:a aac -b:a 128k out.mp4", 1280, 720, 25, 44100, 1, 0.029 / (23.04 * 0.0108)},
		{"the default preset is medium", "ffmpeg -i in.mp4 -c:v libx264 -c:a aac out.mp4", 1280, 720, 25, 44100, 1, 0.029 / (23.04 * 0.0108 * 2)},
		{"stereo at 48 kHz costs more", "ffmpeg -i in.mp4 -c:v libx264 -preset veryfast -c:a aac out.mp4", 1280, 720, 25, 48000, 2, 0.029 * 96000 / 44100 / (23.04 * 0.0108)},
		{"-ac and -ar are the output's", "ffmpeg -i in.mp4 -c:v libx264 -preset veryfast -c:a aac -ac 1 -ar 44100 out.mp4", 1280, 720, 25, 48000, 2, 0.029 / (23.04 * 0.0108)},
		{"mp4's default audio encoder is AAC", "ffmpeg -i in.mp4 -c:v libx264 -preset veryfast out.mp4", 1280, 720, 25, 44100, 1, 0.029 / (23.04 * 0.0108)},
		{"opus is cheap", "ffmpeg -i in.mp4 -c:v libx264 -preset veryfast -c:a libopus out.mkv", 1280, 720, 25, 44100, 1, 0.0065 / (23.04 * 0.0108)},
		{"no audio", "ffmpeg -i in.mp4 -c:v libx264 -an out.mp4", 1280, 720, 25, 44100, 1, 0},
		{"an audio encoder not in the table", "ffmpeg -i in.mp4 -c:v libx264 -c:a libvorbis out.mkv", 1280, 720, 25, 44100, 1, 0},
		{"mkv's default audio encoder is not in the table", "ffmpeg -i in.mp4 -c:v libx264 out.mkv", 1280, 720, 25, 44100, 1, 0},
		{"a video encoder not in the table", "ffmpeg -i in.mp4 -c:v libvpx-vp9 -c:a libopus out.mkv", 1280, 720, 25, 44100, 1, 0},
		{"a preset not in the table", "ffmpeg -i in.mp4 -c:v libx264 -preset placebo -c:a aac out.mp4", 1280, 720, 25, 44100, 1, 0},
		{"the size not known", "ffmpeg -i in.mp4 -c:v libx264 -c:a aac out.mp4", 0, 0, 25, 44100, 1, 0},
		{"the rate not known", "ffmpeg -i in.mp4 -c:v libx264 -c:a aac out.mp4", 1280, 720, 0, 44100, 1, 0},
		{"the audio's samples not known", "ffmpeg -i in.mp4 -c:v libx264 -c:a aac out.mp4", 1280, 720, 25, 0, 0, 0},
		{"a tiny video is capped at 1", "ffmpeg -i in.mp4 -c:v mpeg4 -q:v 4 -c:a aac out.mp4", 16, 16, 1, 48000, 8, 1},
		{"not splittable", "ffmpeg -i in.mp4 -c:v copy -c:a aac out.mp4", 1280, 720, 25, 44100, 1, 0},
		{"a filter graph may change the size", "ffmpeg -i in.mp4 -vf scale=3840:2160 -c:v libx264 -c:a aac out.mp4", 1280, 720, 25, 44100, 1, 0},
		{"-s changes the size", "ffmpeg -i in.mp4 -s 3840x2160 -c:v libx264 -c:a aac out.mp4", 1280, 720, 25, 44100, 1, 0},
		{"a sample rate past any real one", "ffmpeg -i in.mp4 -c:v libx264 -c:a aac out.mp4", 1280, 720, 25, 1 << 62, 4, 0},
		{"a negative channel count", "ffmpeg -i in.mp4 -c:v libx264 -c:a aac out.mp4", 1280, 720, 25, -44100, -1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := Validate(tt.command, Options{})
			if r.Plan == nil {
				t.Fatalf("%q was refused: %v", tt.command, r.Error)
			}
			got := SplitAudioShare(r.Plan, tt.width, tt.height, tt.rate, tt.sampleRate, tt.channel)
			if math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("SplitAudioShare = %.4f, want %.4f", got, tt.want)
			}
		})
	}
}
