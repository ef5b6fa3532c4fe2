package subtitle

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Format is a subtitle file format.
type Format string

// The formats read here.
const (
	FormatSRT Format = "srt"
	FormatVTT Format = "vtt"
	FormatASS Format = "ass"
)

// Cue is one subtitle: plain text (lines separated by "\n") shown from Start to End.
type Cue struct {
	Start, End time.Duration
	Text       string
}

// Limits bound what a parser accepts. A zero field takes the DefaultLimits value.
type Limits struct {
	MaxBytes     int // size of the file
	MaxCues      int
	MaxLineRunes int // characters in one line of cue text
}

// DefaultLimits fit any real film (a feature has 1,000 to 3,000 cues and a few hundred KB).
var DefaultLimits = Limits{MaxBytes: 2 << 20, MaxCues: 20000, MaxLineRunes: 500}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultLimits.MaxBytes
	}
	if l.MaxCues <= 0 {
		l.MaxCues = DefaultLimits.MaxCues
	}
	if l.MaxLineRunes <= 0 {
		l.MaxLineRunes = DefaultLimits.MaxLineRunes
	}
	return l
}

// Errors callers branch on; the errors returned wrap them with the detail (line number, size).
var (
	ErrTooLarge    = errors.New("subtitle file is too large")
	ErrTooManyCues = errors.New("subtitle file has too many cues")
	ErrLineTooLong = errors.New("subtitle line is too long")
	ErrBinary      = errors.New("subtitle file is not text")
	ErrNoCues      = errors.New("subtitle file has no cues")
	ErrNotASS      = errors.New("not an ASS script")
)

// Detect tells the format of a subtitle file from its content: WEBVTT header, ASS sections, or
// SRT otherwise.
func Detect(data []byte) Format {
	head := bytes.TrimLeft(bytes.TrimPrefix(data, bom), " \t\r\n")
	switch {
	case bytes.HasPrefix(head, []byte("WEBVTT")):
		return FormatVTT
	case bytes.HasPrefix(head, []byte("[Script Info]")), bytes.HasPrefix(bytes.ToLower(head), []byte("[script info]")):
		return FormatASS
	default:
		return FormatSRT
	}
}

// Parse reads an SRT or VTT file, whichever Detect finds. An ASS file is an error here: it is
// checked with CheckASS and burned as is.
func Parse(data []byte, lim Limits) ([]Cue, error) {
	switch Detect(data) {
	case FormatVTT:
		return ParseVTT(data, lim)
	case FormatASS:
		return nil, errors.New("an ASS script has no cues to parse; burn it as is")
	default:
		return ParseSRT(data, lim)
	}
}

// ParseSRT reads SubRip: numbered blocks of "start --> end" and text. It tolerates a BOM, CRLF or
// CR line ends, a missing index or final blank line, '.' for ',' in times, and HTML-ish tags.
func ParseSRT(data []byte, lim Limits) ([]Cue, error) { return parse(data, lim, FormatSRT) }

// ParseVTT reads WebVTT: the header, NOTE, STYLE and REGION blocks are skipped, cue settings
// after the end time ignored, and tags (<c.x>, <v Name>, <00:01.000>, <b>) stripped.
func ParseVTT(data []byte, lim Limits) ([]Cue, error) { return parse(data, lim, FormatVTT) }

var bom = []byte("\xEF\xBB\xBF")

func parse(data []byte, lim Limits, f Format) ([]Cue, error) {
	lim = lim.withDefaults()
	text, err := decodeText(data, lim)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(text, "\n")
	var cues []Cue
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if !strings.Contains(line, "-->") {
			continue
		}
		start, end, ok := parseTiming(line)
		if !ok {
			continue
		}
		// The text runs to the next blank line, or to the next timing line when the blank line
		// before it is missing (the index line just above it is then dropped).
		var body []string
		j := i + 1
		for ; j < len(lines); j++ {
			l := strings.TrimRight(lines[j], " \t")
			if strings.TrimSpace(l) == "" || strings.Contains(l, "-->") {
				break
			}
			body = append(body, l)
		}
		if j < len(lines) && strings.Contains(lines[j], "-->") && len(body) > 0 && isIndex(body[len(body)-1], f) {
			body = body[:len(body)-1]
		}
		i = j - 1
		if end <= start {
			continue
		}
		var out []string
		for _, b := range body {
			t := cleanLine(b, f)
			if utf8.RuneCountInString(t) > lim.MaxLineRunes {
				return nil, fmt.Errorf("%w: a line of the cue at %s has %d characters, at most %d", ErrLineTooLong, start, utf8.RuneCountInString(t), lim.MaxLineRunes)
			}
			if t != "" {
				out = append(out, t)
			}
		}
		if len(out) == 0 {
			continue
		}
		if len(cues) == lim.MaxCues {
			return nil, fmt.Errorf("%w: more than %d", ErrTooManyCues, lim.MaxCues)
		}
		cues = append(cues, Cue{Start: start, End: end, Text: strings.Join(out, "\n")})
	}
	if len(cues) == 0 {
		return nil, fmt.Errorf("%w: no \"start --> end\" timing line with text was found", ErrNoCues)
	}
	sort.SliceStable(cues, func(a, b int) bool { return cues[a].Start < cues[b].Start })
	return cues, nil
}

