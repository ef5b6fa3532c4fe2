package transcribe_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/adapters/safehttp"
	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/adapters/transcribe"
	"github.com/mediajobs/mediajobs/core/subtitle"

	"github.com/mediajobs/mediajobs/adapters/testenv"
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

// speech makes 16 kHz mono WAV of espeak-ng saying text in a directory the sandbox user can
// reach, and returns its path and the speech's duration.
func speech(t *testing.T, text string) (string, time.Duration) {
	t.Helper()
	if _, err := exec.LookPath("espeak-ng"); err != nil {
		testenv.Missing(t, "espeak-ng (scripts/deps.sh installs it)", err)
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	raw := filepath.Join(dir, "raw.wav")
	if out, err := exec.Command("espeak-ng", "-w", raw, text).CombinedOutput(); err != nil {
		t.Fatalf("espeak-ng: %v %s", err, out)
	}
	wav := filepath.Join(dir, "audio.wav")
	if out, err := exec.Command("ffmpeg", "-v", "error", "-i", raw, "-ar", "16000", "-ac", "1", "-c:a", "pcm_s16le", wav).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v %s", err, out)
	}
	st, err := os.Stat(wav)
	if err != nil {
		t.Fatal(err)
	}
	return wav, time.Duration((st.Size() - 44) * int64(time.Second) / 32000)
}

func TestPocketsphinxInSandbox(t *testing.T) {
	t.Parallel()
	if err := sandbox.Available(); err != nil {
		testenv.Missing(t, "the bubblewrap sandbox (scripts/deps.sh installs bubblewrap)", err)
	}
	if _, err := os.Stat(transcribe.PocketsphinxProgram); err != nil {
		testenv.Missing(t, "pocketsphinx (scripts/deps.sh installs it)", err)
	}
	sb, err := transcribe.NewSandbox()
	if err != nil {
		t.Fatal(err)
	}
	wav, dur := speech(t, "hello world this is a test")
	words, err := transcribe.Pocketsphinx{Sandbox: sb}.Transcribe(context.Background(), wav, "en")
	if err != nil {
		t.Fatal(err)
	}
	if len(words) < 2 {
		t.Fatalf("words: %+v", words)
	}
	for _, w := range words {
		if w.Start < 0 || w.End < w.Start || w.End > dur+100*time.Millisecond {
			t.Errorf("word %+v outside the speech (0..%v)", w, dur)
		}
	}
	if _, err := (transcribe.Pocketsphinx{Sandbox: sb}).Transcribe(context.Background(), wav, "fr"); err == nil {
		t.Error("french accepted")
	}
}

func loopbackClient() *http.Client {
	return safehttp.NewClient(safehttp.Config{AllowHTTP: true, AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
}

func TestOpenAI(t *testing.T) {
	t.Parallel()
	wav := filepath.Join(t.TempDir(), "audio.wav")
	if err := os.WriteFile(wav, []byte("RIFF fake wav"), 0o644); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		auth, model, format, gran, lang, file string
	}
	got := make(chan seen, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/audio/transcriptions" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			http.Error(w, err.Error(), 400)
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
		if r.FormValue("language") == "xx" {
			http.Error(w, `{"error":{"message":"bad language"}}`, http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"text": "hola mundo", "language": "spanish", "duration": 2.0,
			"words": []map[string]any{{"word": "hola", "start": 0.1, "end": 0.5}, {"word": " mundo", "start": 0.6, "end": 1.2}}})
	}))
	defer srv.Close()
	o := transcribe.OpenAI{URL: srv.URL, Key: "sk-test", Client: loopbackClient(), Langs: []string{"es"}}
	words, err := o.Transcribe(context.Background(), wav, "es")
	if err != nil {
		t.Fatal(err)
	}
	want := []subtitle.Word{{Text: "hola", Start: ms(100), End: ms(500)}, {Text: "mundo", Start: ms(600), End: ms(1200)}}
	if diff := cmp.Diff(want, words); diff != "" {
		t.Fatal(diff)
	}
	if diff := cmp.Diff(seen{"Bearer sk-test", "whisper-1", "verbose_json", "word", "es", "RIFF fake wav"}, <-got, cmp.AllowUnexported(seen{})); diff != "" {
		t.Fatal(diff)
	}
	if _, err := o.Transcribe(context.Background(), wav, "xx"); err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("error status: %v", err)
	}
	<-got
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
