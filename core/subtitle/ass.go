package subtitle

import (
	"bytes"
	"fmt"
	"strings"
	"time"
)

// header writes [Script Info] and [V4+ Styles] with one style, "Default".
func header(b *bytes.Buffer, st Style, v Video) {
	fmt.Fprintf(b, "[Script Info]\nScriptType: v4.00+\nPlayResX: %d\nPlayResY: %d\nWrapStyle: 0\nScaledBorderAndShadow: yes\nYCbCr Matrix: None\n\n", v.Width, v.Height)
	b.WriteString("[V4+ Styles]\nFormat: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding\n")
	b.WriteString(st.styleLine("Default"))
	b.WriteString("\n\n[Events]\nFormat: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\n")
}

func dialogue(b *bytes.Buffer, start, end time.Duration, text string) {
	fmt.Fprintf(b, "Dialogue: 0,%s,%s,Default,,0,0,0,,%s\n", assTime(start), assTime(end), text)
}

// WriteASS renders cues as an ASS script in style st for frames of size v.
func WriteASS(cues []Cue, st Style, v Video) []byte {
	var b bytes.Buffer
	header(&b, st, v)
	for _, c := range cues {
		dialogue(&b, c.Start, c.End, Escape(c.Text))
	}
	return b.Bytes()
}

// assTime is H:MM:SS.cc, rounded to the centisecond.
func assTime(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	cs := (d + 5*time.Millisecond) / (10 * time.Millisecond)
	return fmt.Sprintf("%d:%02d:%02d.%02d", cs/360000, cs/6000%60, cs/100%60, cs%100)
}

// wordJoiner follows every backslash so that libass reads no escape (\N, \h) or tag from text.
const wordJoiner = "\u2060"

// Escape turns plain text into ASS event text that libass shows literally: braces cannot open an
// override block, a backslash starts no escape, and "\n" becomes a line break (\N).
func Escape(s string) string {
	s = strings.NewReplacer("\\", "\\"+wordJoiner, "{", "(", "}", ")", "\r", "").Replace(s)
	return strings.ReplaceAll(s, "\n", `\N`)
}
