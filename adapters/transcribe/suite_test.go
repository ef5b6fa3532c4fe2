package transcribe_test

import (
	"context"
	"os"
	"testing"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/adapters/transcribe"
	"github.com/mediajobs/mediajobs/adapters/transcribe/transcribetest"
	"github.com/mediajobs/mediajobs/core/jobtype/captionburn"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

// multilingual are the languages the fake OpenAI-compatible server takes.
var multilingual = []string{"en", "es"}

func newOpenAI(t *testing.T) transcribe.OpenAI {
	srv := transcribetest.NewServer(t, transcribetest.ServerConfig{Languages: multilingual, Key: "sk-suite"})
	return transcribe.OpenAI{URL: srv.URL, Key: "sk-suite", Client: loopbackClient(), Langs: multilingual}
}

// pocketsphinxSandbox is the sandbox pocketsphinx runs in, or the test ends (testenv.Missing).
func pocketsphinxSandbox(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	if _, err := os.Stat(transcribe.PocketsphinxProgram); err != nil {
		testenv.Missing(t, "pocketsphinx (scripts/deps.sh installs it)", err)
	}
	sb, err := transcribe.NewSandbox()
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Available(context.Background()); err != nil {
		testenv.Missing(t, "the bubblewrap sandbox (scripts/deps.sh installs bubblewrap)", err)
	}
	return sb
}

func TestOpenAISuite(t *testing.T) {
	t.Parallel()
	transcribetest.TestTranscriber(t, transcribetest.Features{Languages: multilingual},
		func(t *testing.T) captionburn.Transcriber { return newOpenAI(t) })
}

func TestPocketsphinxSuite(t *testing.T) {
	t.Parallel()
	sb := pocketsphinxSandbox(t)
	transcribetest.TestTranscriber(t, transcribetest.Features{Languages: transcribe.Pocketsphinx{}.Languages()},
		func(*testing.T) captionburn.Transcriber { return transcribe.Pocketsphinx{Sandbox: sb} })
}

// TestRouterSuite runs the suite over the router of the full setup: pocketsphinx for English,
// the OpenAI-compatible server for the rest and for "auto".
func TestRouterSuite(t *testing.T) {
	t.Parallel()
	sb := pocketsphinxSandbox(t)
	features := transcribetest.Features{Languages: transcribe.Router{Fast: transcribe.Pocketsphinx{}, Multilingual: transcribe.OpenAI{Langs: multilingual}}.Languages()}
	transcribetest.TestTranscriber(t, features, func(t *testing.T) captionburn.Transcriber {
		return transcribe.Router{Fast: transcribe.Pocketsphinx{Sandbox: sb}, Multilingual: newOpenAI(t)}
	})
}
