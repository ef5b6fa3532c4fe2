package subtitle

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Color is an sRGB colour with alpha in the web's sense: 255 is opaque.
type Color struct{ R, G, B, A uint8 }

// ParseColor reads "#RRGGBB" or "#AARRGGBB" (alpha first, FF opaque).
func ParseColor(s string) (Color, error) {
	h, ok := strings.CutPrefix(s, "#")
	if !ok || (len(h) != 6 && len(h) != 8) {
		return Color{}, fmt.Errorf("colour %q is not #RRGGBB or #AARRGGBB", s)
	}
	v, err := strconv.ParseUint(h, 16, 32)
	if err != nil {
		return Color{}, fmt.Errorf("colour %q is not #RRGGBB or #AARRGGBB", s)
	}
	c := Color{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 255}
	if len(h) == 8 {
		c.A = uint8(v >> 24)
	}
	return c, nil
}

// MustColor is ParseColor for constants; it panics on a bad colour.
func MustColor(s string) Color {
	c, err := ParseColor(s)
	if err != nil {
		panic(err)
	}
	return c
}

// ASS is the colour as ASS writes it, &HAABBGGRR, whose alpha is inverted (00 opaque).
func (c Color) ASS() string {
	return fmt.Sprintf("&H%02X%02X%02X%02X", 255-c.A, c.B, c.G, c.R)
}

// assOverride is the colour for a \c override (&HBBGGRR&; alpha goes through \alpha).
func (c Color) assOverride() string { return fmt.Sprintf("&H%02X%02X%02X&", c.B, c.G, c.R) }

// Position is the vertical band of the captions.
type Position string

// Positions.
const (
	Bottom Position = "bottom"
	Center Position = "center"
	Top    Position = "top"
)

// Alignment is the horizontal alignment of the captions.
type Alignment string

// Alignments.
const (
	Left   Alignment = "left"
	Middle Alignment = "center"
	Right  Alignment = "right"
)

// ParsePosition reads "bottom", "center" or "top".
func ParsePosition(s string) (Position, error) {
	switch p := Position(s); p {
	case Bottom, Center, Top:
		return p, nil
	}
	return "", fmt.Errorf("%q is not one of bottom, center, top", s)
}

// ParseAlignment reads "left", "center" or "right".
func ParseAlignment(s string) (Alignment, error) {
	switch a := Alignment(s); a {
	case Left, Middle, Right:
		return a, nil
	}
	return "", fmt.Errorf("%q is not one of left, center, right", s)
}

// Numpad is the ASS alignment (\an) of a position and alignment: the numeric keypad, 1 bottom
// left to 9 top right.
func Numpad(p Position, a Alignment) int {
	n := 1
	switch a {
	case Middle:
		n = 2
	case Right:
		n = 3
	}
	switch p {
	case Center:
		n += 3
	case Top:
		n += 6
	}
	return n
}

// Style is how captions look. Sizes are in output pixels: the script's PlayRes is the video size.
type Style struct {
	FontFamily   string
	FontSize     int
	FontColor    Color
	Bold, Italic bool
	OutlineColor Color
	OutlineWidth float64
	Shadow       float64
	// Box draws a filled box behind each line (ASS BorderStyle 3), in BoxColor at BoxOpacity
	// (0..1, multiplied with BoxColor's own alpha); OutlineWidth is then the box's padding.
	Box        bool
	BoxColor   Color
	BoxOpacity float64
	Position   Position
	Alignment  Alignment
	MarginV    int
	MarginH    int // left and right margin: bounds the wrap width
}

// DefaultStyle is the spec's caption.burn defaults.
var DefaultStyle = Style{
	FontFamily: "Inter", FontSize: 48, FontColor: MustColor("#FFFFFF"), Bold: true,
	OutlineColor: MustColor("#000000"), OutlineWidth: 2, Shadow: 1,
	BoxColor: MustColor("#000000"), BoxOpacity: 0.6,
	Position: Bottom, Alignment: Middle, MarginV: 60, MarginH: 40,
}

// Video is the size of the frames the script is rendered onto.
type Video struct{ Width, Height int }

// fontName makes a family name safe in a Style line, whose fields are comma separated.
func fontName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == ',' || r == '\\' || r == '{' || r == '}' || r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if s = strings.TrimSpace(s); s == "" {
		return DefaultStyle.FontFamily
	}
	return s
}

func assBool(b bool) int {
	if b {
		return -1
	}
	return 0
}

func num(f float64) string {
	if math.IsNaN(f) || f < 0 {
		f = 0
	}
	return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64)
}

// styleLine is the [V4+ Styles] line of st named name.
func (st Style) styleLine(name string) string {
	border, outline, back := 1, st.OutlineColor, Color{A: st.FontColor.A / 2}
	if st.Box {
		// BorderStyle 3 paints the outline as an opaque box in OutlineColour.
		border = 3
		outline = st.BoxColor
		outline.A = uint8(math.Round(float64(st.BoxColor.A) * clamp01(st.BoxOpacity)))
		back = outline
	}
	return fmt.Sprintf("Style: %s,%s,%d,%s,%s,%s,%s,%d,%d,0,0,100,100,0,0,%d,%s,%s,%d,%d,%d,%d,1",
		name, fontName(st.FontFamily), st.FontSize, st.FontColor.ASS(), st.FontColor.ASS(), outline.ASS(), back.ASS(),
		assBool(st.Bold), assBool(st.Italic), border, num(st.OutlineWidth), num(st.Shadow),
		Numpad(st.Position, st.Alignment), st.MarginH, st.MarginH, st.MarginV)
}

func clamp01(f float64) float64 {
	if math.IsNaN(f) {
		return 0
	}
	return math.Min(1, math.Max(0, f))
}
