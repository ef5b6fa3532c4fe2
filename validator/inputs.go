package validator

import (
	"net/url"
	"strconv"
	"strings"
)

// Layer 3: input sources. An input is one of three things, and nothing else reaches FFmpeg:
//   - an https URL, fetched by the runner's SSRF-guarded fetcher and replaced by a local name, so
//     FFmpeg itself never opens a URL (its network is off anyway);
//   - an uploaded asset's content URL (Options.AssetURLPrefix + id + "/content"), fetched alike;
//   - the bare name of a staged input (Options.Inputs). A bare name that is not staged yet is
//     not an error: it is a required input (Result.RequiredInputs) the job must supply, and an
//     image-sequence pattern (img%03d.png) is staged when its first frame is.
//
// Protocol prefixes (file:, pipe:, concat:, subfile:, data:, crypto:, tcp:, udp:, rtmp:, ...),
// plain http, absolute paths, traversal and devices are all rejected by that rule (a bare name
// has no '/' and no ':') rather than by a list. A -f lavfi input is a filter graph and goes to layer 5.
//
// A URL whose host is a non-public address or a localhost name, in any spelling, is refused
// with the address named (addresses.go), unless Options.AllowPrivateNetworks opens it; so is any
// other URL with such a host, before the rule above would refuse it without naming it.

const layerInputs = "inputs"

func inputErr(value, format string, a ...any) *Error {
	return newError(layerInputs, "-i", value, format, a...)
}

// playlistExts are extensions that make FFmpeg's HLS, DASH or SDP demuxers open further files
// named inside the input, which would bypass every rule here.
var playlistExts = map[string]bool{"m3u8": true, "m3u": true, "hls": true, "mpd": true, "sdp": true}

// playlistExtIndex is playlistExts for lookups.
var playlistExtIndex = newStrTable(playlistExts)

// localExts are the extensions a downloaded input keeps in its local name, so that formats
// FFmpeg recognises by extension (image2, raw streams) still work. Any other extension is
// dropped: FFmpeg then probes the content.
var localExts = map[string]bool{
	"mp4": true, "m4v": true, "m4a": true, "mov": true, "mkv": true, "webm": true, "avi": true,
	"ts": true, "mts": true, "m2ts": true, "mpg": true, "mpeg": true, "flv": true, "mxf": true,
	"3gp": true, "wmv": true, "wma": true, "mp3": true, "wav": true, "flac": true, "ogg": true,
	"oga": true, "ogv": true, "opus": true, "aac": true, "ac3": true, "gif": true, "png": true,
	"jpg": true, "jpeg": true, "webp": true, "bmp": true, "tif": true, "tiff": true,
	"srt": true, "vtt": true, "ass": true, "ssa": true, "h264": true, "hevc": true, "y4m": true,
}

// localNames are the first local names of downloads, by extension ("" for none): a name built
// for each download was about a third of the allocations of a validation, and each costs
// hundreds of nanoseconds under WASM.
var localNames = func() map[string][]string {
	m := make(map[string][]string, len(localExts)+1)
	for ext := range localExts {
		m[ext] = nil
	}
	m[""] = nil
	for ext := range m {
		suffix := ""
		if ext != "" {
			suffix = "." + ext
		}
		names := make([]string, 8)
		for i := range names {
			names[i] = "input_" + strconv.Itoa(i) + suffix
		}
		m[ext] = names
	}
	return m
}()

// localNameIndex is localNames for lookups.
var localNameIndex = newStrTable(localNames)

// refusedInput says why an -i value is neither a URL nor a bare name.
func refusedInput(value, why string) *Error {
	return inputErr(value, "input %q is not allowed: it %s; inputs are https URLs, uploaded assets and bare names of staged inputs", value, why)
}

// checkURL validates an https input URL or an uploaded asset URL and returns why it is refused
// ("" when it is not) and the extension of its path.
func checkURL(raw string, requireHTTPS bool) (why, ext string) {
	if scheme, path, ok := parseSimpleURL(raw); ok {
		ext = extOf(path)
		return checkParsedURL(raw, scheme, true, false, requireHTTPS, ext), ext
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "is not a valid URL", ""
	}
	ext = extOf(u.Path)
	return checkParsedURL(raw, u.Scheme, u.Host != "" && u.Hostname() != "", u.User != nil, requireHTTPS, ext), ext
}

