package captionburn

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/subtitle"
)

// Name is the type's name.
const Name = "caption.burn"

// Timeout is the time limit a caption job asks for (it has no timeout param); the plan cap
// lowers it.
const Timeout = 15 * time.Minute

// Input names.
const (
	InputSource     = "source"
	InputSubtitles  = "subtitles"
	InputTranscript = "transcript"
)

// FontResolver tells whether a font family resolves to an installed font of the renderer.
type FontResolver interface {
	Has(family string) bool
}

// Transcriber turns the speech of a 16 kHz mono WAV file into timed words. language is "auto" or
// an ISO-639-1 code the engine was configured for.
type Transcriber interface {
	Transcribe(ctx context.Context, audioPath, language string) ([]subtitle.Word, error)
}

// Request is a parsed caption.burn job.
type Request struct {
	Source, Subtitles string
	Params            Params
}

// Parse reads inputs and params strictly and checks every range. It does not check fonts or
// languages against what is installed: Type does, at submit.
func Parse(rawInputs, rawParams json.RawMessage) (Request, error) {
	in, err := URLInputs(rawInputs, []string{InputSource}, []string{InputSubtitles})
	if err != nil {
		return Request{}, err
	}
	var raw RawParams
	if err := DecodeParams(rawParams, &raw); err != nil {
		return Request{}, err
	}
	p, err := raw.Resolve(subtitle.DefaultStyle)
	if err != nil {
		return Request{}, err
	}
	return Request{Source: in[InputSource], Subtitles: in[InputSubtitles], Params: p}, nil
}

// Inputs are the request's URL inputs by name.
func (r Request) Inputs() map[string]string {
	m := map[string]string{InputSource: r.Source}
	if r.Subtitles != "" {
		m[InputSubtitles] = r.Subtitles
	}
	return m
}

// Type is the registered caption.burn type.
type Type struct {
	// Fonts resolves params.fontFamily; nil accepts any well-formed name.
	Fonts FontResolver
	// Languages are the ISO-639-1 codes the configured transcribers support; empty when none is
	// configured. "auto" is accepted whenever one is.
	Languages []string
}

// Name is "caption.burn".
func (Type) Name() string { return Name }

// Prepare validates the request: inputs through the validator's URL rules, params against the
// spec's table, the font against fontconfig and the language against the transcribers.
func (t Type) Prepare(req jobtype.Request, env jobtype.Env) (jobtype.Spec, error) {
	r, err := Parse(req.Inputs, req.Params)
	if err != nil {
		return jobtype.Spec{}, err
	}
	return t.Check(r.Inputs(), r.Subtitles == "", r.Params, env)
}

// Check is the part of Prepare the caption types share.
func (t Type) Check(inputs map[string]string, transcribe bool, p Params, env jobtype.Env) (jobtype.Spec, error) {
	assets, err := CheckURLs(inputs, env)
	if err != nil {
		return jobtype.Spec{}, err
	}
	if t.Fonts != nil && !t.Fonts.Has(p.Style.FontFamily) {
		return jobtype.Spec{}, problem.Reject(problem.CodeValidation, "params.fontFamily %q is not an installed font", p.Style.FontFamily)
	}
	if transcribe {
		if err := t.CheckLanguage(p.Language); err != nil {
			return jobtype.Spec{}, err
		}
	}
	return jobtype.Spec{Class: job.ClassCPU, Timeout: Timeout, Assets: assets}, nil
}

// CheckLanguage refuses a transcription language no configured engine supports.
func (t Type) CheckLanguage(lang string) error {
	if len(t.Languages) == 0 {
		return problem.Reject(problem.CodeValidation, "inputs.subtitles is required: no transcriber is configured")
	}
	if lang != "auto" && !slices.Contains(t.Languages, lang) {
		return problem.Reject(problem.CodeValidation, "params.language %q is not supported by the configured transcribers; supported: auto, %s",
			lang, strings.Join(t.Languages, ", "))
	}
	return nil
}
