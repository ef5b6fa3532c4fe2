package runner

import (
	"testing"

	"github.com/mediajobs/mediajobs/validator"
)

// TestCommandDuration reads the output's length from accepted commands, planned as the runner
// gets them: the smallest bound the command gives wins, and a command that gives none (or
// leaves one output or one input unbounded) has no length.
func TestCommandDuration(t *testing.T) {
	t.Parallel()
	staged := map[string]validator.Input{
		"in.mp4": {URL: "https://example.com/in.mp4"}, "b.mp4": {URL: "https://example.com/b.mp4"},
		"subs.srt": {Inline: true, ContentSize: 10},
	}
	tests := []struct {
		name, command string
		want          float64
	}{
		{name: "lavfi d= and output -t", command: "ffmpeg -f lavfi -i testsrc=d=10:s=640x360 -t 10 out.mp4", want: 10},
		{name: "lavfi duration= alone", command: "ffmpeg -f lavfi -i testsrc=duration=7:size=320x240:rate=25 out.mp4", want: 7},
		{name: "lavfi d= in a chain", command: "ffmpeg -f lavfi -i testsrc=d=4,format=yuv420p out.mp4", want: 4},
		{name: "lavfi quoted duration", command: `ffmpeg -f lavfi -i "testsrc=d='2.5':s=64x48" out.mp4`, want: 2.5},
		{name: "endless lavfi source, output -t as a clock", command: "ffmpeg -f lavfi -i color=c=red -t 01:30 out.mp4", want: 90},
		{name: "lavfi ms duration", command: "ffmpeg -f lavfi -i testsrc=d=1500ms out.mp4", want: 1.5},
		{name: "output -t smaller than the source", command: "ffmpeg -f lavfi -i testsrc=d=10 -t 3 out.mp4", want: 3},
		{name: "source smaller than output -t", command: "ffmpeg -f lavfi -i testsrc=d=2 -t 30 out.mp4", want: 2},
		{name: "output -t alone", command: "ffmpeg -i in.mp4 -t 5 -c:v libx264 out.mp4", want: 5},
		{name: "output -t as a clock", command: "ffmpeg -i in.mp4 -t 00:02:00.5 out.mp4", want: 120.5},
		{name: "output -to less -ss", command: "ffmpeg -i in.mp4 -ss 2 -to 8 out.mp4", want: 6},
		{name: "-t beats -to", command: "ffmpeg -i in.mp4 -to 8 -t 3 out.mp4", want: 3},
		{name: "input -t", command: "ffmpeg -t 4 -i in.mp4 out.mp4", want: 4},
		{name: "input -ss on a lavfi source", command: "ffmpeg -ss 3 -f lavfi -i testsrc=d=10 out.mp4", want: 7},
		{name: "frames over the output rate", command: "ffmpeg -i in.mp4 -frames:v 50 -r 25 out.mp4", want: 2},
		{name: "vframes over the lavfi rate", command: "ffmpeg -f lavfi -i testsrc=r=10:d=60 -vframes 30 out.mp4", want: 3},
		{name: "frames over the lavfi rate=", command: "ffmpeg -f lavfi -i testsrc=rate=ntsc -frames:v 300 out.mp4", want: 300 / (30000.0 / 1001)},
		{name: "frames over an input -framerate", command: "ffmpeg -framerate 5 -i in.mp4 -frames:v 10 out.mp4", want: 2},
		{name: "frames over a fraction rate", command: "ffmpeg -i in.mp4 -frames:v 24 -r 24000/1001 out.mp4", want: 1.001},
		{name: "frames without a rate", command: "ffmpeg -i in.mp4 -frames:v 24 out.mp4", want: 0},
		{name: "frames bound below -t", command: "ffmpeg -f lavfi -i testsrc=r=25 -t 10 -frames:v 25 out.mp4", want: 1},
		{name: "an audio source's r= is no frame rate", command: "ffmpeg -f lavfi -i anullsrc=r=48000:d=5 -frames:v 10 out.mp4", want: 5},
		{name: "two lavfi inputs: the longer", command: "ffmpeg -f lavfi -i testsrc=d=3 -f lavfi -i sine=d=5 out.mp4", want: 5},
		{name: "two lavfi inputs, -shortest", command: "ffmpeg -f lavfi -i testsrc=d=3 -f lavfi -i sine=d=5 -shortest out.mp4", want: 3},
		{name: "a bounded and an unbounded input", command: "ffmpeg -f lavfi -i testsrc=d=3 -i in.mp4 out.mp4", want: 0},
		{name: "-shortest with one bounded input", command: "ffmpeg -f lavfi -i testsrc=d=3 -i in.mp4 -shortest out.mp4", want: 3},
		{name: "lavfi graph of two sources", command: `ffmpeg -f lavfi -i "testsrc=d=2[out0];sine=d=4[out1]" out.mp4`, want: 4},
		{name: "lavfi graph of a bounded and an unbounded source", command: `ffmpeg -f lavfi -i "testsrc=d=2[out0];sine[out1]" -t 9 out.mp4`, want: 9},
		{name: "two outputs: the longer", command: "ffmpeg -i in.mp4 -t 2 x.mp4 -t 5 y.mp4", want: 5},
		{name: "two outputs, one unbounded", command: "ffmpeg -i in.mp4 -t 2 x.mp4 y.mp4", want: 0},
		{name: "a staged input alone", command: "ffmpeg -i in.mp4 -vf scale=640:-2 out.mp4", want: 0},
		{name: "subtitles and an input", command: "ffmpeg -i in.mp4 -vf subtitles=subs.srt out.mp4", want: 0},
		{name: "values that look like output names", command: "ffmpeg -i in.mp4 -c:v libx264 -t 2 -metadata title=x out.mp4", want: 2},
		{name: "HLS", command: "ffmpeg -f lavfi -i testsrc=d=6 -f hls -hls_time 2 -hls_segment_filename seg_%03d.ts index.m3u8", want: 6},
		{name: "image sequence output", command: "ffmpeg -f lavfi -i testsrc=d=1:r=4 frame_%02d.png", want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := validator.Validate(tt.command, validator.Options{Inputs: staged})
			if !res.Valid {
				t.Fatalf("the validator refuses %q: %s", tt.command, res.Error)
			}
			got := commandDuration(res.Plan.Args, res.Plan.Outputs)
			if diff := got - tt.want; diff > 1e-9 || diff < -1e-9 {
				t.Errorf("commandDuration(%q) = %v s, want %v s", tt.command, got, tt.want)
			}
		})
	}
}

