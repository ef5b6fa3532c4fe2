package validator

import "strings"

// Layer 2: the flag allowlist. FFmpeg accepts hundreds of options, and every codec, muxer and
// protocol adds private ones; some read or write files (-filter_script, -passlogfile, -report,
// -hls_key_info_file, "-/opt" values loaded from a file), some open the network (-listen,
// -http_proxy, -sdp_file). Only the flags below are accepted; anything else is rejected by name.
// Each flag says whether it takes a value, whether it accepts a stream specifier (-c:v:0), and how
// its value is checked (most values are plain numbers or names FFmpeg itself validates and can
// never name a file, so they are passed through).

const layerFlags = "flags"

type valueKind uint8

const (
	vNone        valueKind = iota // a switch, takes no value
	vAny                          // a value FFmpeg parses that cannot name a file
	vCodec                        // an encoder or decoder name
	vInput                        // -i: layer 3
	vFormat                       // -f: layer 4, checked when the file it applies to is known
	vSegFormat                    // -segment_format: layer 4
	vGraph                        // a filter graph: layer 5
	vWrite                        // a written file name, numbered patterns allowed: layer 6
	vWritePlain                   // a written file name without patterns: layer 6
	vTemplate                     // a DASH segment name template: layer 6
	vX26x                         // -x264-params, -x265-params, -x264opts
	vSafe                         // -safe: only 1
	vPatternType                  // -pattern_type: no glob
	vHwaccel                      // -hwaccel
	vHwFormat                     // -hwaccel_output_format
	vHLSSegType                   // -hls_segment_type
	vDASHSegType                  // -dash_segment_type
	vUpdate                       // -update
)

type flagSpec struct {
	kind valueKind
	// stream: accepts a stream specifier (-c:v, -b:a:1, -metadata:s:a:0).
	stream bool
	// global: applies to the whole command rather than to the next input or output.
	global bool
}

func (f *flagSpec) takesValue() bool { return f.kind != vNone }

var (
	sw       = &flagSpec{kind: vNone}
	swGlobal = &flagSpec{kind: vNone, global: true}
	val      = &flagSpec{kind: vAny}
	valS     = &flagSpec{kind: vAny, stream: true}
	valG     = &flagSpec{kind: vAny, global: true}
	codec    = &flagSpec{kind: vCodec}
	codecS   = &flagSpec{kind: vCodec, stream: true}
	graph    = &flagSpec{kind: vGraph}
	graphS   = &flagSpec{kind: vGraph, stream: true}
	graphG   = &flagSpec{kind: vGraph, global: true}
	x26x     = &flagSpec{kind: vX26x, stream: true}
)

// flagTable is the allowlist, keyed by the flag name without its dash and stream specifier.
var flagTable = map[string]*flagSpec{
	// Global.
	"y": swGlobal, "n": swGlobal, "hide_banner": swGlobal, "nostdin": swGlobal, "stats": swGlobal,
	"nostats": swGlobal, "benchmark": swGlobal, "xerror": swGlobal, "copyts": swGlobal,
	"start_at_zero": swGlobal, "loglevel": valG, "v": valG, "filter_threads": valG,
	"filter_complex_threads": valG, "stats_period": valG, "max_error_rate": valG,
	"filter_complex": graphG, "lavfi": graphG,

	// Inputs and formats.
	"i": {kind: vInput}, "f": {kind: vFormat}, "safe": {kind: vSafe},
	"pattern_type": {kind: vPatternType}, "hwaccel": {kind: vHwaccel, stream: true},
	"hwaccel_output_format": {kind: vHwFormat, stream: true},
	"re":                    sw, "stream_loop": val, "loop": val, "framerate": val, "video_size": val,
	"pixel_format": val, "sample_rate": val, "channels": val, "start_number": val,
	"analyzeduration": val, "probesize": val, "thread_queue_size": val, "accurate_seek": sw,
	"noaccurate_seek": sw, "ignore_unknown": sw, "seek_timestamp": sw,
	"ss": val, "t": val, "to": val, "sseof": val, "itsoffset": val, "itsscale": valS,
	"fflags": val, "avoid_negative_ts": val, "fs": val, "shortest": sw,
	"max_muxing_queue_size": valS, "muxdelay": val, "muxpreload": val,

	// Codecs and streams.
	"c": codecS, "codec": codecS, "vcodec": codec, "acodec": codec, "scodec": codec,
	"vf": graph, "af": graph, "filter": graphS,
	"map": val, "map_metadata": valS, "map_chapters": val, "metadata": valS,
	"disposition": valS, "tag": valS, "an": sw, "vn": sw, "sn": sw, "dn": sw,
	"vframes": val, "aframes": val, "frames": valS, "r": valS, "fpsmax": valS, "s": valS,
	"aspect": valS, "pix_fmt": valS, "ar": valS, "ac": valS, "sample_fmt": valS,
	"channel_layout": valS, "ch_layout": valS, "vsync": val, "fps_mode": valS, "async": val,
	"bsf": valS, "force_key_frames": valS, "sws_flags": val, "timecode": val,
	"color_primaries": valS, "color_trc": valS, "colorspace": valS, "color_range": valS,
	"field_order": valS, "top": valS, "enc_time_base": valS, "copytb": val,

	// Encoder settings.
	"b": valS, "vb": val, "ab": val, "maxrate": valS, "minrate": valS, "bufsize": valS,
	"crf": valS, "qp": valS, "q": valS, "qscale": valS, "qmin": valS, "qmax": valS,
	"preset": valS, "tune": valS, "profile": valS, "level": valS, "tier": valS,
	"g": valS, "keyint_min": valS, "sc_threshold": valS, "bf": valS, "refs": valS,
	"threads": valS, "flags": valS, "strict": valS, "compression_level": valS,
	"x264-params": x26x, "x265-params": x26x, "x264opts": x26x, "aq-mode": valS,
	"cq": valS, "rc": valS, "b_ref_mode": valS, "gpu": valS, "rc-lookahead": valS,
	"spatial-aq": valS, "temporal-aq": valS, "spatial_aq": valS, "temporal_aq": valS,
	"multipass": valS, "cpu-used": valS, "deadline": valS, "row-mt": valS,
	"tile-columns": valS, "tile-rows": valS, "lag-in-frames": valS, "auto-alt-ref": valS,
	"vbr": valS, "application": valS, "frame_duration": valS, "cutoff": valS,
	"lossless": valS, "quality": valS, "svtav1-params": x26x,

	// Muxers.
	"movflags": val, "brand": val, "frag_duration": val, "write_tmcd": val,
	"id3v2_version": val, "write_id3v1": val, "write_xing": val, "cluster_size_limit": val,
	"hls_time": val, "hls_list_size": val, "hls_playlist_type": val, "hls_flags": val,
	"hls_segment_type": {kind: vHLSSegType}, "hls_segment_filename": {kind: vWrite},
	"hls_fmp4_init_filename": {kind: vWritePlain}, "master_pl_name": {kind: vWritePlain},
	"var_stream_map": val, "hls_init_time": val, "hls_start_number_source": val,
	"seg_duration": val, "frag_type": val, "use_template": val, "use_timeline": val,
	"init_seg_name": {kind: vTemplate}, "media_seg_name": {kind: vTemplate},
	"adaptation_sets": val, "dash_segment_type": {kind: vDASHSegType}, "window_size": val,
	"extra_window_size": val, "single_file": val, "streaming": val, "ldash": val,
	"segment_time": val, "segment_times": val, "segment_frames": val,
	"segment_format": {kind: vSegFormat}, "segment_list": {kind: vWritePlain},
	"segment_list_type": val, "segment_list_size": val, "segment_start_number": val,
	"reset_timestamps": val, "break_non_keyframes": val, "segment_wrap": val,
	"increment_tc": val, "update": {kind: vUpdate}, "frame_pts": val,
}

