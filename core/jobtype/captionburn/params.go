package captionburn

import (
	"encoding/json"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/subtitle"
)

// Params are the caption params with defaults filled in and ranges checked.
type Params struct {
	// Language is "auto" or an ISO-639-1 code.
	Language string
	Style    subtitle.Style
	// MaxCharsPerLine breaks transcribed lines; 0 means none was asked for.
	MaxCharsPerLine int
}

// RawParams is the JSON form of the spec's caption.burn params table; absent fields are nil. Other
// types embed it to share the table.
type RawParams struct {
	Language        *string  `json:"language"`
	FontFamily      *string  `json:"fontFamily"`
	FontSize        *int     `json:"fontSize"`
	FontColor       *string  `json:"fontColor"`
	Bold            *bool    `json:"bold"`
	Italic          *bool    `json:"italic"`
	OutlineColor    *string  `json:"outlineColor"`
	OutlineWidth    *float64 `json:"outlineWidth"`
	Shadow          *float64 `json:"shadow"`
	BoxEnabled      *bool    `json:"boxEnabled"`
	BoxColor        *string  `json:"boxColor"`
	BoxOpacity      *float64 `json:"boxOpacity"`
	Position        *string  `json:"position"`
	Alignment       *string  `json:"alignment"`
	MarginV         *int     `json:"marginV"`
	MarginH         *int     `json:"marginH"`
	MaxCharsPerLine *int     `json:"maxCharsPerLine"`
}

// DecodeParams reads params strictly into v (a *RawParams or a struct embedding one). Names must
// match exactly: encoding/json alone would take "fontsize" for fontSize.
func DecodeParams(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := jobtype.DecodeStrictAt("params.", raw, v); err != nil {
		return err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return problem.Reject(problem.CodeValidation, "params must be an object")
	}
	known := map[string]bool{}
	jsonNames(reflect.TypeOf(v).Elem(), known)
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !known[k] {
			return problem.Reject(problem.CodeValidation, "field %q is not allowed", "params."+k)
		}
	}
	return nil
}

// jsonNames collects the JSON names of a struct's fields, embedded structs' included.
func jsonNames(t reflect.Type, into map[string]bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			jsonNames(f.Type, into)
			continue
		}
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			into[name] = true
		}
	}
}

func rangeErr(name string, v any, rule string) error {
	return problem.Reject(problem.CodeValidation, "params.%s %v is out of range: %s", name, v, rule)
}

func intIn(name string, p *int, lo, hi int, dst *int) error {
	if p == nil {
		return nil
	}
	if *p < lo || *p > hi {
		return rangeErr(name, *p, rangeText(float64(lo), float64(hi)))
	}
	*dst = *p
	return nil
}

func numIn(name string, p *float64, lo, hi float64, dst *float64) error {
	if p == nil {
		return nil
	}
	if math.IsNaN(*p) || *p < lo || *p > hi {
		return rangeErr(name, *p, rangeText(lo, hi))
	}
	*dst = *p
	return nil
}

func rangeText(lo, hi float64) string {
	return strings.TrimSpace(jsonNum(lo) + " to " + jsonNum(hi))
}

func jsonNum(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}

func color(name string, p *string, dst *subtitle.Color) error {
	if p == nil {
		return nil
	}
	c, err := subtitle.ParseColor(*p)
	if err != nil {
		return problem.Reject(problem.CodeValidation, "params.%s %q must be a web hex colour #RRGGBB or #AARRGGBB", name, *p)
	}
	*dst = c
	return nil
}

// Resolve checks ranges and fills in defaults from base (subtitle.DefaultStyle for caption.burn,
// a preset for captions.animate). Font and language support are checked by Type, at submit.
func (r RawParams) Resolve(base subtitle.Style) (Params, error) {
	p := Params{Language: "auto", Style: base}
	st := &p.Style
	if r.Language != nil {
		l := *r.Language
		if l != "auto" && !isISO6391(l) {
			return Params{}, problem.Reject(problem.CodeValidation, "params.language %q must be auto or an ISO-639-1 code such as en, fr, de", l)
		}
		p.Language = l
	}
	if r.FontFamily != nil {
		f := strings.TrimSpace(*r.FontFamily)
		if f == "" || len(f) > 100 || strings.ContainsAny(f, ",\\{}:=*?[]\"'") || strings.ContainsFunc(f, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
			return Params{}, problem.Reject(problem.CodeValidation, "params.fontFamily %q is not a font family name", *r.FontFamily)
		}
		st.FontFamily = f
	}
	errs := []error{
		intIn("fontSize", r.FontSize, 8, 400, &st.FontSize),
		color("fontColor", r.FontColor, &st.FontColor),
		color("outlineColor", r.OutlineColor, &st.OutlineColor),
		numIn("outlineWidth", r.OutlineWidth, 0, 20, &st.OutlineWidth),
		numIn("shadow", r.Shadow, 0, 20, &st.Shadow),
		color("boxColor", r.BoxColor, &st.BoxColor),
		numIn("boxOpacity", r.BoxOpacity, 0, 1, &st.BoxOpacity),
		intIn("marginV", r.MarginV, 0, 2000, &st.MarginV),
		intIn("marginH", r.MarginH, 0, 2000, &st.MarginH),
		intIn("maxCharsPerLine", r.MaxCharsPerLine, 10, 80, &p.MaxCharsPerLine),
	}
	for _, err := range errs {
		if err != nil {
			return Params{}, err
		}
	}
	for _, b := range []struct {
		p   *bool
		dst *bool
	}{{r.Bold, &st.Bold}, {r.Italic, &st.Italic}, {r.BoxEnabled, &st.Box}} {
		if b.p != nil {
			*b.dst = *b.p
		}
	}
	if r.Position != nil {
		pos, err := subtitle.ParsePosition(*r.Position)
		if err != nil {
			return Params{}, problem.Reject(problem.CodeValidation, "params.position %v", err)
		}
		st.Position = pos
	}
	if r.Alignment != nil {
		a, err := subtitle.ParseAlignment(*r.Alignment)
		if err != nil {
			return Params{}, problem.Reject(problem.CodeValidation, "params.alignment %v", err)
		}
		st.Alignment = a
	}
	return p, nil
}

// iso6391 is every ISO-639-1 code.
const iso6391 = "aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy " +
	"da de dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz " +
	"ia id ie ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo " +
	"lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps " +
	"pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq sr ss st su sv sw ta te tg th ti tk tl tn " +
	"to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu"

func isISO6391(s string) bool {
	return len(s) == 2 && strings.Contains(" "+iso6391+" ", " "+s+" ")
}