// parseSimpleURL reads the scheme and path of a URL of the common form
// scheme://host[:port][/path][?query][#fragment]: a lowercase scheme, a host of letters, digits,
// dots and dashes, and printable ASCII without '%' or '@' after it. For such a URL the scheme,
// the non-empty host and the path are what url.Parse gives, without its allocations (each costs
// hundreds of nanoseconds under WASM); any other URL is not ok and goes to url.Parse.
func parseSimpleURL(raw string) (scheme, path string, ok bool) {
	i := 0
	for i < len(raw) && raw[i] >= 'a' && raw[i] <= 'z' {
		i++
	}
	if i == 0 || len(raw)-i < 4 || raw[i:i+3] != "://" {
		return "", "", false
	}
	scheme = raw[:i]
	i += 3
	host := i
	for i < len(raw) && (raw[i] >= 'a' && raw[i] <= 'z' || raw[i] >= 'A' && raw[i] <= 'Z' ||
		raw[i] >= '0' && raw[i] <= '9' || raw[i] == '.' || raw[i] == '-') {
		i++
	}
	if i == host {
		return "", "", false
	}
	if i < len(raw) && raw[i] == ':' {
		i++
		port := i
		for i < len(raw) && raw[i] >= '0' && raw[i] <= '9' {
			i++
		}
		if i == port {
			return "", "", false
		}
	}
	if i < len(raw) && raw[i] != '/' && raw[i] != '?' && raw[i] != '#' {
		return "", "", false
	}
	start, end := i, -1
	for ; i < len(raw); i++ {
		c := raw[i]
		if c <= ' ' || c >= 0x7f || c == '%' || c == '@' {
			return "", "", false
		}
		if (c == '?' || c == '#') && end < 0 {
			end = i
		}
	}
	if end < 0 {
		end = len(raw)
	}
	return scheme, raw[start:end], true
}

func checkParsedURL(raw, scheme string, hasHost, hasUser, requireHTTPS bool, ext string) string {
	if requireHTTPS && scheme != "https" {
		return "is not an https URL"
	}
	if !hasHost {
		return "has no host"
	}
	if hasUser {
		return "must not carry credentials"
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] <= ' ' || raw[i] == 0x7f {
			return "contains whitespace or control characters"
		}
	}
	if playlistExtIndex.get(ext) {
		return "is a playlist: HLS, DASH and SDP inputs open further files"
	}
	return ""
}

