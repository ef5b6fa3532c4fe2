package validator

import (
	"bytes"
	"iter"
	"strings"
)

// Staged inputs at run time. The layers above judge a command by the names it uses; these
// rules judge the bytes the runner staged under those names, before FFmpeg opens them, so that
// a staged input is what its name says:
//
//   - Every -i of a staged file is read with the demuxer its extension names (PinDemuxers puts
//     `-f <demuxer>` before it), never by what FFmpeg would probe from its content.
//   - Files FFmpeg opens by probing anyway (files a filter reads, concat list entries, names
//     with no known extension) are sniffed (SniffList): a file holding a list that makes a
//     demuxer open further files (an HLS playlist, a concat script, a DASH manifest, an SDP
//     session, an IMF composition) is refused unless its name is that list's own.
//   - A list under its own name is checked entry by entry like a command (CheckStaged): staged
//     names only, no protocols, no absolute paths, no traversal, no option directives.
//
// They are pure functions of names and bytes, so that the runner, the API and the WASM build
// apply the same rules.

const layerStaged = "staged"

// MaxListBytes bounds a playlist or concat list the runner reads whole to check it.
const MaxListBytes = 1 << 20

// SniffLimit is the most of a staged file SniffList is given. FFmpeg's probes of these formats
// read the probe buffer as a C string, so they stop at its first NUL byte (every binary media
// file has one within its first bytes); a file with no NUL is text, and its probe reads up to
// the probe size, 5 MB by default.
const SniffLimit = 32 << 20

// ListKind is what a staged file holds that would make a demuxer open further files.
type ListKind uint8

const (
	NotList        ListKind = iota
	HLSPlaylist             // #EXTM3U: FFmpeg's hls demuxer opens every URI in it
	ConcatScript            // ffconcat version 1.0: the concat demuxer opens every `file`
	DASHManifest            // <MPD: the dash demuxer opens every segment
	SDPSession              // c=IN IP: the sdp demuxer opens RTP sockets
	IMFComposition          // <CompositionPlaylist: the imf demuxer opens every track file
)

var listNames = [...]string{
	NotList:        "media",
	HLSPlaylist:    "an HLS playlist",
	ConcatScript:   "a concat list",
	DASHManifest:   "a DASH manifest",
	SDPSession:     "an SDP session description",
	IMFComposition: "an IMF composition playlist",
}

func (k ListKind) String() string {
	if int(k) < len(listNames) {
		return listNames[k]
	}
	return "unknown"
}

// SniffList tells which list, if any, a file holds, from its first bytes (up to SniffLimit;
// the runner stops reading at the first NUL), by the signatures FFmpeg's probes match, read a
// little more broadly (a byte-order mark or blank lines before a header still count).
func SniffList(head []byte) ListKind {
	if nul := bytes.IndexByte(head, 0); nul >= 0 {
		head = head[:nul]
	}
	b := bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	b = bytes.TrimLeft(b, " \t\r\n")
	switch {
	case bytes.HasPrefix(b, []byte("#EXTM3U")):
		return HLSPlaylist
	case bytes.HasPrefix(b, []byte("ffconcat version")):
		return ConcatScript
	case containsFold(head, "<mpd"): // FFmpeg's dash probe: av_stristr
		return DASHManifest
	case bytes.Contains(head, []byte("<CompositionPlaylist")):
		return IMFComposition
	}
	for line := range bytes.Lines(head) {
		if bytes.HasPrefix(bytes.TrimPrefix(line, []byte("\r")), []byte("c=IN IP")) {
			return SDPSession
		}
	}
	return NotList
}

// containsFold reports whether b contains the lower-case ASCII word w, ignoring case.
func containsFold(b []byte, w string) bool {
	for i := 0; i+len(w) <= len(b); i++ {
		j := 0
		for j < len(w) && lowerASCII(b[i+j]) == w[j] {
			j++
		}
		if j == len(w) {
			return true
		}
	}
	return false
}

