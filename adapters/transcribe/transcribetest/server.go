package transcribetest

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// ServerConfig says what the fake server takes and hears.
type ServerConfig struct {
	// Languages are the codes it takes in the language field; default en. Any other is
	// answered 400, as OpenAI answers a language it does not support.
	Languages []string
	// Key, when set, is the bearer token every request must carry.
	Key string
	// Transcript is what it hears in any audio that is not silent; default "hello world this
	// is a test", the suite's English phrase.
	Transcript string
}

// Server is a fake OpenAI-compatible POST /v1/audio/transcriptions. It checks the request as
// OpenAI does (bearer token, model, a file, the language), takes 16-bit PCM WAV only, and
// answers what the client asked for: verbose_json with "words" when timestamp_granularities[]
// includes word, "segments" when it includes segment or names neither, {"text"} otherwise.
// It hears cfg.Transcript spread evenly over the span where the audio is loud and nothing in
// silence, and it takes a twentieth of the audio's duration to answer, as a server decoding
// at twenty times real time does, so that a client's cancel can reach a request in flight.
type Server struct {
	URL string
	cfg ServerConfig
}

// NewServer starts a fake server, closed when t ends.
func NewServer(t *testing.T, cfg ServerConfig) *Server {
	t.Helper()
	if len(cfg.Languages) == 0 {
		cfg.Languages = []string{"en"}
	}
	if cfg.Transcript == "" {
		cfg.Transcript = phrases["en"]
	}
	s := &Server{cfg: cfg}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// OpenAI's answer to audio under 0.1 s.
const minAudio = 100 * time.Millisecond

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/audio/transcriptions" || r.Method != http.MethodPost {
		apiError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path))
		return
	}
	if s.cfg.Key != "" && r.Header.Get("Authorization") != "Bearer "+s.cfg.Key {
		apiError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "Incorrect API key provided.")
		return
	}
	// OpenAI's upload limit.
	if err := r.ParseMultipartForm(25 << 20); err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "", "Could not parse multipart form: "+err.Error())
		return
	}
	if r.FormValue("model") == "" {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "", "you must provide a model parameter")
		return
	}
	lang := r.FormValue("language")
	if lang != "" && !slices.Contains(s.cfg.Languages, lang) {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "unsupported_language", fmt.Sprintf("Language '%s' is not supported.", lang))
		return
	}
	f, _, err := r.FormFile("file")
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "", "No file was uploaded: "+err.Error())
		return
	}
	defer f.Close()
	audio, err := readWAV(f)
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "Invalid file format: "+err.Error())
		return
	}
	dur := audio.duration()
	if dur < minAudio {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "audio_too_short", "Audio file is too short. Minimum audio length is 0.1 seconds.")
		return
	}
	decoding := time.NewTimer(dur / 20)
	defer decoding.Stop()
	select {
	case <-decoding.C:
	case <-r.Context().Done():
		return
	}

	if lang == "" {
		lang = s.cfg.Languages[0] // what it "detects"
	}
	words := s.hear(audio)
	text := make([]string, len(words))
	for i, w := range words {
		text[i] = strings.TrimSpace(w.Word)
	}
	if r.FormValue("response_format") != "verbose_json" {
		writeJSON(w, map[string]any{"text": strings.Join(text, " ")})
		return
	}
	answer := map[string]any{"task": "transcribe", "language": lang, "duration": dur.Seconds(), "text": strings.Join(text, " ")}
	granularities := r.MultipartForm.Value["timestamp_granularities[]"]
	if slices.Contains(granularities, "word") {
		answer["words"] = words
	}
	if slices.Contains(granularities, "segment") || len(granularities) == 0 {
		segments := []map[string]any{}
		if len(words) > 0 {
			segments = append(segments, map[string]any{"id": 0, "start": words[0].Start, "end": words[len(words)-1].End, "text": " " + strings.Join(text, " ")})
		}
		answer["segments"] = segments
	}
	writeJSON(w, answer)
}

type word struct {
	Word  string  `json:"word"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

// hear spreads the transcript's words over the loud span of the audio, in whisper's
// centiseconds, each word ending before the next begins.
func (s *Server) hear(audio wav) []word {
	perFrame := audio.rate * audio.channels / 100 // 10 ms
	if perFrame == 0 {
		return nil
	}
	first, last := -1, -1
	for i := 0; i*perFrame < len(audio.samples); i++ {
		if loud(audio.samples[i*perFrame : min((i+1)*perFrame, len(audio.samples))]) {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return nil
	}
	span := last + 1 - first // in centiseconds
	texts := strings.Fields(s.cfg.Transcript)
	n := min(len(texts), span/2)
	if n == 0 {
		return nil
	}
	slot := span / n
	words := make([]word, n)
	for i := range words {
		start := first + i*slot
		words[i] = word{Word: " " + texts[i], Start: float64(start) / 100, End: float64(start+slot-1) / 100}
	}
	return words
}

// loud is a frame above -40 dBFS.
func loud(frame []int16) bool {
	var sum float64
	for _, v := range frame {
		sum += float64(v) * float64(v)
	}
	return math.Sqrt(sum/float64(len(frame))) > 328
}

func apiError(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
