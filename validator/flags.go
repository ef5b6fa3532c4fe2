package validator

import (
	"slices"
	"strconv"
	"strings"
)

// Layer 2: the flag allowlist. FFmpeg accepts hundreds of options, and every codec, muxer and
// protocol adds private ones; some read or write files (-filter_script, -report,
// -hls_key_info_file, "-/opt" values loaded from a file), some open the network (-listen,
// -http_proxy, -sdp_file). Only the flags below are accepted; anything else is rejected by name.
// Each flag says whether it takes a value, whether it accepts a stream specifier (-c:v:0), and how
// its value is checked (most values are plain numbers or names FFmpeg itself validates and can
// never name a file, so they are passed through).

const layerFlags = "flags"

type valueKind uint8

const (
	vNone         valueKind = iota // a switch, takes no value
	vAny                           // a value FFmpeg parses that cannot name a file
	vCodec                         // an encoder or decoder name
	vInput                         // -i: layer 3
	vFormat                        // -f: layer 4, checked when the file it applies to is known
	vSegFormat                     // -segment_format: layer 4
	vGraph                         // a filter graph: layer 5
	vWrite                         // a written file name, numbered patterns allowed: layer 6
	vWritePlain                    // a written file name without patterns: layer 6
	vTemplate                      // a DASH segment name template: layer 6
	vX26x                          // -x264-params, -x265-params, -x264opts
	vSafe                          // -safe: only 1
	vPatternType                   // -pattern_type: no glob
	vHwaccel                       // -hwaccel
	vHwFormat                      // -hwaccel_output_format
	vHLSSegType                    // -hls_segment_type
	vDASHSegType                   // -dash_segment_type
	vUpdate                        // -update
	vRead                          // a file read by name: a staged input
	vName                          // a name or number that must not look like a path
	vRelURL                        // the start of URLs written into a playlist: layer 6
	vPass                          // -pass: 1, 2 or 3
	vPassLog                       // -passlogfile: a bare name prefix, its log files side files
	vVarStreamMap                  // -var_stream_map: HLS variant streams, whose names replace %v
	vHLSFlags                      // -hls_flags: names of hlsFlagNames
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

// flagGroup is a set of flags allowed for one reason, all checked the same way.
type flagGroup struct {
	why   string
	spec  *flagSpec
	names []string
}

// flagGroups is the allowlist, each flag with the reason it is safe. A flag name is the option
// without its dash and stream specifier; "no" forms (-noautorotate) are listed as they are typed.
var flagGroups = []flagGroup{
	{"global switches: logging, overwrite answers and timestamp handling; no value", swGlobal, []string{
		"y", "n", "hide_banner", "nostdin", "stats", "nostats", "benchmark", "xerror", "copyts",
		"start_at_zero", "ignore_unknown"}},
	{"log level and error tolerance: names and numbers FFmpeg parses, never a file", valG, []string{
		"loglevel", "v", "stats_period", "max_error_rate"}},
	{"filter thread counts: capped at MaxThreads by the limits layer", valG, []string{
		"filter_threads", "filter_complex_threads"}},
	{"filter graphs: every filter and option is checked by the filters and options layers", graphG, []string{
		"filter_complex", "lavfi"}},
	{"filter graphs of one output stream, checked like -filter_complex", graph, []string{"vf", "af"}},
	{"filter graph of the streams a specifier selects, checked like -filter_complex", graphS, []string{"filter"}},
	{"the input: an https URL, an uploaded asset or a bare name (inputs layer)", &flagSpec{kind: vInput}, []string{"i"}},
	{"the format of the next input or output: allowlists of the formats layer", &flagSpec{kind: vFormat}, []string{"f"}},
	{"concat demuxer mode: only safe mode (1), where list entries cannot leave the work directory", &flagSpec{kind: vSafe}, []string{"safe"}},
	{"image2 input pattern: numbered sequences only, never a glob", &flagSpec{kind: vPatternType}, []string{"pattern_type"}},
	{"hardware decoding: none or cuda, which routes the job to a GPU runner", &flagSpec{kind: vHwaccel, stream: true}, []string{"hwaccel"}},
	{"frames decoded by CUDA stay in GPU memory: cuda only", &flagSpec{kind: vHwFormat, stream: true}, []string{"hwaccel_output_format"}},
	{"which GPU decodes: a device index, never a path", &flagSpec{kind: vName, stream: true}, []string{"hwaccel_device"}},
	{"a file attached to a Matroska output (fonts): read by name, so a staged input", &flagSpec{kind: vRead}, []string{"attach"}},
	{"subtitle character set: a charset name, never a path", &flagSpec{kind: vName}, []string{"sub_charenc"}},
	{"input reading switches: rate and seeking behaviour; no value", sw, []string{
		"re", "accurate_seek", "noaccurate_seek", "noautorotate", "fix_sub_duration"}},
	{"output switches: stop at the shortest input, copy frames before the first key frame; no value", sw, []string{
		"shortest", "copyinkf"}},
	{"encoder and decoder thread count: capped at MaxThreads by the limits layer", valS, []string{"threads"}},
	{"demuxer and decoder settings of the next input: numbers and names; looping is bounded by the limits layer", val, []string{
		"stream_loop", "loop", "framerate", "video_size", "pixel_format", "sample_rate", "channels",
		"start_number", "analyzeduration", "probesize", "thread_queue_size", "readrate",
		"readrate_initial_burst", "guess_layout_max", "ignore_editlist", "use_wallclock_as_timestamps",
		"skip_initial_bytes", "fpsprobesize", "start_number_range", "seek_timestamp", "autorotate"}},
	{"decoder settings that accept a stream specifier: which frames to decode, how to handle errors", valS, []string{
		"skip_frame", "skip_loop_filter", "skip_idct", "discard", "err_detect", "flags2", "lowres",
		"display_rotation", "display_hflip", "display_vflip"}},
	{"timing and duration of a file: -t, -to, -frames and -fs also bound endless inputs", val, []string{
		"ss", "t", "to", "sseof", "itsoffset", "fs", "avoid_negative_ts", "fflags", "muxdelay",
		"muxpreload", "output_ts_offset", "max_interleave_delta", "vframes", "aframes",
		"frame_drop_threshold", "vsync", "async", "streamid",
		"shortest_buf_duration", "program", "copytb", "timecode"}},
	{"per-stream timing and buffering: numbers", valS, []string{
		"itsscale", "max_muxing_queue_size", "muxing_queue_data_threshold", "frames", "fps_mode",
		"enc_time_base", "top", "field_order"}},
	{"codecs: encoder and decoder names, GPU ones routed by the limits layer", codecS, []string{"c", "codec"}},
	{"codec shorthands of one stream type", codec, []string{"vcodec", "acodec", "scodec"}},
	{"stream selection and metadata: specifiers and text stored in the output, never a file", valS, []string{
		"map_metadata", "metadata", "disposition", "tag", "bsf", "force_key_frames"}},
	{"stream selection of the whole file", val, []string{"map", "map_chapters", "vtag", "atag"}},
	{"stream type switches: drop video, audio, subtitles or data; no value", sw, []string{"an", "vn", "sn", "dn"}},
	{"frame geometry, rate and pixel format: sizes and rates capped by the limits layer", valS, []string{
		"r", "fpsmax", "s", "aspect", "pix_fmt", "sws_flags", "bits_per_raw_sample", "canvas_size"}},
	{"audio layout and sampling: numbers and names", valS, []string{
		"ar", "ac", "sample_fmt", "channel_layout", "ch_layout", "aq", "apply_trc"}},
	{"colour description written in the stream: names", valS, []string{
		"color_primaries", "color_trc", "colorspace", "color_range", "chroma_sample_location"}},
	{"encoder rate control and quality: numbers and preset names the encoder parses", valS, []string{
		"b", "maxrate", "minrate", "bufsize", "crf", "qp", "q", "qscale", "qmin", "qmax", "qcomp",
		"qdiff", "i_qfactor", "b_qfactor", "preset", "tune", "profile", "level", "tier", "g",
		"keyint_min", "sc_threshold", "bf", "refs", "flags", "strict", "compression_level",
		"aq-mode", "aq-strength", "lossless", "quality", "speed", "trellis", "coder", "me_method",
		"me_range", "subq", "partitions", "mbd", "cmp", "subcmp", "dia_size", "psy", "psy-rd",
		"deblock", "weightp", "weightb", "8x8dct", "mixed-refs", "b-pyramid", "b_strategy", "nr",
		"fast-pskip", "chromaoffset", "nal-hrd", "forced-idr", "intra-refresh", "slices", "a53cc",
		"global_quality", "pred", "bidir_refine", "mpv_flags",
		"dc", "rc_init_occupancy"}},
	{"video bitrate shorthands", val, []string{"vb", "ab"}},
	{"key=value parameter lists of x264, x265 and SVT-AV1: file keys and path values refused", x26x, []string{
		"x264-params", "x265-params", "x264opts", "svtav1-params"}},
	{"NVENC and CUDA encoder settings: numbers and names", valS, []string{
		"cq", "rc", "b_ref_mode", "gpu", "rc-lookahead", "spatial-aq", "temporal-aq", "spatial_aq",
		"temporal_aq", "multipass", "surfaces", "delay", "zerolatency", "no-scenecut", "nonref_p",
		"strict_gop", "aud", "bluray-compat", "weighted_pred", "highbitdepth", "tf_level",
		"lookahead_level", "init_qpP", "init_qpB", "init_qpI", "2pass"}},
	{"libvpx, libaom, rav1e and libopus settings: numbers and names", valS, []string{
		"cpu-used", "deadline", "row-mt", "tile-columns", "tile-rows", "lag-in-frames",
		"auto-alt-ref", "arnr-maxframes", "arnr-strength", "arnr-type", "frame-parallel",
		"undershoot-pct", "overshoot-pct", "static-thresh", "noise-sensitivity", "max-intra-rate",
		"enable-tpl", "usage", "tiles", "vbr", "application", "frame_duration", "packet_loss", "fec",
		"mapping_family", "cutoff"}},
	{"AAC and MP3 encoder settings: numbers and names", valS, []string{
		"aac_coder", "reservoir", "joint_stereo", "abr", "dialnorm", "dmix_mode"}},
	{"FFV1 and ProRes encoder settings: numbers", valS, []string{"slicecrc", "context", "vendor", "alpha_bits"}},
	{"MP4, MOV and Matroska muxer settings: flags and numbers", val, []string{
		"movflags", "brand", "frag_duration", "frag_size", "min_frag_duration", "write_tmcd",
		"movie_timescale", "video_track_timescale", "use_editlist", "write_btrt", "skip_sidx",
		"cluster_size_limit", "cluster_time_limit", "reserve_index_space", "cues_to_front",
		"default_mode", "live", "write_crc32", "fragment_index"}},
	{"MP3, FLV and MPEG-TS muxer settings: flags and numbers", val, []string{
		"id3v2_version", "write_id3v1", "write_xing", "write_apetag", "flvflags",
		"mpegts_service_id", "mpegts_pmt_start_pid", "mpegts_start_pid", "mpegts_flags",
		"mpegts_copyts", "mpegts_m2ts_mode", "mpegts_service_type", "mpegts_transport_stream_id",
		"mpegts_original_network_id", "muxrate", "pes_payload_size", "packetsize", "write_prft"}},
	{"HLS muxer settings: numbers and flags; the names it writes are checked by the paths layer", val, []string{
		"hls_time", "hls_list_size", "hls_playlist_type",
		"hls_init_time", "hls_start_number_source", "hls_allow_cache", "hls_delete_threshold",
		"hls_segment_size"}},
	{"HLS muxer flags, by name: append_list (which reads the playlist already under the output's name and takes its segments as the muxer's own) and periodic_rekey (which reads a key file) are not among them", &flagSpec{kind: vHLSFlags}, []string{"hls_flags"}},
	{"HLS variant streams: stream indexes and names; a name replaces %v in every name the muxer writes, so each is a plain file name", &flagSpec{kind: vVarStreamMap}, []string{"var_stream_map"}},
	{"HLS base URL, written before each segment name in the playlist: a relative name only (paths layer), so a player never leaves the playlist's directory", &flagSpec{kind: vRelURL}, []string{"hls_base_url"}},
	{"HLS segment container: mpegts or fmp4", &flagSpec{kind: vHLSSegType}, []string{"hls_segment_type"}},
	{"HLS names written in the work directory: bare names, numbered patterns allowed", &flagSpec{kind: vWrite}, []string{"hls_segment_filename"}},
	{"names written in the work directory: bare names", &flagSpec{kind: vWritePlain}, []string{
		"hls_fmp4_init_filename", "master_pl_name", "segment_list"}},
	{"DASH muxer settings: numbers and flags", val, []string{
		"seg_duration", "frag_type", "use_template", "use_timeline", "adaptation_sets",
		"window_size", "extra_window_size", "single_file", "streaming", "ldash", "target_latency",
		"remove_at_exit", "index_correction"}},
	{"DASH segment names: bare names with $Number$-style templates", &flagSpec{kind: vTemplate}, []string{"init_seg_name", "media_seg_name"}},
	{"DASH segment container: auto, mp4 or webm", &flagSpec{kind: vDASHSegType}, []string{"dash_segment_type"}},
	{"segment muxer settings: times, counts and flags", val, []string{
		"segment_time", "segment_times", "segment_frames", "segment_list_type", "segment_list_size",
		"segment_start_number", "reset_timestamps", "break_non_keyframes", "segment_wrap",
		"increment_tc", "segment_atclocktime", "segment_clocktime_offset", "segment_list_flags",
		"initial_offset", "write_empty_segments", "segment_time_delta", "frame_pts"}},
	{"segment container: a single-file muxer of the formats layer", &flagSpec{kind: vSegFormat}, []string{"segment_format"}},
	{"image2 muxer: write one image over and over (1) or a sequence (0)", &flagSpec{kind: vUpdate}, []string{"update"}},
	{"two-pass encoding: which pass (1, 2 or 3); passes 1 and 3 write the pass log in the work directory", &flagSpec{kind: vPass, stream: true}, []string{"pass"}},
	{"two-pass log prefix: a bare name (paths layer); the files FFmpeg writes from it (NAME-0.log, NAME-0.log.mbtree) are side files", &flagSpec{kind: vPassLog, stream: true}, []string{"passlogfile"}},
}

// flagTable and flagReasons are flagGroups by flag name; flagDuplicates lists names given in
// two groups (a test keeps it empty).
var flagTable, flagReasons, flagDuplicates = buildFlagTable(flagGroups)

// flagIndex is flagTable for lookups.
var flagIndex = newStrTable(flagTable)

func buildFlagTable(groups []flagGroup) (map[string]*flagSpec, map[string]string, []string) {
	table := map[string]*flagSpec{}
	reasons := map[string]string{}
	var dups []string
	for _, g := range groups {
		for _, name := range g.names {
			if _, ok := table[name]; ok {
				dups = append(dups, name)
			}
			table[name] = g.spec
			reasons[name] = g.why
		}
	}
	return table, reasons, dups
}

func flagErr(flag, value, format string, a ...any) *Error {
	return newError(layerFlags, flag, value, format, a...)
}

// lookupFlag finds the spec of an option word ("-c:v:0") and checks its stream specifier.
func lookupFlag(word string) (*flagSpec, string, *Error) {
	name := word[1:]
	if name[0] == '/' {
		return nil, "", flagErr(word, "", "flag %s is not allowed: option values are never loaded from files", word)
	}
	base, specifier, hasSpec := strings.Cut(name, ":")
	spec := flagIndex.get(base)
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

// validName accepts device indexes and charset names (0, cuda, UTF-8, ISO-8859-1, CP1252).
func validName(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') && c != '_' && c != '-' && c != '.' {
			return false
		}
	}
	return true
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

// varStreamKeys are the keys of an HLS -var_stream_map entry, as the muxer reads them
// (parse_variant_stream_mapinfo): stream indexes of the input, and names.
var varStreamKeys = map[string]bool{
	"v": true, "a": true, "s": true, "name": true, "sname": true, "agroup": true, "sgroup": true,
	"ccgroup": true, "language": true, "default": true,
}

// hlsFlagNames are the HLS muxer's flags a job may set: all of FFmpeg 5.1's but append_list,
// which reads a playlist already under the output's name (and delete_segments would then delete
// the files it lists), and periodic_rekey, which reads a key file.
var hlsFlagNames = map[string]bool{
	"single_file": true, "temp_file": true, "delete_segments": true, "round_durations": true,
	"discont_start": true, "omit_endlist": true, "split_by_time": true, "program_date_time": true,
	"second_level_segment_index": true, "second_level_segment_duration": true,
	"second_level_segment_size": true, "independent_segments": true, "iframes_only": true,
}

// checkVarStreamMap checks an HLS -var_stream_map: entries apart by spaces or tabs, each a
// comma-separated list of key:value. The muxer puts a name: (or, in later FFmpeg, an sname:)
// into every playlist, segment and init file name in place of %v, unchecked, so name:../x or
// name:/tmp/x would write outside the job's directory; every name is a plain file name, as
// the names the paths layer checks are, and a stream index is a number.
func checkVarStreamMap(flag, value string) *Error {
	for _, entry := range strings.FieldsFunc(value, func(r rune) bool { return r == ' ' || r == '\t' }) {
		for _, kv := range strings.Split(entry, ",") {
			key, v, ok := strings.Cut(kv, ":")
			switch {
			case !ok || !varStreamKeys[key]:
				return flagErr(flag, value, "%s entry %q is not one of v:, a:, s:, name:, sname:, agroup:, sgroup:, ccgroup:, language: or default:", flag, kv)
			case key == "v" || key == "a" || key == "s":
				if _, err := strconv.ParseUint(v, 10, 16); err != nil {
					return flagErr(flag, value, "%s %q: %s: takes a stream index", flag, kv, key)
				}
			default:
				if why := checkName(v, namePlain); why != "" {
					return flagErr(flag, value, "%s %q: the value %s", flag, kv, why)
				}
			}
		}
	}
	return nil
}

// x26xFileKeys are the x264, x265 and SVT-AV1 parameters whose value is a file to read or
// write (two-pass stats, quantiser and zone files, analysis dumps, CSV logs, reconstructed
// output, HDR side files, film grain tables, x264's OpenCL kernel cache, x265's NAL unit file).
var x26xFileKeys = map[string]bool{
	"stats": true, "qpfile": true, "cqmfile": true, "dump-yuv": true, "tcfile-in": true,
	"tcfile-out": true, "csv": true, "analysis-save": true, "analysis-load": true,
	"analysis-reuse-file": true, "zonefile": true, "dhdr10-info": true, "recon": true,
	"lambda-file": true, "scaling-list": true, "dolby-vision-rpu": true, "output": true,
	"input": true, "fgs-table": true, "hdr10plus-json": true, "stats-file": true,
	"passlogfile": true, "qp-file": true, "roi-map-file": true, "opencl-clbin": true,
	"film-grain": true, "aom-film-grain": true, "nalu-file": true, "log-file": true,
}

// x26xPresetOrFile are the keys whose value is a preset's name or else a file to read: x264's
// cqm is flat, jvt, or a CQM file.
var x26xPresetOrFile = map[string][]string{"cqm": {"flat", "jvt"}}

// x26xKey is a parameter's name as x264's and x265's parsers read it: underscores are dashes,
// and a "no" or "no-" before a name is that name with its value turned to "true" or "false",
// so "nodump-yuv=0" is dump-yuv=true, frames dumped to a file named true. (Lowercased, so that
// the check errs towards refusing.)
func x26xKey(key string) (name, negated string) {
	name = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(key)), "_", "-")
	if rest, ok := strings.CutPrefix(name, "no"); ok {
		negated = strings.TrimPrefix(rest, "-")
	}
	return name, negated
}