func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// demuxers name the FFmpeg demuxer that reads a staged file, by its extension. A name whose
// extension is not here is left to FFmpeg's probe, after SniffList has refused lists.
var demuxers = map[string]string{
	"mp4": "mov", "m4v": "mov", "m4a": "mov", "mov": "mov", "3gp": "mov", "3g2": "mov", "mj2": "mov",
	"mkv": "matroska", "mka": "matroska", "mks": "matroska", "webm": "matroska",
	"avi": "avi", "ts": "mpegts", "mts": "mpegts", "m2ts": "mpegts", "m2t": "mpegts",
	"mpg": "mpeg", "mpeg": "mpeg", "vob": "mpeg", "flv": "flv", "mxf": "mxf", "nut": "nut",
	"wmv": "asf", "wma": "asf", "asf": "asf", "dv": "dv",
	"mp3": "mp3", "mp2": "mp3", "wav": "wav", "flac": "flac", "aac": "aac", "ac3": "ac3",
	"eac3": "eac3", "aif": "aiff", "aiff": "aiff", "caf": "caf", "amr": "amr",
	"ogg": "ogg", "oga": "ogg", "ogv": "ogg", "opus": "ogg", "spx": "ogg",
	"gif": "gif", "png": "image2", "jpg": "image2", "jpeg": "image2", "bmp": "image2",
	"tif": "image2", "tiff": "image2", "webp": "image2",
	"srt": "srt", "vtt": "webvtt", "ass": "ass", "ssa": "ass",
	"h264": "h264", "264": "h264", "hevc": "hevc", "h265": "hevc", "265": "hevc",
	"y4m":      "yuv4mpegpipe",
	"ffconcat": "concat",
}

// demuxerIndex is demuxers for lookups.
var demuxerIndex = newStrTable(demuxers)

// listExts are the extensions under which a list may be staged, and which list each names.
// A .txt file may hold a concat list, read with -f concat; as any other text it holds no list.
var listExts = map[string]ListKind{
	"m3u8": HLSPlaylist, "m3u": HLSPlaylist, "ffconcat": ConcatScript, "txt": ConcatScript,
	"mpd": DASHManifest, "sdp": SDPSession,
}

// listExtIndex is listExts for lookups.
var listExtIndex = newStrTable(listExts)

// Demuxer is the FFmpeg demuxer that reads a file named name (a staged name or an image
// sequence pattern), or "" when its extension names none.
func Demuxer(name string) string {
	return demuxerIndex.get(stagedExt(name))
}

// IsConcatListName tells whether name may be read as a concat list: .txt or .ffconcat.
func IsConcatListName(name string) bool {
	return listExtIndex.get(stagedExt(name)) == ConcatScript
}

func stagedExt(name string) string {
	dot := strings.LastIndexByte(name, '.')
	if dot < 0 || dot == len(name)-1 || strings.ContainsAny(name[dot:], "/\\") {
		return ""
	}
	return strings.ToLower(name[dot+1:])
}

// InputRead is one -i of a planned command.
type InputRead struct {
	Index  int    // of the "-i" word in the arguments
	Name   string // its value: a staged name, a pattern, or a lavfi graph
	Format string // the -f given for it, "" when none
}

// InputReads lists the inputs of planned arguments (Plan.Args, which the validator accepted)
// with the -f that applies to each, reading the arguments as the validator's walk does.
func InputReads(args []string) []InputRead {
	var (
		reads  []InputRead
		format string
	)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' {
			format = "" // an output name: per-file options start again
			continue
		}
		spec, _, err := lookupFlag(a)
		if err != nil {
			continue
		}
		if !spec.takesValue() || i+1 >= len(args) {
			continue
		}
		i++
		switch spec.kind {
		case vFormat:
			format = args[i]
		case vInput:
			reads = append(reads, InputRead{Index: i - 1, Name: args[i], Format: format})
			format = ""
		}
	}
	return reads
}

// PinDemuxers returns args with `-f <demuxer>` before every -i that has no -f and whose name's
// extension names a demuxer (Demuxer), so that FFmpeg reads each staged input as what its
// name says rather than as what its content claims to be. args is not modified.
func PinDemuxers(args []string) []string {
	out := make([]string, 0, len(args)+4)
	next := 0
	for _, r := range InputReads(args) {
		d := Demuxer(r.Name)
		if r.Format != "" || d == "" {
			continue
		}
		out = append(out, args[next:r.Index]...)
		out = append(out, "-f", d)
		next = r.Index
	}
	return append(out, args[next:]...)
}

// StagedFile is a staged input as the runner finds it before the run.
type StagedFile struct {
	Name string
	// Content is the file's first bytes: up to SniffLimit, stopping at the first NUL, or, for a
	// file named as a list or read with -f concat, all of it up to MaxListBytes+1 (more is
	// refused).
	Content []byte
	// Concat: the command reads it with -f concat.
	Concat bool
}

// NamedAsList tells whether a staged file of this name is read whole and checked as a list.
func NamedAsList(name string) bool { return listExtIndex.get(stagedExt(name)) != NotList }

