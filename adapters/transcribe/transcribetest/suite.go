package transcribetest

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/mediajobs/mediajobs/core/jobtype/captionburn"
	"github.com/mediajobs/mediajobs/core/porttest"
	"github.com/mediajobs/mediajobs/core/subtitle"
)

// Features says which languages a transcriber takes; the suite holds it to that claim.
type Features struct {
	// Languages are the ISO-639-1 codes the transcriber takes: for a transcribe.Engine, its
	// Languages(), which is what caption jobs are admitted with. The suite speaks a clip in
	// each (espeak-ng must have a voice for it) and expects words back; a code outside them must
	// fail with an error that names it, whether the adapter refuses it itself or passes on its
	// server's refusal. "auto" is taken by every transcriber and is not listed.
	Languages []string
}

// Constructor returns the transcriber under test. Each test calls it once and may call the
// transcriber it gets concurrently, as a runner working on several jobs does.
type Constructor func(t *testing.T) captionburn.Transcriber

// TestTranscriber runs the suite: each test below, in parallel, against transcribers that
// newTranscriber makes. An adapter's own test calls it once, after ending the test through
// testenv.Missing when what the adapter needs (a program, a sandbox) is not installed.
func TestTranscriber(t *testing.T, f Features, newTranscriber Constructor) {
	t.Helper()
	if len(f.Languages) == 0 {
		t.Fatal("Features.Languages is empty: a transcriber takes at least one language")
	}
	tests := []func(t *testing.T, f Features, newTranscriber Constructor){
		TestTranscribesSpeech,
		TestWordTimings,
		TestRefusesOtherLanguages,
		TestSilenceHasNoWords,
		TestEmptyClipHasNoWords,
		TestMissingFile,
		TestCanceledBeforeStart,
		TestCanceledWhileRunning,
	}
	porttest.RunParallel(t, f, newTranscriber, tests...)
}

// phrases are what the suite says in a language; a language without one says the English
// phrase in its own voice.
var phrases = map[string]string{
	"en": "hello world this is a test",
	"es": "hola mundo esto es una prueba",
	"fr": "bonjour le monde ceci est un essai",
	"de": "hallo welt das ist ein test",
}

func phrase(lang string) string {
	if p, ok := phrases[lang]; ok {
		return p
	}
	return phrases["en"]
}

// speechLanguage is the language the suite speaks where the test is not about languages:
// English when the transcriber takes it.
func speechLanguage(f Features) string {
	if slices.Contains(f.Languages, "en") {
		return "en"
	}
	return f.Languages[0]
}

// TestTranscribesSpeech: a short clip spoken in each language the transcriber takes, and in
// its speech language as "auto", comes back as words, each a non-empty word with no spaces.
// Engines hear synthetic speech badly (pocketsphinx hears espeak-ng's "hello world this is a
// test" as "would you do that too"), so what the words say is not checked.
func TestTranscribesSpeech(t *testing.T, f Features, newTranscriber Constructor) {
	tr := newTranscriber(t)
	for _, lang := range append(slices.Clone(f.Languages), "auto") {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			voice := lang
			if lang == "auto" {
				voice = speechLanguage(f)
			}
			clip := Speech(t, SpeechParams{Language: voice, Text: phrase(voice)})

			words, err := tr.Transcribe(context.Background(), clip.Path, lang)

			if err != nil {
				t.Fatalf("Transcribe(%s speech, %q): %v", voice, lang, err)
			}
			if len(words) == 0 {
				t.Fatalf("Transcribe(%s speech, %q) found no words", voice, lang)
			}
			for _, w := range words {
				if w.Text == "" || strings.ContainsFunc(w.Text, unicode.IsSpace) {
					t.Errorf("word %q: want one word, no spaces", w.Text)
				}
			}
		})
	}
}

// wordSlack is how far into the silence around speech a word may be timed: where a word
// starts and ends is an engine's judgement, and a tenth of a second still shows that words
// are timed from the start of the clip, after a second of silence.
const wordSlack = 100 * time.Millisecond

// TestWordTimings: the words of speech between a second of silence on either side are in
// order, do not overlap, and lie where the speech is.
func TestWordTimings(t *testing.T, f Features, newTranscriber Constructor) {
	lang := speechLanguage(f)
	clip := Speech(t, SpeechParams{Language: lang, Text: phrase(lang), Lead: time.Second, Trail: time.Second})

	words, err := newTranscriber(t).Transcribe(context.Background(), clip.Path, lang)

	if err != nil {
		t.Fatal(err)
	}
	if len(words) == 0 {
		t.Fatal("no words")
	}
	var prev subtitle.Word
	for i, w := range words {
		switch {
		case w.End < w.Start:
			t.Errorf("word %d %+v ends before it starts", i, w)
		case w.Start < clip.SpeechStart-wordSlack || w.End > clip.SpeechEnd+wordSlack:
			t.Errorf("word %d %+v is outside the speech, %v..%v of the %v clip", i, w, clip.SpeechStart, clip.SpeechEnd, clip.Duration)
		case i > 0 && w.Start < prev.End:
			t.Errorf("word %d %+v starts before word %d %+v ends", i, w, i-1, prev)
		}
		prev = w
	}
}

