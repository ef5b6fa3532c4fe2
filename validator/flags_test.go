package validator

import (
	"strings"
	"testing"
)

func TestFlagsLayer(t *testing.T) {
	t.Parallel()
	in := "ffmpeg -i " + testURL + " "
	runLayerTable(t, layerFlags, []layerCase{
		{name: "codec with stream specifiers", command: in + "-map 0 -c:v:0 libx264 -c:a:1 aac -b:a:1 96k -q:a 2 out.mkv"},
		{name: "metadata specifier", command: in + "-metadata:s:a:0 language=eng -disposition:a:0 default out.mkv"},
		{name: "frames and filter specifiers", command: in + "-frames:v 10 -filter:v hflip -codec:a aac out.mp4"},
		{name: "empty specifier", command: in + "-codec: copy out.mkv"},
		{name: "global flag after output", command: in + "out.mp4 -y"},
		{name: "value starting with dash", command: in + "-itsoffset -0.5 out.mp4"},
		{name: "x264 params", command: in + "-x264-params keyint=60:scenecut=0 out.mp4"},
		{name: "report", command: "ffmpeg -report " + in + "out.mp4", wantMsg: "flag -report is not allowed"},
		{name: "filter_script", command: in + "-filter_script graph.txt out.mp4", wantMsg: "flag -filter_script is not allowed"},
		{name: "filter_complex_script", command: in + "-filter_complex_script g out.mp4", wantMsg: "flag -filter_complex_script is not allowed"},
		{name: "file-valued option", command: in + "-/vf graph.txt out.mp4", wantMsg: "flag -/vf is not allowed"},
		{name: "protocol_whitelist", command: "ffmpeg -protocol_whitelist file " + in + "out.mp4", wantMsg: "flag -protocol_whitelist is not allowed"},
		{name: "dump_attachment", command: in + "-dump_attachment:t x out.mp4", wantMsg: "flag -dump_attachment:t"},
		{name: "attach staged font", command: in + "-attach f.ttf -metadata:s:t mimetype=font/ttf out.mkv", opts: Options{Inputs: map[string]Input{"f.ttf": {Inline: true}}}},
		{name: "everyday input flags", command: "ffmpeg -skip_frame nokey -noautorotate -i " + testURL + " -streamid 0:256 -vtag avc1 out.mp4"},
		{name: "sub_charenc", command: "ffmpeg -sub_charenc CP1252 -i s.srt out.vtt"},
		{name: "sub_charenc path", command: "ffmpeg -sub_charenc /x -i s.srt out.vtt", wantMsg: `-sub_charenc value "/x" is not allowed`},
		{name: "start_number not a number", command: "ffmpeg -start_number x -i img%03d.png out.mp4", wantMsg: `-start_number "x" is not an integer`},
		{name: "target sets formats", command: in + "-target pal-dvd out.mpg", wantMsg: "flag -target is not allowed"},
		{name: "listen", command: "ffmpeg -listen 1 " + in + "out.mp4", wantMsg: "flag -listen"},
		{name: "http_proxy", command: "ffmpeg -http_proxy x " + in + "out.mp4", wantMsg: "flag -http_proxy"},
		{name: "sdp_file", command: in + "-sdp_file x out.mp4", wantMsg: "flag -sdp_file"},
		{name: "vstats_file", command: in + "-vstats_file x out.mp4", wantMsg: "flag -vstats_file"},
		{name: "progress", command: "ffmpeg -progress p.txt " + in + "out.mp4", wantMsg: "flag -progress"},
		{name: "stats fmt", command: in + "-stats_mux_pre_fmt x out.mp4", wantMsg: "flag -stats_mux_pre_fmt"},
		{name: "double dash", command: in + "--report out.mp4", wantMsg: "flag --report"},
		{name: "specifier on switch", command: "ffmpeg -y:v " + in + "out.mp4", wantMsg: "does not take a stream specifier"},
		{name: "bad specifier", command: in + "-c:v/x libx264 out.mp4", wantMsg: "invalid stream specifier"},
		{name: "missing value", command: in + "out.mp4 -metadata", wantMsg: "flag -metadata needs a value"},
		{name: "codec name", command: in + "-c:v 'lib x264' out.mp4", wantMsg: "is not a codec name"},
		{name: "x264 stats", command: in + "-x264-params stats=x.log out.mp4", wantMsg: `-x264-params key "stats" names a file`},
		{name: "x265 path value", command: in + "-x265-params master-display=/x out.mp4", wantMsg: "looks like a path"},
		// FFmpeg takes the quotes off: x264 would dump its reconstructed frames to out.yuv.
		{name: "x264 quoted file key", command: in + `-x264-params "'dump-yuv'=out.yuv" out.mp4`, wantMsg: "quotes or escapes a key or a value"},
		{name: "x264 quoted key", command: in + `-x264-params "'bitrate'=800" out.mp4`, wantMsg: "quotes or escapes"},
		// x264 and x265 read "no<key>=0" as <key>=true: frames dumped to a file named true.
		{name: "x264 negated file key", command: in + "-x264-params nodump-yuv=0 out.mp4", wantMsg: `-x264-params key "nodump-yuv" names a file`},
		{name: "x264 negated file key with a dash", command: in + "-x264opts no-dump_yuv=0 out.mp4", wantMsg: `-x264opts key "no-dump_yuv" names a file`},
		{name: "x264 negated stats", command: in + "-x264-params keyint=60:no-stats out.mp4", wantMsg: `key "no-stats" names a file`},
		{name: "x264 OpenCL kernel cache", command: in + "-x264-params opencl=1:opencl-clbin=k.bin out.mp4", wantMsg: `key "opencl-clbin" names a file`},
		{name: "x265 film grain file", command: in + "-c:v libx265 -x265-params film-grain=grain.bin out.mp4", wantMsg: `key "film-grain" names a file`},
		{name: "x265 AOM film grain file", command: in + "-c:v libx265 -x265-params aom-film-grain=g.tbl out.mp4", wantMsg: `key "aom-film-grain" names a file`},
		{name: "x265 NAL unit file", command: in + "-c:v libx265 -x265-params nalu-file=n.txt out.mp4", wantMsg: `key "nalu-file" names a file`},
		{name: "x264 CQM file", command: in + "-x264-params cqm=matrix.cfg out.mp4", wantMsg: `key "cqm" names a file`},
		{name: "x264 CQM file by a negated key", command: in + "-x264-params nocqm=0 out.mp4", wantMsg: `key "nocqm" names a file`},
		{name: "x264 CQM presets stay allowed", command: in + "-x264-params cqm=flat out.mp4"},
		{name: "x264 log file", command: in + "-x264-params log-file=x264.log out.mp4", wantMsg: `key "log-file" names a file`},
		{name: "x264 negated switches stay allowed", command: in + "-x264-params no-mbtree=1:nofast-pskip=1:no-deblock out.mp4"},
		{name: "x265 negated switches stay allowed", command: in + "-c:v libx265 -x265-params no-sao=1:no-open-gop out.mp4"},
		{name: "x265 escaped key", command: in + `-x265-params "q\pfile=x" out.mp4`, wantMsg: "quotes or escapes"},
		// The HLS muxer puts a variant's name in place of %v in every name it writes, unchecked.
		{name: "hls variants", command: in + "-map 0:v -map 0:v -c:v libx264 -f hls -var_stream_map \"v:0,name:low,agroup:aud v:1,name:high\" -hls_segment_filename %v_%03d.ts %v.m3u8"},
		{name: "hls variant name leaves the directory", command: in + "-map 0:v -c:v libx264 -f hls -var_stream_map v:0,name:/tmp/x -hls_segment_filename %v_%03d.ts %v.m3u8", wantMsg: `-var_stream_map "name:/tmp/x": the value is not a bare file name`},
		{name: "hls variant name goes up", command: in + "-map 0:v -c:v libx264 -f hls -var_stream_map v:0,name:a..x -hls_segment_filename %v_%03d.ts %v.m3u8", wantMsg: `the value contains ".."`},
		{name: "hls variant subtitle name", command: in + "-map 0:v -c:v libx264 -f hls -var_stream_map v:0,sname:../x %v.m3u8", wantMsg: `"sname:../x"`},
		{name: "hls flags by name", command: in + "-c:v libx264 -f hls -hls_flags +delete_segments+independent_segments-temp_file out.m3u8"},
		{name: "hls append_list", command: in + "-c:v libx264 -f hls -hls_flags delete_segments+append_list out.m3u8", wantMsg: "append_list and periodic_rekey are not allowed"},
		{name: "hls flags as a number", command: in + "-c:v libx264 -f hls -hls_flags 2048 out.m3u8", wantMsg: `-hls_flags "2048"`},
		{name: "hls periodic_rekey", command: in + "-c:v libx264 -f hls -hls_flags periodic_rekey out.m3u8", wantMsg: "not allowed"},
		{name: "hls flags with an empty name", command: in + "-c:v libx264 -f hls -hls_flags single_file+ out.m3u8", wantMsg: "names joined by +"},
		{name: "hls variant unknown key", command: in + "-map 0:v -c:v libx264 -f hls -var_stream_map v:0,dir:x %v.m3u8", wantMsg: `entry "dir:x" is not one of`},
		{name: "hls variant stream not a number", command: in + "-map 0:v -c:v libx264 -f hls -var_stream_map v:x %v.m3u8", wantMsg: `"v:x": v: takes a stream index`},
		{name: "hwaccel vaapi", command: "ffmpeg -hwaccel vaapi " + in + "out.mp4", wantMsg: `-hwaccel "vaapi" is not allowed`},
		{name: "update value", command: in + "-update yes out.jpg", wantMsg: `-update "yes"`},
	})
}