func stagedErr(name, format string, a ...any) *Error {
	return newError(layerStaged, "", name, format, a...)
}

// CheckStaged applies the rules above to one staged file; staged tells whether a name is a
// staged input of the job (the names a list may refer to).
func CheckStaged(f StagedFile, staged func(name string) bool) *Error {
	ext := stagedExt(f.Name)
	own := listExtIndex.get(ext)
	kind := SniffList(f.Content)
	switch {
	case f.Concat && own != ConcatScript:
		return stagedErr(f.Name, "input %q is read with -f concat, but a concat list must be named .txt or .ffconcat", f.Name)
	case own == DASHManifest || own == SDPSession:
		return stagedErr(f.Name, "input %q is not allowed: %s opens further files or the network", f.Name, own.String())
	case kind == DASHManifest || kind == SDPSession || kind == IMFComposition:
		return stagedErr(f.Name, "input %q holds %s, which opens further files or the network; it is not read as an input", f.Name, kind.String())
	case f.Concat || ext == "ffconcat" || own == ConcatScript && kind == ConcatScript:
		return checkListSize(f, func() *Error { return CheckConcatList(f.Name, f.Content, staged) })
	case own == HLSPlaylist:
		return checkListSize(f, func() *Error { return CheckPlaylist(f.Name, f.Content, staged) })
	case kind != NotList:
		return stagedErr(f.Name, "input %q holds %s, not what its name says; %s is read only under its own name (%s)",
			f.Name, kind.String(), kind.String(), ownNames[kind])
	}
	return nil
}

var ownNames = map[ListKind]string{HLSPlaylist: ".m3u8", ConcatScript: ".txt or .ffconcat, with -f concat"}

func checkListSize(f StagedFile, check func() *Error) *Error {
	if len(f.Content) > MaxListBytes {
		return stagedErr(f.Name, "input %q is over %d bytes, the limit for a list", f.Name, MaxListBytes)
	}
	return check()
}

// checkEntry checks one name a list refers to: a staged input of the job, by its bare name.
func checkEntry(list string, line int, entry string, staged func(string) bool) *Error {
	why := ""
	switch {
	case entry == "":
		why = "is empty"
	case entry[0] == '/' || entry[0] == '\\':
		why = "is an absolute path"
	case hasTraversal(entry):
		why = "goes up a directory (..)"
	case hasProtocol(entry):
		why = "names a protocol"
	case strings.ContainsAny(entry, "/\\"):
		why = "is not a bare file name"
	case !staged(entry):
		why = "is not a staged input of the job"
	}
	if why != "" {
		return stagedErr(list, "%s line %d: entry %q %s; a list may name only the job's staged inputs", list, line, entry, why)
	}
	return nil
}

func hasTraversal(s string) bool {
	for part := range strings.FieldsFuncSeq(s, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return true
		}
	}
	return false
}

// hasProtocol reports "scheme:" at the start, as FFmpeg's URL parser sees a protocol, or a
// protocol-nesting prefix such as "subfile,," anywhere before a colon.
func hasProtocol(s string) bool {
	colon := strings.IndexByte(s, ':')
	if colon <= 0 {
		return false
	}
	for i := 0; i < colon; i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') && c != '+' && c != '-' && c != '.' && c != ',' && c != '_' {
			return false
		}
	}
	return true
}

// concatDirectives are the concat script's directives a list may use. `option` is left out:
// it passes arbitrary demuxer options to the file it follows.
var concatDirectives = map[string]int{ // directive -> how many arguments it takes
	"ffconcat": 2, "file": 1, "duration": 1, "inpoint": 1, "outpoint": 1,
	"file_packet_meta": 2, "file_packet_metadata": 1, "stream": 0, "exact_stream_id": 1,
	"stream_meta": 2, "stream_codec": 1, "stream_extradata": 1, "chapter": 3,
}

