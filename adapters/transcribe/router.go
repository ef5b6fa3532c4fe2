package transcribe

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"

	"github.com/mediajobs/mediajobs/core/subtitle"
)

// Engine is a transcriber that says which languages it takes.
type Engine interface {
	Transcribe(ctx context.Context, audioPath, language string) ([]subtitle.Word, error)
	Languages() []string
}

// Router sends English to the fast engine and every other language to the multilingual one;
// "auto" goes to the multilingual engine, which detects, or to the fast one as English when no
// multilingual engine is configured. Either may be nil.
type Router struct {
	Fast, Multilingual Engine
}

// Languages are the codes some engine takes, sorted.
func (r Router) Languages() []string {
	var all []string
	for _, e := range []Engine{r.Fast, r.Multilingual} {
		if e != nil {
			for _, l := range e.Languages() {
				if !slices.Contains(all, l) {
					all = append(all, l)
				}
			}
		}
	}
	sort.Strings(all)
	return all
}

// Transcribe picks the engine for language.
func (r Router) Transcribe(ctx context.Context, audioPath, language string) ([]subtitle.Word, error) {
	switch {
	case r.Fast != nil && (slices.Contains(r.Fast.Languages(), language) || language == "auto" && r.Multilingual == nil):
		return r.Fast.Transcribe(ctx, audioPath, language)
	case r.Multilingual != nil && (language == "auto" || slices.Contains(r.Multilingual.Languages(), language)):
		return r.Multilingual.Transcribe(ctx, audioPath, language)
	}
	return nil, fmt.Errorf("no transcriber is configured for language %q", language)
}

// Embedded is the router of the embedded default: pocketsphinx in its own sandbox when it is
// installed, and no engine otherwise (transcription jobs are then refused at submit).
func Embedded() (Router, error) {
	if _, err := os.Stat(PocketsphinxProgram); err != nil {
		return Router{}, nil
	}
	sb, err := NewSandbox()
	if err != nil {
		return Router{}, err
	}
	return Router{Fast: Pocketsphinx{Sandbox: sb}}, nil
}
