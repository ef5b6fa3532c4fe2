package validator

import (
	"slices"
	"testing"
)

// staged is Options staging the given names inline.
func staged(names ...string) Options {
	in := map[string]Input{}
	for _, n := range names {
		in[n] = Input{Inline: true}
	}
	return Options{Inputs: in}
}

func TestAnalysisCommands(t *testing.T) {
	t.Parallel()
	wav, mp4 := "ffmpeg -i in.wav ", "ffmpeg -i in.mp4 "
	opts := staged("in.wav", "in.mp4")
	tests := []struct {
		name, command string
		// outputs are the files the plan writes besides the null output.
		outputs []string
		pattern string
		// sideFiles must be among the plan's side files.
		sideFiles []string
	}{
		{name: "loudnorm first pass", command: wav + "-af loudnorm=I=-16:TP=-1.5:LRA=11:print_format=json -f null -"},
		{name: "loudnorm summary", command: wav + "-af loudnorm=print_format=summary -f null -"},
		{name: "ebur128 with true peak", command: wav + "-af ebur128=peak=true:framelog=verbose -f null -"},
		{name: "silencedetect", command: wav + "-af silencedetect=noise=-30dB:d=0.5 -f null -"},
		{name: "blackdetect", command: mp4 + "-vf blackdetect=d=0.1:pix_th=0.10 -an -f null -"},
		{name: "scene detection", command: mp4 + `-vf "select='gt(scene,0.4)',showinfo" -an -f null -`},
		{name: "scdet", command: mp4 + "-vf scdet=threshold=10 -an -f null -"},
		{name: "astats and volumedetect", command: wav + "-af astats=metadata=1,volumedetect -f null -"},
		{name: "freezedetect and cropdetect", command: mp4 + "-vf freezedetect=n=-60dB:d=1,cropdetect -an -f null -"},
		{name: "bounded lavfi source", command: "ffmpeg -f lavfi -i sine=frequency=440:duration=2 -af ebur128 -f null -"},
		{name: "lavfi bounded at the null output", command: "ffmpeg -f lavfi -i anullsrc -t 3 -af silencedetect -f null -"},
		{name: "first pass", command: mp4 + "-c:v libx264 -b:v 1M -pass 1 -passlogfile p -an -f null -",
			sideFiles: []string{"p-%d.log", "p-%d.log.mbtree", "p-%d.log.cutree"}},
		{name: "first pass per stream", command: mp4 + "-c:v libx264 -b:v 1M -pass:v 1 -passlogfile:v two.pass -an -f null -",
			sideFiles: []string{"two.pass-%d.log", "two.pass-%d.log.mbtree"}},
		{name: "first pass default log", command: mp4 + "-c:v libx264 -b:v 1M -pass 1 -an -f null -",
			sideFiles: []string{"ffmpeg2pass-%d.log", "ffmpeg2pass-%d.log.mbtree"}},
		{name: "second pass", command: mp4 + "-c:v libx264 -b:v 1M -pass 2 -passlogfile p -c:a aac out.mp4",
			outputs: []string{"out.mp4"}, pattern: PatternSingle},
		{name: "second pass reads a staged log", command: "ffmpeg -i in.mp4 -c:v libvpx-vp9 -b:v 1M -pass 2 -passlogfile p out.webm",
			outputs: []string{"out.webm"}, pattern: PatternSingle},
		{name: "third pass writes its log", command: mp4 + "-c:v libx264 -b:v 1M -pass 3 -passlogfile p out.mp4",
			outputs: []string{"out.mp4"}, pattern: PatternSingle, sideFiles: []string{"p-%d.log"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := opts
			if tt.name == "second pass reads a staged log" {
				o = staged("in.mp4", "p-0.log")
			}
			r := Validate(tt.command, o)
			if !r.Valid {
				t.Fatalf("Validate(%q) refused: %s: %s", tt.command, r.Err.Layer, r.Error)
			}
			checkAccepted(t, tt.command, o, r)
			wantPattern := tt.pattern
			if wantPattern == "" {
				wantPattern = PatternData
			}
			analysis := slices.Contains(r.Args, "null")
			if r.Plan.Pattern != wantPattern || r.Plan.Analysis != analysis || !slices.Equal(r.Plan.Outputs, tt.outputs) {
				t.Fatalf("plan pattern %q analysis %v outputs %q, want %q %v %q", r.Plan.Pattern, r.Plan.Analysis, r.Plan.Outputs, wantPattern, analysis, tt.outputs)
			}
			if wantPattern == PatternData && r.InferredOutputFormat != "null" {
				t.Fatalf("inferred output format %q, want null", r.InferredOutputFormat)
			}
			for _, f := range tt.sideFiles {
				if !slices.Contains(r.Plan.SideFiles, f) {
					t.Fatalf("side files %q lack %q", r.Plan.SideFiles, f)
				}
			}
			if !slices.Contains(tt.sideFiles, "p-%d.log") && slices.Contains(r.Plan.SideFiles, "p-%d.log") {
				t.Fatalf("a command that writes no pass log has side files %q", r.Plan.SideFiles)
			}
		})
	}
}