// CheckConcatList checks a concat script (FFmpeg's concat demuxer) entry by entry: every `file`
// names a staged input, and only the directives above appear. Tokens are read as FFmpeg's
// av_get_token reads them: single quotes, and backslash escapes outside them.
func CheckConcatList(name string, content []byte, staged func(string) bool) *Error {
	if bytes.IndexByte(content, 0) >= 0 {
		return stagedErr(name, "concat list %q contains a NUL byte", name)
	}
	n := 0
	for raw := range ffmpegLines(string(content)) {
		n++
		line := strings.TrimLeft(raw, " \t\r\n")
		if line == "" || line[0] == '#' {
			continue
		}
		words, ok := concatTokens(line)
		if !ok {
			return stagedErr(name, "%s line %d: an unterminated quote", name, n)
		}
		want, known := concatDirectives[words[0]]
		if !known {
			return stagedErr(name, "%s line %d: directive %q is not allowed in a concat list", name, n, words[0])
		}
		if len(words)-1 != want {
			return stagedErr(name, "%s line %d: %s takes %d argument(s), not %d", name, n, words[0], want, len(words)-1)
		}
		switch words[0] {
		case "ffconcat":
			if words[1] != "version" || (words[2] != "1.0" && words[2] != "1") {
				return stagedErr(name, "%s line %d: unknown ffconcat header", name, n)
			}
		case "file":
			if e := checkEntry(name, n, words[1], staged); e != nil {
				return e
			}
			if listExtIndex.get(stagedExt(words[1])) != NotList {
				return stagedErr(name, "%s line %d: entry %q is itself a list; lists do not nest", name, n, words[1])
			}
		}
	}
	return nil
}

// concatTokens splits a concat script line into whitespace-separated tokens with FFmpeg's
// quoting; false when a quote is left open.
func concatTokens(line string) ([]string, bool) {
	var (
		words []string
		cur   strings.Builder
		in    bool // a token has started
	)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, false
			}
			cur.WriteString(line[i+1 : i+1+end])
			i += end + 1
			in = true
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			in = true
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words, true
}

// hlsURITags are the HLS tags whose URI attribute makes the demuxer open a file.
var hlsURITags = []string{
	"#EXT-X-KEY:", "#EXT-X-SESSION-KEY:", "#EXT-X-MAP:", "#EXT-X-MEDIA:",
	"#EXT-X-I-FRAME-STREAM-INF:", "#EXT-X-SESSION-DATA:", "#EXT-X-PRELOAD-HINT:",
	"#EXT-X-RENDITION-REPORT:", "#EXT-X-PART:",
}

// ffmpegLines are the lines of s as FFmpeg's line readers (ff_get_line, which the HLS demuxer
// uses, and the concat demuxer's ff_read_line_to_bprint) read them: a line ends at "\n", at
// "\r\n" and at a "\r" alone. Read at "\n" only, "#\r/etc/x.mp4" would be one comment to the
// checks and a comment and an entry to FFmpeg.
func ffmpegLines(s string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for s != "" {
			i := strings.IndexAny(s, "\r\n")
			if i < 0 {
				yield(s)
				return
			}
			end := i + 1
			if s[i] == '\r' && end < len(s) && s[end] == '\n' {
				end++
			}
			if !yield(s[:end]) {
				return
			}
			s = s[end:]
		}
	}
}

// CheckPlaylist checks an HLS playlist (.m3u8) entry by entry: every URI line and every URI
// attribute names a staged input. A playlist it names is a staged input, checked in turn.
func CheckPlaylist(name string, content []byte, staged func(string) bool) *Error {
	if bytes.IndexByte(content, 0) >= 0 {
		return stagedErr(name, "playlist %q contains a NUL byte", name)
	}
	n := 0
	for raw := range ffmpegLines(string(content)) {
		n++
		line := strings.TrimSpace(raw)
		switch {
		case line == "":
		case line[0] != '#':
			if e := checkEntry(name, n, line, staged); e != nil {
				return e
			}
		default:
			for _, tag := range hlsURITags {
				if !strings.HasPrefix(line, tag) {
					continue
				}
				uri, ok, closed := hlsURIAttr(line[len(tag):])
				if !closed {
					return stagedErr(name, "%s line %d: an unterminated quote", name, n)
				}
				if ok {
					if e := checkEntry(name, n, uri, staged); e != nil {
						return e
					}
				}
			}
		}
	}
	return nil
}

// hlsURIAttr finds URI="..." in an attribute list; closed is false when a quote is left open.
func hlsURIAttr(attrs string) (uri string, ok, closed bool) {
	for attrs != "" {
		key, rest, found := strings.Cut(attrs, "=")
		if !found {
			return uri, ok, true
		}
		key = strings.TrimSpace(key)
		var val string
		if strings.HasPrefix(rest, `"`) {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				return "", false, false
			}
			val, rest = rest[1:1+end], rest[2+end:]
		} else {
			val, rest, _ = strings.Cut(rest, ",")
			rest = "," + rest
		}
		if key == "URI" {
			uri, ok = val, true
		}
		rest = strings.TrimLeft(rest, " ")
		attrs = strings.TrimPrefix(rest, ",")
	}
	return uri, ok, true
}
