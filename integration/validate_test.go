package integration

import (
	"strings"
	"testing"
)

// TestValidateServer: `mediajobs validate --server URL` asks the service, and exits as the
// local engines do.
func TestValidateServer(t *testing.T) {
	t.Parallel()
	srv := startServer(t, serverOpts{Backend: sqliteBackend})
	tests := []struct {
		name     string
		args     []string
		wantCode int
		stdout   string
		stderr   string
	}{
		{"valid", []string{"validate", "--server", srv.Base, "ffmpeg -i https://example.com/a.mp4 -c:v libx264 out.mp4"}, 0, `"valid":true`, ""},
		{"refused", []string{"validate", "ffmpeg -i https://example.com/a.mp4 -filter_script x out.mp4", "--server", srv.Base}, 1, "-filter_script", ""},
		{"options are local only", []string{"validate", "--server", srv.Base, "--options", `{"compute":"cpu"}`, "ffmpeg -i a.mp4 out.mp4"}, 2, "", "--options"},
		{"server down", []string{"validate", "--server", "http://127.0.0.1:1", "ffmpeg -i a.mp4 out.mp4"}, 2, "", "127.0.0.1:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := mediajobs(t, "", nil, tt.args...)
			if r.code != tt.wantCode || !strings.Contains(r.stdout, tt.stdout) || !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("exit %d, want %d\nstdout %s\nstderr %s", r.code, tt.wantCode, r.stdout, r.stderr)
			}
		})
	}
}
