package validator

import "testing"

func TestFormatsLayer(t *testing.T) {
	t.Parallel()
	list := Options{Inputs: map[string]Input{"list.txt": {Inline: true, ContentSize: 40}}}
	var cases []layerCase
	for _, f := range []string{"v4l2", "video4linux2", "x11grab", "alsa", "pulse", "oss", "jack", "fbdev", "kmsgrab",
		"openal", "decklink", "dshow", "avfoundation", "gdigrab", "hls", "dash", "sdp", "rtsp", "rtp", "tee"} {
		cases = append(cases, layerCase{name: "input " + f, command: "ffmpeg -f " + f + " -i x out.mp4",
			wantMsg: `format "` + f + `" is not allowed as an input format`})
	}
	for _, f := range []string{"rtp", "rtp_mpegts", "rtsp", "sdp", "sap", "tee", "fifo", "fifo_test", "sdl", "sdl2",
		"xv", "opengl", "caca", "chromaprint", "image2pipe", "lavfi", "alsa", "v4l2"} {
		cases = append(cases, layerCase{name: "output " + f, command: "ffmpeg -i " + testURL + " -f " + f + " out.mp4",
			wantMsg: `format "` + f + `" is not allowed as an output format`})
	}
	cases = append(cases,
		// null writes nothing, so it is an output only as "-f null -" (TestAnalysisRefusals).
		layerCase{name: "output null", command: "ffmpeg -i " + testURL + " -f null out.mp4", wantMsg: `-f null writes nothing: its output must be -`},
		layerCase{name: "lavfi input", command: "ffmpeg -f lavfi -i testsrc=d=1 out.mp4"},
		layerCase{name: "concat staged", command: "ffmpeg -f concat -i list.txt -c copy out.mp4", opts: list},
		layerCase{name: "concat safe 1", command: "ffmpeg -f concat -safe 1 -i list.txt -c copy out.mp4", opts: list},
		layerCase{name: "concat safe 0", command: "ffmpeg -f concat -safe 0 -i list.txt out.mp4", opts: list, wantMsg: "-safe 0 is not allowed"},
		layerCase{name: "concat unstaged", command: "ffmpeg -f concat -i " + testURL + " out.mp4", wantMsg: "-f concat reads a list that must be a staged input"},
		layerCase{name: "glob", command: "ffmpeg -pattern_type glob -i '*.png' out.mp4", wantMsg: "-pattern_type glob is not allowed"},
		layerCase{name: "segment format", command: "ffmpeg -i " + testURL + " -f segment -segment_format tee s%d.ts", wantMsg: `format "tee" is not allowed as a segment format`},
		// -autorotate and -seek_timestamp take a value: the -f before them is the input's.
		layerCase{name: "input format across -autorotate", command: "ffmpeg -f dash -autorotate 1 -i " + testURL + " -c copy out.mp4", wantMsg: `format "dash" is not allowed as an input format`},
		layerCase{name: "input format across -seek_timestamp", command: "ffmpeg -f dash -seek_timestamp 1 -i " + testURL + " -c copy out.mp4", wantMsg: `format "dash" is not allowed as an input format`},
		layerCase{name: "hls segment type", command: "ffmpeg -i " + testURL + " -hls_segment_type x out.m3u8", wantMsg: `-hls_segment_type "x"`},
	)
	runLayerTable(t, layerFormats, cases)
}
