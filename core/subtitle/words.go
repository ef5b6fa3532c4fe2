package subtitle

import (
	"bytes"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Word is one spoken word with its timing, as a transcriber or a word list gives it.
type Word struct {
	Text       string
	Start, End time.Duration
}

// DefaultMaxChars is the line length used when none is asked for.
const DefaultMaxChars = 42

// pauseBreak is a silence long enough to end a cue even when its lines have room.
const pauseBreak = 1500 * time.Millisecond

// page is the words shown together: up to maxLines lines of at most maxChars characters.
type page [][]Word

// paginate groups words into pages. A word longer than maxChars gets a line of its own.
func paginate(words []Word, maxChars, maxLines int) []page {
	if maxChars <= 0 {
		maxChars = DefaultMaxChars
	}
	if maxLines <= 0 {
		maxLines = 2
	}
	var (
		pages   []page
		cur     page
		line    []Word
		lineLen int
	)
	flushLine := func() {
		if len(line) > 0 {
			cur = append(cur, line)
			line, lineLen = nil, 0
		}
	}
	flushPage := func() {
		flushLine()
		if len(cur) > 0 {
			pages = append(pages, cur)
			cur = nil
		}
	}
	var last *Word
	for _, w := range words {
		w.Text = strings.Join(strings.Fields(w.Text), " ")
		if w.Text == "" || w.End < w.Start {
			continue
		}
		n := utf8.RuneCountInString(w.Text)
		if last != nil && w.Start-last.End >= pauseBreak {
			flushPage()
		}
		if len(line) > 0 && lineLen+1+n > maxChars {
			flushLine()
			if len(cur) == maxLines {
				flushPage()
			}
		}
		if len(line) > 0 {
			lineLen++
		}
		line = append(line, w)
		lineLen += n
		last = &line[len(line)-1]
	}
	flushPage()
	return pages
}

// Cues breaks timed words into cues of at most maxLines lines of maxChars characters (a longer
// word keeps a line to itself); a pause of 1.5 s also ends a cue. maxChars 0 means
// DefaultMaxChars, maxLines 0 means two.
func Cues(words []Word, maxChars, maxLines int) []Cue {
	var cues []Cue
	for _, p := range paginate(words, maxChars, maxLines) {
		lines := make([]string, len(p))
		for i, l := range p {
			texts := make([]string, len(l))
			for j, w := range l {
				texts[j] = w.Text
			}
			lines[i] = strings.Join(texts, " ")
		}
		last := p[len(p)-1]
		cues = append(cues, Cue{Start: p[0][0].Start, End: last[len(last)-1].End, Text: strings.Join(lines, "\n")})
	}
	return cues
}

// Karaoke is the style of word-level animated captions.
type Karaoke struct {
	Style
	// Highlight is the colour of the word being spoken.
	Highlight Color
	// Pop scales the word being spoken, in percent; 0 or 100 leaves it as is.
	Pop int
	// Lines shown at a time, 1 or 2; MaxChars per line (0: DefaultMaxChars).
	Lines    int
	MaxChars int
}

// WriteKaraoke renders words as animated captions: a page of one or two lines is shown while
// its words are spoken, and each word is highlighted (and popped) from its start to the next
// word's start, so the frame changes at every word boundary.
func WriteKaraoke(words []Word, k Karaoke, v Video) []byte {
	var b bytes.Buffer
	header(&b, k.Style, v)
	for _, p := range paginate(words, k.MaxChars, k.Lines) {
		var flat []Word
		for _, l := range p {
			flat = append(flat, l...)
		}
		for i, w := range flat {
			end := w.End
			if i+1 < len(flat) && flat[i+1].Start > w.Start {
				end = flat[i+1].Start
			}
			if end <= w.Start {
				continue
			}
			dialogue(&b, w.Start, end, k.render(p, w))
		}
	}
	return b.Bytes()
}

// render is the text of a page with the word active highlighted.
func (k Karaoke) render(p page, active Word) string {
	tag := `{\c` + k.Highlight.assOverride()
	if k.Pop > 0 && k.Pop != 100 {
		tag += fmt.Sprintf(`\fscx%d\fscy%d`, k.Pop, k.Pop)
	}
	tag += "}"
	lines := make([]string, len(p))
	for i, l := range p {
		parts := make([]string, len(l))
		for j, w := range l {
			parts[j] = Escape(w.Text)
			if w == active {
				parts[j] = tag + parts[j] + `{\r}`
			}
		}
		lines[i] = strings.Join(parts, " ")
	}
	return strings.Join(lines, `\N`)
}
