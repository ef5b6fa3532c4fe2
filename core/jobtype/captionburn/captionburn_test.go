package captionburn_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/captionburn"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/subtitle"
)

const prefix = "https://api.test/assets/"

type fonts map[string]bool

func (f fonts) Has(family string) bool { return f[family] }

var typ = captionburn.Type{Fonts: fonts{"Inter": true, "DejaVu Sans": true}, Languages: []string{"en", "fr"}}

func TestPrepare(t *testing.T) {
	t.Parallel()
	src := `"source":"https://example.com/a.mp4"`
	tests := []struct {
		name, inputs, params string
		typ                  *captionburn.Type
		wantAssets           []string
		wantErr              string
	}{
		{name: "defaults, transcribed", inputs: `{` + src + `}`},
		{name: "url object and asset subtitles", inputs: `{"source":{"url":"https://example.com/a.mp4"},"subtitles":"` + prefix + `ast_1/content"}`,
			params: `{"language":"xx-not-checked-when-subtitles-given"}`, wantErr: "params.language"},
		{name: "asset subtitles", inputs: `{"source":"https://example.com/a.mp4","subtitles":"` + prefix + `ast_1/content"}`, wantAssets: []string{"ast_1"}},
		{name: "every param", inputs: `{` + src + `}`, params: `{"language":"fr","fontFamily":"DejaVu Sans","fontSize":8,"fontColor":"#80FFFFFF",
			"bold":false,"italic":true,"outlineColor":"#112233","outlineWidth":20,"shadow":0,"boxEnabled":true,"boxColor":"#000000",
			"boxOpacity":1,"position":"top","alignment":"left","marginV":2000,"marginH":0,"maxCharsPerLine":80}`},
		{name: "no source", inputs: `{}`, wantErr: "inputs.source is required"},
		{name: "no inputs", wantErr: "inputs.source is required"},
		{name: "unknown input", inputs: `{` + src + `,"audio":"https://example.com/a.wav"}`, wantErr: "inputs.audio is not an input"},
		{name: "http source", inputs: `{"source":"http://example.com/a.mp4"}`, wantErr: "http://example.com/a.mp4"},
		{name: "local path", inputs: `{"source":"/etc/passwd"}`, wantErr: "/etc/passwd"},
		{name: "file url", inputs: `{"source":"file:///etc/passwd"}`, wantErr: "file:///etc/passwd"},
		{name: "playlist", inputs: `{"source":"https://example.com/a.m3u8"}`, wantErr: "a.m3u8"},
		{name: "source number", inputs: `{"source":5}`, wantErr: "inputs.source"},
		{name: "unknown param", inputs: `{` + src + `}`, params: `{"fontsize":12}`, wantErr: `"params.fontsize"`},
		{name: "fontSize type", inputs: `{` + src + `}`, params: `{"fontSize":"48"}`, wantErr: "params.fontSize must be an integer"},
		{name: "fontSize low", inputs: `{` + src + `}`, params: `{"fontSize":7}`, wantErr: "params.fontSize 7 is out of range: 8 to 400"},
		{name: "fontSize high", inputs: `{` + src + `}`, params: `{"fontSize":401}`, wantErr: "params.fontSize 401"},
		{name: "outlineWidth", inputs: `{` + src + `}`, params: `{"outlineWidth":20.5}`, wantErr: "params.outlineWidth 20.5"},
		{name: "shadow", inputs: `{` + src + `}`, params: `{"shadow":-1}`, wantErr: "params.shadow -1"},
		{name: "boxOpacity", inputs: `{` + src + `}`, params: `{"boxOpacity":1.01}`, wantErr: "params.boxOpacity 1.01"},
		{name: "marginV", inputs: `{` + src + `}`, params: `{"marginV":2001}`, wantErr: "params.marginV 2001"},
		{name: "marginH", inputs: `{` + src + `}`, params: `{"marginH":-1}`, wantErr: "params.marginH -1"},
		{name: "maxCharsPerLine", inputs: `{` + src + `}`, params: `{"maxCharsPerLine":9}`, wantErr: "params.maxCharsPerLine 9"},
		{name: "colour", inputs: `{` + src + `}`, params: `{"fontColor":"white"}`, wantErr: `params.fontColor "white"`},
		{name: "boxColor", inputs: `{` + src + `}`, params: `{"boxColor":"#12345"}`, wantErr: `params.boxColor`},
		{name: "bold type", inputs: `{` + src + `}`, params: `{"bold":"yes"}`, wantErr: "params.bold must be a boolean"},
		{name: "position", inputs: `{` + src + `}`, params: `{"position":"middle"}`, wantErr: "params.position"},
		{name: "alignment", inputs: `{` + src + `}`, params: `{"alignment":"justify"}`, wantErr: "params.alignment"},
		{name: "unknown font", inputs: `{` + src + `}`, params: `{"fontFamily":"Comic Sans MS"}`, wantErr: `params.fontFamily "Comic Sans MS" is not an installed font`},
		{name: "font path", inputs: `{` + src + `}`, params: `{"fontFamily":"/etc/passwd:style=x"}`, wantErr: `params.fontFamily`},
		{name: "language code", inputs: `{` + src + `}`, params: `{"language":"english"}`, wantErr: `params.language "english" must be auto or an ISO-639-1`},
		{name: "language unsupported", inputs: `{` + src + `}`, params: `{"language":"de"}`, wantErr: `params.language "de" is not supported`},
		{name: "no transcriber", typ: &captionburn.Type{}, inputs: `{` + src + `}`, wantErr: "no transcriber is configured"},
		{name: "no transcriber but subtitles", typ: &captionburn.Type{}, inputs: `{` + src + `,"subtitles":"https://example.com/a.srt"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := jobtype.Request{Type: captionburn.Name}
			if tc.inputs != "" {
				req.Inputs = json.RawMessage(tc.inputs)
			}
			if tc.params != "" {
				req.Params = json.RawMessage(tc.params)
			}
			ty := typ
			if tc.typ != nil {
				ty = *tc.typ
			}
			spec, err := ty.Prepare(req, jobtype.Env{AssetURLPrefix: prefix})
			if tc.wantErr != "" {
				if problem.CodeOf(err) != problem.CodeValidation || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want VALIDATION_ERROR containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := jobtype.Spec{Class: job.ClassCPU, Timeout: captionburn.Timeout, Assets: tc.wantAssets}
			if diff := cmp.Diff(want, spec); diff != "" {
				t.Fatal(diff)
			}
		})
	}
}

func TestParseStyle(t *testing.T) {
	t.Parallel()
	r, err := captionburn.Parse(json.RawMessage(`{"source":"https://example.com/a.mp4"}`),
		json.RawMessage(`{"fontColor":"#80FF0000","boxEnabled":true,"boxOpacity":0.5,"position":"center","alignment":"right","maxCharsPerLine":20}`))
	if err != nil {
		t.Fatal(err)
	}
	want := subtitle.DefaultStyle
	want.FontColor = subtitle.Color{R: 255, A: 0x80}
	want.Box, want.BoxOpacity = true, 0.5
	want.Position, want.Alignment = subtitle.Center, subtitle.Right
	if diff := cmp.Diff(captionburn.Params{Language: "auto", Style: want, MaxCharsPerLine: 20}, r.Params); diff != "" {
		t.Fatal(diff)
	}
}
