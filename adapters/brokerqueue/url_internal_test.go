package brokerqueue

import (
	"strings"
	"testing"
)

func TestParseNATSURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw, url, stream, err string
	}{
		{raw: "nats://127.0.0.1:4222", url: "nats://127.0.0.1:4222"},
		{raw: "nats://127.0.0.1:4222?stream=TEAM_A", url: "nats://127.0.0.1:4222", stream: "TEAM_A"},
		{raw: "nats://u:p@host:4222/?stream=X", url: "nats://u:p@host:4222/", stream: "X"},
		{raw: "nats://host:4222?strem=X", err: `unknown parameter "strem"`},
		{raw: "nats://host:4222?stream=X&token=1", err: `unknown parameter "token"`},
		{raw: "nats://ho st:4222", err: "invalid character"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			t.Parallel()
			cfg, err := parseNATSURL(tt.raw)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("parseNATSURL(%q) = %+v, %v; want an error with %q", tt.raw, cfg, err, tt.err)
				}
				return
			}
			if err != nil || cfg.URL != tt.url || cfg.Stream != tt.stream {
				t.Fatalf("parseNATSURL(%q) = %+v, %v; want URL %q stream %q", tt.raw, cfg, err, tt.url, tt.stream)
			}
		})
	}
}