func TestParseTime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want float64
	}{
		{"10", 10}, {"2.5", 2.5}, {"1500ms", 1.5}, {"250000us", 0.25}, {"3s", 3},
		{"01:30", 90}, {"1:00:00", 3600}, {"00:00:01.5", 1.5},
		{"", 0}, {"-5", 0}, {"0", 0}, {"abc", 0}, {"1e3", 0}, {"inf", 0}, {"1:2:3:4", 0}, {"1.5:00", 0},
	}
	for _, tt := range tests {
		if got := parseTime(tt.in); got != tt.want {
			t.Errorf("parseTime(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestFirstLocalInput: the first staged input and what its own -ss skips, which shortens what
// the run can write of it (a split's part reads its input from its cut on).
func TestFirstLocalInput(t *testing.T) {
	t.Parallel()
	staged := map[string]bool{"in.mp4": true, "logo.png": true}
	tests := []struct {
		args []string
		name string
		seek float64
	}{
		{[]string{"-i", "in.mp4", "out.mp4"}, "in.mp4", 0},
		{[]string{"-ss", "30.000000", "-i", "in.mp4", "-an", "part.mp4"}, "in.mp4", 30},
		{[]string{"-ss", "12", "-f", "lavfi", "-i", "testsrc", "-i", "in.mp4", "out.mp4"}, "in.mp4", 0},
		{[]string{"-f", "lavfi", "-i", "testsrc", "-ss", "00:01:00", "-i", "in.mp4", "out.mp4"}, "in.mp4", 60},
		{[]string{"-f", "lavfi", "-i", "testsrc", "out.mp4"}, "", 0},
	}
	for _, tt := range tests {
		name, seek := firstLocalInput(tt.args, staged)
		if name != tt.name || seek != tt.seek {
			t.Errorf("firstLocalInput(%q) = %q, %v; want %q, %v", tt.args, name, seek, tt.name, tt.seek)
		}
	}
}
