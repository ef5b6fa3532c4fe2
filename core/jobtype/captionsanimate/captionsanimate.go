package captionsanimate

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/captionburn"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/subtitle"
)

// Name is the type's name.
const Name = "captions.animate"

// Preset is a named look: a base style and the animation. Explicit params override its style.
type Preset struct {
	Style     subtitle.Style
	Highlight subtitle.Color
	Pop       int // active word scale in percent; 100: none
	Lines     int // lines shown at a time
	MaxChars  int // per line, unless params.maxCharsPerLine says otherwise
}

// DefaultPreset is the preset when params.preset is absent.
const DefaultPreset = "karaoke"

// Presets are the named presets:
//   - karaoke: the caption.burn defaults, two lines at a time, the spoken word turns gold;
//   - pop: one short line in the middle of the frame, big bold text, the spoken word turns cyan
//     and grows by 25 %;
//   - boxed: two lines on a 70 % black box at the bottom, the spoken word turns gold.
var Presets = map[string]Preset{
	"karaoke": {Style: subtitle.DefaultStyle, Highlight: subtitle.MustColor("#FFD700"), Pop: 100, Lines: 2, MaxChars: 32},
	"pop": {Style: with(func(s *subtitle.Style) {
		s.FontSize, s.OutlineWidth, s.Shadow, s.Position = 64, 4, 2, subtitle.Center
	}), Highlight: subtitle.MustColor("#00E5FF"), Pop: 125, Lines: 1, MaxChars: 20},
	"boxed": {Style: with(func(s *subtitle.Style) {
		s.Box, s.BoxOpacity, s.OutlineWidth, s.Shadow = true, 0.7, 6, 0
	}), Highlight: subtitle.MustColor("#FFD700"), Pop: 100, Lines: 2, MaxChars: 32},
}

func with(f func(*subtitle.Style)) subtitle.Style {
	s := subtitle.DefaultStyle
	f(&s)
	return s
}

type animateParams struct {
	captionburn.RawParams
	HighlightColor *string `json:"highlightColor"`
	Preset         *string `json:"preset"`
}

// Request is a parsed captions.animate job.
type Request struct {
	Source, Transcript string
	Params             captionburn.Params
	Karaoke            subtitle.Karaoke
}

// Parse reads inputs (source, optional transcript) and params strictly.
func Parse(rawInputs, rawParams json.RawMessage) (Request, error) {
	in, err := captionburn.URLInputs(rawInputs, []string{captionburn.InputSource}, []string{captionburn.InputTranscript})
	if err != nil {
		return Request{}, err
	}
	var raw animateParams
	if err := captionburn.DecodeParams(rawParams, &raw); err != nil {
		return Request{}, err
	}
	name := DefaultPreset
	if raw.Preset != nil {
		name = *raw.Preset
	}
	preset, ok := Presets[name]
	if !ok {
		return Request{}, problem.Reject(problem.CodeValidation, "params.preset %q is not a preset; one of: %s", name, strings.Join(presetNames(), ", "))
	}
	p, err := raw.Resolve(preset.Style)
	if err != nil {
		return Request{}, err
	}
	k := subtitle.Karaoke{Style: p.Style, Highlight: preset.Highlight, Pop: preset.Pop, Lines: preset.Lines, MaxChars: preset.MaxChars}
	if raw.HighlightColor != nil {
		c, err := subtitle.ParseColor(*raw.HighlightColor)
		if err != nil {
			return Request{}, problem.Reject(problem.CodeValidation, "params.highlightColor %q must be a web hex colour #RRGGBB or #AARRGGBB", *raw.HighlightColor)
		}
		k.Highlight = c
	}
	if p.MaxCharsPerLine > 0 {
		k.MaxChars = p.MaxCharsPerLine
	}
	return Request{Source: in[captionburn.InputSource], Transcript: in[captionburn.InputTranscript], Params: p, Karaoke: k}, nil
}

func presetNames() []string {
	names := make([]string, 0, len(Presets))
	for n := range Presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Inputs are the request's URL inputs by name.
func (r Request) Inputs() map[string]string {
	m := map[string]string{captionburn.InputSource: r.Source}
	if r.Transcript != "" {
		m[captionburn.InputTranscript] = r.Transcript
	}
	return m
}

// Type is the registered captions.animate type; it checks fonts and languages as caption.burn
// does.
type Type struct {
	Fonts     captionburn.FontResolver
	Languages []string
}

// Name is "captions.animate".
func (Type) Name() string { return Name }

// Prepare validates the request.
func (t Type) Prepare(req jobtype.Request, env jobtype.Env) (jobtype.Spec, error) {
	r, err := Parse(req.Inputs, req.Params)
	if err != nil {
		return jobtype.Spec{}, err
	}
	return captionburn.Type{Fonts: t.Fonts, Languages: t.Languages}.Check(r.Inputs(), r.Transcript == "", r.Params, env)
}