func TestAnalysisRefusals(t *testing.T) {
	t.Parallel()
	mp4 := "ffmpeg -i in.mp4 "
	opts := staged("in.mp4")
	long := make([]byte, 240)
	for i := range long {
		long[i] = 'a'
	}
	runLayerTable(t, layerFormats, []layerCase{
		{name: "null to a file", command: mp4 + "-f null out.mp4", opts: opts, wantMsg: `-f null writes nothing: its output must be -, not "out.mp4"`},
		{name: "null to dev null", command: mp4 + "-f null /dev/null", opts: opts, wantMsg: `its output must be -, not "/dev/null"`},
		{name: "null as an input format", command: "ffmpeg -f null -i in.mp4 -f null -", opts: opts, wantMsg: `format "null" is not allowed as an input format`},
	})
	runLayerTable(t, layerPaths, []layerCase{
		{name: "standard output without null", command: mp4 + "-c copy -", opts: opts, wantMsg: `output "-" (standard output) is allowed only as -f null -`},
		{name: "standard output as mp4", command: mp4 + "-f mp4 -", opts: opts, wantMsg: `output "-" (standard output) is allowed only as -f null -`},
		{name: "passlogfile with a slash", command: mp4 + "-pass 1 -passlogfile logs/p -f null -", opts: opts, wantMsg: `-passlogfile value "logs/p" is not a bare file name`},
		{name: "passlogfile absolute", command: mp4 + "-pass 1 -passlogfile /tmp/p -f null -", opts: opts, wantMsg: `-passlogfile value "/tmp/p" is not a bare file name`},
		{name: "passlogfile dot dot", command: mp4 + "-pass 1 -passlogfile a..b -f null -", opts: opts, wantMsg: `-passlogfile value "a..b" contains ".."`},
		{name: "passlogfile parent", command: mp4 + "-pass 1 -passlogfile .. -f null -", opts: opts, wantMsg: `-passlogfile value ".." starts with '.'`},
		{name: "passlogfile protocol", command: mp4 + "-pass 1 -passlogfile file:p -f null -", opts: opts, wantMsg: `-passlogfile value "file:p" is not a bare file name`},
		{name: "passlogfile too long", command: mp4 + "-pass 1 -passlogfile " + string(long) + " -f null -", opts: opts, wantMsg: "leaving no room for the log's suffix"},
		{name: "pass log over an input", command: mp4 + "-c:v libx264 -pass 1 -passlogfile p -f null -", opts: staged("in.mp4", "p-0.log"), wantMsg: `-passlogfile log file "p-0.log" would overwrite input "p-0.log"`},
		{name: "default pass log over an input", command: mp4 + "-c:v libx264 -pass 1 -f null -", opts: staged("in.mp4", "ffmpeg2pass-0.log.mbtree"), wantMsg: `"ffmpeg2pass-0.log.mbtree" would overwrite input`},
	})
	runLayerTable(t, layerFlags, []layerCase{
		{name: "pass four", command: mp4 + "-pass 4 -f null -", opts: opts, wantMsg: `-pass "4" is not allowed: use one of 1, 2, 3`},
		{name: "pass without a value", command: mp4 + "-f null - -pass", opts: opts, wantMsg: "flag -pass needs a value"},
	})
	runLayerTable(t, layerOutputs, []layerCase{
		{name: "outputFormat with nothing written", command: mp4 + "-af volumedetect -f null -", opts: Options{Inputs: opts.Inputs, OutputFormat: "mp4"}, wantMsg: `outputFormat "mp4" does not apply: the command writes no file`},
		{name: "a file beside the measure", command: mp4 + "-c copy out.mp4 -af volumedetect -vn -f null -", opts: opts, wantMsg: `output "out.mp4" cannot be beside -f null -`},
		{name: "a file after the measure", command: mp4 + "-af volumedetect -f null - -c copy out.mp4", opts: opts, wantMsg: `output "out.mp4" cannot be beside -f null -`},
		{name: "option after the null output", command: mp4 + "-f null - -t 3", opts: opts, wantMsg: "option -t after the last output has no effect"},
	})
	runLayerTable(t, layerLimits, []layerCase{
		{name: "endless source measured", command: "ffmpeg -f lavfi -i anullsrc -af silencedetect -f null -", wantMsg: `output "-" never ends`},
	})
}