// isIndex reports whether l is the identifier line of the next cue: a number in SRT, anything in
// VTT.
func isIndex(l string, f Format) bool {
	if f == FormatVTT {
		return true
	}
	_, err := strconv.Atoi(strings.TrimSpace(l))
	return err == nil
}

// decodeText checks size and content and returns the text with a BOM dropped and line ends
// normalised to "\n". Text that is not UTF-8 but has no control characters is read as Latin-1,
// as old SRT files often are; NUL and other control bytes mean a binary file.
func decodeText(data []byte, lim Limits) (string, error) {
	if len(data) > lim.MaxBytes {
		return "", fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(data), lim.MaxBytes)
	}
	data = bytes.TrimPrefix(data, bom)
	for i, c := range data {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f' || c == 0x7f {
			return "", fmt.Errorf("%w: control byte %#02x at offset %d", ErrBinary, c, i)
		}
	}
	var s string
	if utf8.Valid(data) {
		s = string(data)
	} else {
		r := make([]rune, len(data))
		for i, c := range data {
			r[i] = rune(c)
		}
		s = string(r)
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n"), nil
}

// parseTiming reads "00:00:01,000 --> 00:00:02,500 [settings]".
func parseTiming(line string) (start, end time.Duration, ok bool) {
	a, b, _ := strings.Cut(line, "-->")
	fields := strings.Fields(b)
	if len(fields) == 0 {
		return 0, 0, false
	}
	start, ok1 := parseTime(strings.TrimSpace(a))
	end, ok2 := parseTime(fields[0])
	return start, end, ok1 && ok2
}

// parseTime reads [hh:]mm:ss[,.]fff; the fraction may have one to three digits.
func parseTime(s string) (time.Duration, bool) {
	main, frac, _ := strings.Cut(strings.Replace(s, ",", ".", 1), ".")
	parts := strings.Split(main, ":")
	if len(parts) < 2 || len(parts) > 3 || len(frac) > 3 {
		return 0, false
	}
	var total int64
	for i, p := range parts {
		if p == "" || len(p) > 4 {
			return 0, false
		}
		n, err := strconv.ParseUint(p, 10, 32)
		if err != nil || (i > 0 && n > 59) {
			return 0, false
		}
		total = total*60 + int64(n)
	}
	ms := int64(0)
	if frac != "" {
		n, err := strconv.ParseUint(frac, 10, 16)
		if err != nil {
			return 0, false
		}
		ms = int64(n)
		for range 3 - len(frac) {
			ms *= 10
		}
	}
	return time.Duration(total)*time.Second + time.Duration(ms)*time.Millisecond, true
}

// cleanLine strips markup from one line of cue text: HTML-ish and VTT tags, ASS override blocks
// ({\an8}, {\fnX}), entities in VTT; and neutralises what libass would still read as commands.
func cleanLine(s string, f Format) string {
	s = stripTags(s)
	if f == FormatVTT || strings.Contains(s, "&") {
		s = html.UnescapeString(s)
	}
	s = stripBraces(s)
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\t':
			return ' '
		case unicode.IsControl(r), r == '\u200e', r == '\u200f':
			return -1
		}
		return r
	}, s)
	return strings.TrimSpace(s)
}

// stripTags removes <...> tags whose name starts with a letter, '/' or a digit (VTT timestamps);
// a '<' that opens no tag ("a < b") stays.
func stripTags(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] == '<' && i+1 < len(s) {
			c := s[i+1]
			if c == '/' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
				if end := strings.IndexByte(s[i:], '>'); end > 0 {
					i += end + 1
					continue
				}
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// stripBraces drops complete {...} blocks (override tags and Aegisub comments, which players
// hide too) and turns leftover braces into parentheses, so no override block can open.
func stripBraces(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] == '{' {
			if end := strings.IndexByte(s[i:], '}'); end > 0 {
				i += end + 1
				continue
			}
		}
		switch s[i] {
		case '{':
			b.WriteByte('(')
		case '}':
			b.WriteByte(')')
		default:
			b.WriteByte(s[i])
		}
		i++
	}
	return b.String()
}

// CheckASS refuses what is not an ASS script: too large, binary, or without [Script Info] and
// [Events] sections with at least one Dialogue line. The script is then burned as is: its own
// \fn overrides can only name fonts fontconfig knows inside the sandbox, whose only fonts are the
// system's under /usr.
func CheckASS(data []byte, lim Limits) error {
	lim = lim.withDefaults()
	text, err := decodeText(data, lim)
	if err != nil {
		return err
	}
	var info, events bool
	dialogues := 0
	for l := range strings.SplitSeq(text, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.EqualFold(l, "[Script Info]"):
			info = true
		case strings.EqualFold(l, "[Events]"):
			events = true
		case events && strings.HasPrefix(l, "Dialogue:"):
			dialogues++
			if dialogues > lim.MaxCues {
				return fmt.Errorf("%w: more than %d Dialogue lines", ErrTooManyCues, lim.MaxCues)
			}
		}
	}
	switch {
	case !info:
		return fmt.Errorf("%w: no [Script Info] section", ErrNotASS)
	case !events:
		return fmt.Errorf("%w: no [Events] section", ErrNotASS)
	case dialogues == 0:
		return fmt.Errorf("%w: no Dialogue line in [Events]", ErrNoCues)
	}
	return nil
}
