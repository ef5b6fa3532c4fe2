package transcribe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/mediajobs/mediajobs/core/subtitle"
)

// OpenAI is a client of an OpenAI-compatible /v1/audio/transcriptions endpoint (OpenAI,
// whisper.cpp's server, faster-whisper-server) asking for word timestamps.
type OpenAI struct {
	// URL is the server's base URL ("https://api.openai.com", "http://whisper:8080"); the path
	// /v1/audio/transcriptions is added unless URL already ends with it.
	URL string
	Key string // sent as a bearer token when set
	// Model is the model field; default "whisper-1".
	Model string
	// Client makes the request: a safehttp client whose policy admits the configured server.
	Client *http.Client
	// Langs are the ISO-639-1 codes the server is trusted with.
	Langs []string
	// MaxResponse caps the response body; default 32 MiB.
	MaxResponse int64
}

// Languages are the configured languages.
func (o OpenAI) Languages() []string { return o.Langs }

// Transcribe uploads the audio and reads the words of the verbose_json answer; "auto" leaves the
// language to the server.
func (o OpenAI) Transcribe(ctx context.Context, audioPath, language string) ([]subtitle.Word, error) {
	f, err := os.Open(audioPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	model := o.Model
	if model == "" {
		model = "whisper-1"
	}
	fields := [][2]string{{"model", model}, {"response_format", "verbose_json"}, {"timestamp_granularities[]", "word"}}
	if language != "" && language != "auto" {
		fields = append(fields, [2]string{"language", language})
	}
	for _, kv := range fields {
		if err := mw.WriteField(kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	part, err := mw.CreateFormFile("file", filepath.Base(audioPath))
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(part, f); err != nil {
		return nil, err
	}
	if err := mw.Close(); err != nil {
		return nil, err
	}
	url := strings.TrimRight(o.URL, "/")
	if !strings.HasSuffix(url, "/v1/audio/transcriptions") {
		url += "/v1/audio/transcriptions"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, &body)
	if err != nil {
		return nil, fmt.Errorf("transcription server: %w", err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if o.Key != "" {
		req.Header.Set("Authorization", "Bearer "+o.Key)
	}
	client := o.Client
	if client == nil {
		return nil, fmt.Errorf("transcription server: no HTTP client configured")
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("transcription server: %w", err)
	}
	defer resp.Body.Close()
	limit := o.MaxResponse
	if limit <= 0 {
		limit = 32 << 20
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("transcription server: %w", err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("transcription server: answer larger than %d bytes", limit)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("transcription server answered %s: %s", resp.Status, strings.TrimSpace(string(data[:min(len(data), 300)])))
	}
	return ParseVerboseJSON(data)
}

type timed struct {
	Word  string  `json:"word"`
	Text  string  `json:"text"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

// ParseVerboseJSON reads the words of a verbose_json transcription: the top-level "words" list,
// or the words inside each segment (whisper.cpp), or failing both the segments themselves split
// into words.
func ParseVerboseJSON(data []byte) ([]subtitle.Word, error) {
	var v struct {
		Words    []timed `json:"words"`
		Segments []struct {
			timed
			Words []timed `json:"words"`
		} `json:"segments"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("transcription server: answer is not verbose_json: %v", err)
	}
	list := v.Words
	if len(list) == 0 {
		for _, s := range v.Segments {
			list = append(list, s.Words...)
		}
	}
	var words []subtitle.Word
	for _, w := range list {
		text := strings.TrimSpace(w.Word + w.Text)
		if text == "" || w.End < w.Start || w.Start < 0 {
			continue
		}
		words = append(words, subtitle.Word{Text: text, Start: secs(w.Start), End: secs(w.End)})
	}
	if len(words) == 0 && len(v.Segments) > 0 {
		var cues []subtitle.Cue
		for _, s := range v.Segments {
			if t := strings.TrimSpace(s.Text); t != "" && s.End > s.Start && s.Start >= 0 {
				cues = append(cues, subtitle.Cue{Start: secs(s.Start), End: secs(s.End), Text: t})
			}
		}
		words = subtitle.WordsFromCues(cues)
	}
	return words, nil
}