// checkX26xParams checks a key=value:key=value list: no key that names a file, and no value that
// could be a path. FFmpeg reads the list with av_get_token, which takes quotes and backslashes
// off: 'dump-yuv'=out.yuv would be x264's dump-yuv. The list is checked as written, so a quote
// or a backslash anywhere in it is refused.
func checkX26xParams(flag, value string) *Error {
	if strings.ContainsAny(value, `'"\`) {
		return flagErr(flag, value, "%s %q quotes or escapes a key or a value, which FFmpeg would read otherwise than as written; write it plainly", flag, value)
	}
	for _, kv := range strings.Split(value, ":") {
		key, v, _ := strings.Cut(kv, "=")
		k, negated := x26xKey(key)
		presets, presetOrFile := x26xPresetOrFile[k]
		if x26xFileKeys[k] || x26xFileKeys[negated] || x26xPresetOrFile[negated] != nil ||
			(presetOrFile && !slices.Contains(presets, v)) {
			return flagErr(flag, value, "%s key %q names a file and is not allowed", flag, key)
		}
		if strings.ContainsAny(v, "/\\") || strings.ContainsAny(key, "/\\") {
			return flagErr(flag, value, "%s value %q looks like a path and is not allowed", flag, kv)
		}
	}
	return nil
}