func flagErr(flag, value, format string, a ...any) *Error {
	return &Error{Layer: layerFlags, Flag: flag, Value: value, Message: sprintf(format, a...)}
}

// lookupFlag finds the spec of an option word ("-c:v:0") and checks its stream specifier.
func lookupFlag(word string) (*flagSpec, string, *Error) {
	name := word[1:]
	if name[0] == '/' {
		return nil, "", flagErr(word, "", "flag %s is not allowed: option values are never loaded from files", word)
	}
	base, specifier, hasSpec := strings.Cut(name, ":")
	spec := flagTable[base]
	if spec == nil {
		return nil, "", flagErr(word, "", "flag %s is not allowed", word)
	}
	if hasSpec {
		if !spec.stream {
			return nil, "", flagErr(word, "", "flag -%s does not take a stream specifier (%s)", base, word)
		}
		// An empty specifier ("-codec: copy") means every stream, as FFmpeg reads it.
		if specifier != "" && !validSpecifier(specifier) {
			return nil, "", flagErr(word, "", "flag %s has an invalid stream specifier %q", word, specifier)
		}
	}
	return spec, base, nil
}

// validSpecifier accepts the characters of FFmpeg stream specifiers (v, a:1, s:a:0, p:1:v,
// m:language:eng, #0x101, i:3, u, V) with no empty part.
func validSpecifier(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	prev := byte(':')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ':' {
			if prev == ':' {
				return false
			}
		} else if !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') && c != '#' && c != '_' && c != '-' && c != '.' {
			return false
		}
		prev = c
	}
	return prev != ':'
}

// validCodecName accepts encoder and decoder names (libx264, h264_nvenc, pcm_s16le, copy).
func validCodecName(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// x26xFileKeys are the x264, x265 and SVT-AV1 parameters whose value is a file to read or
// write (two-pass stats, quantiser and zone files, analysis dumps, CSV logs, reconstructed
// output, HDR side files).
var x26xFileKeys = map[string]bool{
	"stats": true, "qpfile": true, "cqmfile": true, "dump-yuv": true, "tcfile-in": true,
	"tcfile-out": true, "csv": true, "analysis-save": true, "analysis-load": true,
	"analysis-reuse-file": true, "zonefile": true, "dhdr10-info": true, "recon": true,
	"lambda-file": true, "scaling-list": true, "dolby-vision-rpu": true, "output": true,
	"input": true, "fgs-table": true, "hdr10plus-json": true, "stats-file": true,
	"passlogfile": true, "qp-file": true, "roi-map-file": true,
}

// checkX26xParams checks a key=value:key=value list: no key that names a file, and no value that
// could be a path.
func checkX26xParams(flag, value string) *Error {
	for _, kv := range strings.Split(value, ":") {
		key, v, _ := strings.Cut(kv, "=")
		k := strings.ToLower(strings.TrimSpace(key))
		k = strings.ReplaceAll(k, "_", "-")
		if x26xFileKeys[k] {
			return flagErr(flag, value, "%s key %q names a file and is not allowed", flag, key)
		}
		if strings.ContainsAny(v, "/\\") || strings.ContainsAny(key, "/\\") {
			return flagErr(flag, value, "%s value %q looks like a path and is not allowed", flag, kv)
		}
	}
	return nil
}
