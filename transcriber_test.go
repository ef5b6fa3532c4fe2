package mediajobs

import (
	"slices"
	"strings"
	"testing"
)

func TestTranscriberConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     Config
		want    []string // languages that must be offered
		wantNot []string
		wantErr string
	}{
		{name: "embedded only", cfg: Config{}, wantNot: []string{"fr", "de"}},
		{name: "server with default languages", cfg: Config{Transcription: Transcription{TranscribeURL: "http://127.0.0.1:8081", TranscribeLanguages: defaultTranscribeLanguages}},
			want: []string{"fr", "de", "ja"}},
		{name: "server with chosen languages", cfg: Config{Transcription: Transcription{TranscribeURL: "https://whisper.example", TranscribeLanguages: " fr , es,"}},
			want: []string{"fr", "es"}, wantNot: []string{"de"}},
		{name: "not a URL", cfg: Config{Transcription: Transcription{TranscribeURL: "whisper:8081"}}, wantErr: "not an http(s) URL"},
		{name: "wrong scheme", cfg: Config{Transcription: Transcription{TranscribeURL: "ftp://x"}}, wantErr: "not an http(s) URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := tc.cfg.transcriber()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			langs := r.Languages()
			for _, l := range tc.want {
				if !slices.Contains(langs, l) {
					t.Errorf("language %s not offered: %v", l, langs)
				}
			}
			for _, l := range tc.wantNot {
				if slices.Contains(langs, l) {
					t.Errorf("language %s offered without a server: %v", l, langs)
				}
			}
		})
	}
}
