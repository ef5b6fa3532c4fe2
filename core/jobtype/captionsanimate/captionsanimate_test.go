package captionsanimate_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/captionburn"
	"github.com/mediajobs/mediajobs/core/jobtype/captionsanimate"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/subtitle"
)

type fonts map[string]bool

func (f fonts) Has(family string) bool { return f[family] }

func TestPrepare(t *testing.T) {
	t.Parallel()
	typ := captionsanimate.Type{Fonts: fonts{"Inter": true}, Languages: []string{"en"}}
	src := `"source":"https://example.com/a.mp4"`
	tests := []struct {
		name, inputs, params, wantErr string
	}{
		{name: "transcribed", inputs: `{` + src + `}`},
		{name: "transcript, every preset param", inputs: `{` + src + `,"transcript":"https://example.com/w.json"}`,
			params: `{"preset":"pop","highlightColor":"#FF00FF","fontSize":30,"language":"de"}`},
		{name: "unknown preset", inputs: `{` + src + `}`, params: `{"preset":"wild"}`, wantErr: `params.preset "wild" is not a preset; one of: boxed, karaoke, pop`},
		{name: "bad highlight", inputs: `{` + src + `}`, params: `{"highlightColor":"red"}`, wantErr: "params.highlightColor"},
		{name: "caption param range", inputs: `{` + src + `}`, params: `{"marginV":-5}`, wantErr: "params.marginV -5"},
		{name: "unknown param", inputs: `{` + src + `}`, params: `{"highlightcolor":"#FFFFFF"}`, wantErr: `"params.highlightcolor"`},
		{name: "subtitles is not an input", inputs: `{` + src + `,"subtitles":"https://example.com/a.srt"}`, wantErr: "inputs.subtitles"},
		{name: "language", inputs: `{` + src + `}`, params: `{"language":"fr"}`, wantErr: `params.language "fr" is not supported`},
		{name: "font", inputs: `{` + src + `}`, params: `{"fontFamily":"Nope"}`, wantErr: `params.fontFamily "Nope"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := jobtype.Request{Type: captionsanimate.Name, Inputs: json.RawMessage(tc.inputs)}
			if tc.params != "" {
				req.Params = json.RawMessage(tc.params)
			}
			spec, err := typ.Prepare(req, jobtype.Env{AssetURLPrefix: "https://api.test/assets/"})
			if tc.wantErr != "" {
				if problem.CodeOf(err) != problem.CodeValidation || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want VALIDATION_ERROR containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || spec.Timeout != captionburn.Timeout || spec.Class != job.ClassCPU {
				t.Fatalf("%+v %v", spec, err)
			}
		})
	}
}

func TestPresetOverride(t *testing.T) {
	t.Parallel()
	r, err := captionsanimate.Parse(json.RawMessage(`{"source":"https://example.com/a.mp4"}`),
		json.RawMessage(`{"preset":"pop","fontSize":40,"maxCharsPerLine":15,"highlightColor":"#FF0000"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := captionsanimate.Presets["pop"].Style
	want.FontSize = 40
	if diff := cmp.Diff(subtitle.Karaoke{Style: want, Highlight: subtitle.MustColor("#FF0000"), Pop: 125, Lines: 1, MaxChars: 15}, r.Karaoke); diff != "" {
		t.Fatal(diff)
	}
}