// isAssetURL reports whether raw is <prefix><asset_id>/content.
func (st *state) isAssetURL(raw string) bool {
	p := st.opts.AssetURLPrefix
	if p == "" || !strings.HasPrefix(raw, p) {
		return false
	}
	id, ok := strings.CutSuffix(raw[len(p):], "/content")
	if !ok || id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func hasHTTPSPrefix(s string) bool {
	return len(s) >= 8 && strings.EqualFold(s[:8], "https://")
}

// addInput checks the value of one -i with the per-file options given before it; idx is the
// position of the value in the arguments, for substitution.
func (st *state) addInput(idx int, value string, fo *fileOpts) *Error {
	if fo.format != "" {
		if e := checkInputFormat(fo.format); e != nil {
			return e
		}
	}
	switch fo.format {
	case "lavfi":
		return st.checkGraph("-i", value)
	case "concat":
		if why := checkName(value, namePlain); why != "" {
			return formatErr("-f", value, "-f concat reads a list that must be a staged input, not %q: it %s", value, why)
		}
	}
	if asset := st.isAssetURL(value); asset || hasHTTPSPrefix(value) {
		// An asset URL is the service's own, whatever its host.
		why := ""
		if !asset {
			why = checkURLHost(value, st.opts.AllowPrivateNetworks)
		}
		var ext string
		if why == "" {
			why, ext = checkURL(value, !asset)
		}
		if why != "" {
			return inputErr(value, "input URL %q %s", value, why)
		}
		st.planArgs[idx] = st.download(value, ext)
		return nil
	}
	// Any other URL is refused below as no bare name; one on a non-public host says so.
	if why := checkURLHost(value, st.opts.AllowPrivateNetworks); why != "" {
		return inputErr(value, "input URL %q %s", value, why)
	}
	if _, ok := st.opts.Inputs[value]; ok {
		if playlistExtIndex.get(extOf(value)) {
			return inputErr(value, "input %q is not allowed: HLS, DASH and SDP playlists open further files", value)
		}
		return nil
	}
	if isNumbered(value) {
		if why := checkName(value, nameNumbered); why != "" {
			return refusedInput(value, why)
		}
		if playlistExtIndex.get(extOf(value)) {
			return inputErr(value, "input %q is not allowed: HLS, DASH and SDP playlists open further files", value)
		}
		if !st.stagedSequence(value, fo.startNumber) {
			st.require(value)
		}
		return nil
	}
	if why := checkName(value, namePlain); why != "" {
		return refusedInput(value, why)
	}
	if playlistExtIndex.get(extOf(value)) {
		return inputErr(value, "input %q is not allowed: HLS, DASH and SDP playlists open further files", value)
	}
	st.require(value)
	return nil
}

// require records a bare name the command reads that Options.Inputs does not provide.
func (st *state) require(name string) {
	for _, r := range st.required {
		if r == name {
			return
		}
	}
	st.required = append(st.required, name)
}

// imageRange is FFmpeg's image2 start_number_range default: the first frame of a sequence is
// looked for at -start_number (default 0) and the four numbers after it.
const imageRange = 5

// stagedSequence reports whether the staged inputs hold the first frame of the numbered pattern,
// as the image2 demuxer looks for it: one of start .. start+4 expanded by the pattern.
func (st *state) stagedSequence(pattern string, start int) bool {
	for n := start; n < start+imageRange; n++ {
		if _, ok := st.opts.Inputs[expandNumbered(pattern, n)]; ok {
			return true
		}
	}
	return false
}

// download returns the local name of a remote input, fetching each URL once. Names are
// input_<n>[.ext], skipping any name already staged, so they never collide.
func (st *state) download(raw, ext string) string {
	for _, d := range st.downloads {
		if d.URL == raw {
			return d.Name
		}
	}
	names := localNameIndex.get(ext)
	if names == nil {
		names = localNameIndex.get("")
	}
	for {
		var name string
		if st.nextLocal < len(names) {
			name = names[st.nextLocal]
		} else {
			name = "input_" + strconv.Itoa(st.nextLocal) + strings.TrimPrefix(names[0], "input_0")
		}
		st.nextLocal++
		if _, taken := st.opts.Inputs[name]; !taken && !st.isRequired(name) {
			st.downloads = append(st.downloads, Download{URL: raw, Name: name})
			return name
		}
	}
}

func (st *state) isRequired(name string) bool {
	for _, r := range st.required {
		if r == name {
			return true
		}
	}
	return false
}

// isInputName reports whether name is a file the job reads: a staged, required or downloaded
// input.
func (st *state) isInputName(name string) bool {
	if _, ok := st.opts.Inputs[name]; ok {
		return true
	}
	if st.isRequired(name) {
		return true
	}
	for _, d := range st.downloads {
		if d.Name == name {
			return true
		}
	}
	return false
}

// checkStagedURLs checks the URL entries of Options.Inputs and plans their download under their
// own names, in name order so the plan is deterministic.
func (st *state) checkStagedURLs(names []string) *Error {
	for _, name := range names {
		in := st.opts.Inputs[name]
		if in.Inline {
			continue
		}
		if in.URL == "" {
			return newError(layerInputs, "", name, "input %q has neither a url nor content", name)
		}
		asset := st.isAssetURL(in.URL)
		if !asset {
			if why := checkURLHost(in.URL, st.opts.AllowPrivateNetworks); why != "" {
				return newError(layerInputs, "", in.URL, "input %q url %q %s", name, in.URL, why)
			}
		}
		if !asset && !hasHTTPSPrefix(in.URL) {
			return newError(layerInputs, "", in.URL, "input %q url %q is not allowed: only https URLs and uploaded assets", name, in.URL)
		}
		if why, _ := checkURL(in.URL, !asset); why != "" {
			return newError(layerInputs, "", in.URL, "input %q url %q %s", name, in.URL, why)
		}
		st.downloads = append(st.downloads, Download{URL: in.URL, Name: name})
	}
	return nil
}
