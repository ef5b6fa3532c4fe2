package transcribe_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/adapters/safehttp"
	"github.com/mediajobs/mediajobs/adapters/transcribe"
	"github.com/mediajobs/mediajobs/core/subtitle"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestParsePocketsphinx(t *testing.T) {
	t.Parallel()
	out := "would you do that too\n<s> 0.000 0.320 0.999500\nwould 0.330 0.530 0.259096\n<sil> 0.540 0.700 0.98\n" +
		"[NOISE] 0.7 0.71 0.5\nthat(2) 0.920 1.050 0.154476\n</s> 1.240 1.670 1.000000\ngarbage 1 x 2\n"
	want := []subtitle.Word{{Text: "would", Start: ms(330), End: ms(530)}, {Text: "that", Start: ms(920), End: ms(1050)}}
	if diff := cmp.Diff(want, transcribe.ParsePocketsphinx([]byte(out))); diff != "" {
		t.Fatal(diff)
	}
}

func loopbackClient() *http.Client {
	return safehttp.NewClient(safehttp.Config{AllowHTTP: true, AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
}

// TestOpenAI checks the form the client sends, which the fake server of the suite does not look
// at this closely, and that the production policy keeps it from a loopback server.
func TestOpenAI(t *testing.T) {
	t.Parallel()
	wav := filepath.Join(t.TempDir(), "audio.wav")
	if err := os.WriteFile(wav, []byte("RIFF fake wav"), 0o644); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		auth, model, format, gran, lang, file string
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/audio/transcriptions" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		f, _, err := r.FormFile("file")
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		b, _ := io.ReadAll(f)
		got <- seen{r.Header.Get("Authorization"), r.FormValue("model"), r.FormValue("response_format"),
			r.FormValue("timestamp_granularities[]"), r.FormValue("language"), string(b)}
		_, _ = io.WriteString(w, `{"text":""}`)
	}))
	defer srv.Close()
	o := transcribe.OpenAI{URL: srv.URL, Key: "sk-test", Client: loopbackClient(), Langs: []string{"es"}}
	if _, err := o.Transcribe(context.Background(), wav, "es"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(seen{"Bearer sk-test", "whisper-1", "verbose_json", "word", "es", "RIFF fake wav"}, <-got, cmp.AllowUnexported(seen{})); diff != "" {
		t.Fatal(diff)
	}
	// The production policy refuses the loopback server.
	blocked := transcribe.OpenAI{URL: srv.URL, Client: safehttp.NewClient(safehttp.Config{AllowHTTP: true})}
	if _, err := blocked.Transcribe(context.Background(), wav, "auto"); err == nil {
		t.Fatal("loopback server reached through the default policy")
	}
}

func TestParseVerboseJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		want     []subtitle.Word
	}{
		{"segment words", `{"segments":[{"text":"a b","start":0,"end":1,"words":[{"word":"a","start":0,"end":0.5},{"word":"b","start":0.5,"end":1}]}]}`,
			[]subtitle.Word{{Text: "a", Start: 0, End: ms(500)}, {Text: "b", Start: ms(500), End: ms(1000)}}},
		{"segments only", `{"segments":[{"text":" ab cd","start":1,"end":2}]}`,
			[]subtitle.Word{{Text: "ab", Start: ms(1000), End: ms(1500)}, {Text: "cd", Start: ms(1500), End: ms(2000)}}},
	}
	for _, tc := range tests {
		got, err := transcribe.ParseVerboseJSON([]byte(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: %s", tc.name, diff)
		}
	}
	if _, err := transcribe.ParseVerboseJSON([]byte("<html>")); err == nil {
		t.Error("html accepted")
	}
}

type fake struct {
	name  string
	langs []string
}

func (f fake) Languages() []string { return f.langs }
func (f fake) Transcribe(_ context.Context, _, lang string) ([]subtitle.Word, error) {
	return []subtitle.Word{{Text: f.name + ":" + lang}}, nil
}

func TestRouter(t *testing.T) {
	t.Parallel()
	both := transcribe.Router{Fast: fake{"fast", []string{"en"}}, Multilingual: fake{"multi", []string{"de", "en", "fr"}}}
	fastOnly := transcribe.Router{Fast: fake{"fast", []string{"en"}}}
	tests := []struct {
		r          transcribe.Router
		lang, want string
	}{
		{both, "en", "fast:en"}, {both, "fr", "multi:fr"}, {both, "auto", "multi:auto"},
		{fastOnly, "auto", "fast:auto"}, {fastOnly, "fr", ""},
	}
	for _, tc := range tests {
		words, err := tc.r.Transcribe(context.Background(), "x.wav", tc.lang)
		got := ""
		if err == nil {
			got = words[0].Text
		}
		if got != tc.want {
			t.Errorf("%s: got %q (%v), want %q", tc.lang, got, err, tc.want)
		}
	}
	if diff := cmp.Diff([]string{"de", "en", "fr"}, both.Languages()); diff != "" {
		t.Error(diff)
	}
}

func TestEmbedded(t *testing.T) {
	t.Parallel()
	r, err := transcribe.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(transcribe.PocketsphinxProgram); err == nil {
		if diff := cmp.Diff([]string{"en"}, r.Languages()); diff != "" {
			t.Fatal(diff)
		}
	}
}