// TestRefusesOtherLanguages: a language the transcriber does not take fails, with an error that
// names it, and no words.
func TestRefusesOtherLanguages(t *testing.T, f Features, newTranscriber Constructor) {
	// Codes that name themselves in an error and appear in no other word of one.
	candidates := []string{"zu", "xh", "ig"}
	lang := candidates[slices.IndexFunc(candidates, func(l string) bool { return !slices.Contains(f.Languages, l) })]
	clip := Speech(t, SpeechParams{Language: speechLanguage(f), Text: phrase(speechLanguage(f))})

	words, err := newTranscriber(t).Transcribe(context.Background(), clip.Path, lang)

	if err == nil {
		t.Fatalf("Transcribe(%q) took a language not in Features.Languages %q and found %d words", lang, f.Languages, len(words))
	}
	if !strings.Contains(err.Error(), lang) {
		t.Errorf("Transcribe(%q): the error does not name the language: %v", lang, err)
	}
	if len(words) != 0 {
		t.Errorf("Transcribe(%q) failed and still returned %d words", lang, len(words))
	}
}

// TestSilenceHasNoWords: two seconds of silence are no words, and no error: the runner, not the
// transcriber, decides that a video without speech cannot be captioned.
func TestSilenceHasNoWords(t *testing.T, f Features, newTranscriber Constructor) {
	clip := Silence(t, 2*time.Second)

	words, err := newTranscriber(t).Transcribe(context.Background(), clip.Path, speechLanguage(f))

	if err != nil || len(words) != 0 {
		t.Fatalf("Transcribe(silence) = %+v, %v; want no words, no error", words, err)
	}
}

// TestEmptyClipHasNoWords: a WAV file with no samples is no words. It may be an error: OpenAI
// refuses audio under a tenth of a second.
func TestEmptyClipHasNoWords(t *testing.T, f Features, newTranscriber Constructor) {
	clip := Silence(t, 0)

	words, err := newTranscriber(t).Transcribe(context.Background(), clip.Path, speechLanguage(f))

	if len(words) != 0 {
		t.Fatalf("Transcribe(no samples) = %+v, %v; want no words", words, err)
	}
	if err != nil {
		t.Logf("refused: %v", err)
	}
}

// TestMissingFile: a path with no file fails with an error that is fs.ErrNotExist.
func TestMissingFile(t *testing.T, f Features, newTranscriber Constructor) {
	path := filepath.Join(clipDir(t), "missing.wav")

	words, err := newTranscriber(t).Transcribe(context.Background(), path, speechLanguage(f))

	if !errors.Is(err, fs.ErrNotExist) || len(words) != 0 {
		t.Fatalf("Transcribe(missing file) = %+v, %v; want an error that is fs.ErrNotExist", words, err)
	}
}

// TestCanceledBeforeStart: a context already canceled fails with its error.
func TestCanceledBeforeStart(t *testing.T, f Features, newTranscriber Constructor) {
	lang := speechLanguage(f)
	clip := Speech(t, SpeechParams{Language: lang, Text: phrase(lang)})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	words, err := newTranscriber(t).Transcribe(ctx, clip.Path, lang)

	if !errors.Is(err, context.Canceled) || len(words) != 0 {
		t.Fatalf("Transcribe(canceled ctx) = %+v, %v; want an error that is context.Canceled", words, err)
	}
}

// TestCanceledWhileRunning: a context that ends during the transcription of a minute of speech
// ends it with the context's error, as the runner's job deadline does.
func TestCanceledWhileRunning(t *testing.T, f Features, newTranscriber Constructor) {
	lang := speechLanguage(f)
	clip := Speech(t, SpeechParams{Language: lang, Text: strings.Repeat(phrase(lang)+". ", 45)})
	tr := newTranscriber(t)
	// The deadline is no wait for work to happen: wherever it lands, before the transcription
	// starts or during it, Transcribe must return its error. One that ignored it would go on
	// to transcribe the whole minute, which takes longer, and return words.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()

	words, err := tr.Transcribe(ctx, clip.Path, lang)

	if !errors.Is(err, context.DeadlineExceeded) || len(words) != 0 {
		t.Fatalf("Transcribe(ctx past its deadline, %v of speech) = %d words, %v; want an error that is context.DeadlineExceeded", clip.Duration, len(words), err)
	}
	t.Logf("%v of speech: %v", clip.Duration, err)
}