func TestFlagTableSize(t *testing.T) {
	t.Parallel()
	// The spec promises "about 120" allowlisted flags; the table holds the common per-codec
	// and per-muxer options too, and must stay a deliberate, reviewed list.
	if n := len(flagTable); n < 120 || n > 420 {
		t.Fatalf("flag allowlist has %d flags", n)
	}
	if len(flagDuplicates) > 0 {
		t.Errorf("flags listed in two groups: %q", flagDuplicates)
	}
	for name, spec := range flagTable {
		if strings.ContainsAny(name, ":/ ") {
			t.Errorf("flag %q must be a bare option name", name)
		}
		if spec == nil || len(flagReasons[name]) < 20 {
			t.Errorf("flag %q has no reason (%q)", name, flagReasons[name])
		}
	}
}

func TestFlagsListsTheAllowlist(t *testing.T) {
	t.Parallel()
	flags := Flags()
	if len(flags) != len(flagTable) {
		t.Fatalf("Flags() has %d flags, the allowlist %d", len(flags), len(flagTable))
	}
	grouped := 0
	for _, g := range FlagGroups() {
		grouped += len(g.Flags)
	}
	if grouped != len(flags) {
		t.Fatalf("FlagGroups() hold %d flags, Flags() %d", grouped, len(flags))
	}
	for i, f := range flags {
		if i > 0 && flags[i-1].Name >= f.Name {
			t.Fatalf("Flags() not sorted at %s, %s", flags[i-1].Name, f.Name)
		}
		if !strings.HasPrefix(f.Name, "-") || f.Reason == "" {
			t.Fatalf("flag %+v: want a dash and a reason", f)
		}
		// Every listed flag passes the flags layer, and takes a specifier only when it says so.
		word := f.Name
		if f.StreamSpecifier {
			word += ":v"
		}
		r := Validate("ffmpeg "+word+valueFor(f)+" -f lavfi -i testsrc=d=1 out.mp4", Options{})
		if r.Err != nil && r.Err.Layer == "flags" && (strings.Contains(r.Error, "flag "+word+" is not allowed") ||
			strings.Contains(r.Error, "does not take a stream specifier")) {
			t.Errorf("listed flag %s refused by the flags layer: %s", word, r.Error)
		}
	}
	if r := Validate("ffmpeg -dump_attachment:t out.mp4 -i in.mp4 out.mp4", Options{}); r.Err == nil || r.Err.Layer != "flags" {
		t.Fatalf("an unlisted flag: %+v, want refused by the flags layer", r.Err)
	}
	for _, f := range flags {
		if f.Name == "-dump_attachment" {
			t.Fatal("-dump_attachment is refused but listed")
		}
	}
}

// valueFor gives a listed flag a value word, when it takes one; other layers may refuse it.
func valueFor(f Flag) string {
	if f.TakesValue {
		return " 1"
	}
	return ""
}
