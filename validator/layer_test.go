package validator

import (
	"strings"
	"testing"
)

const testURL = "https://cdn.example.com/in.mp4"

// layerCase is one row of a layer's table: a command that passes (wantMsg == "") or is refused
// by the table's layer with a message containing wantMsg.
type layerCase struct {
	name    string
	command string
	opts    Options
	wantMsg string
}

func runLayerTable(t *testing.T, layer string, cases []layerCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := Validate(tc.command, tc.opts)
			if tc.wantMsg == "" {
				if !r.Valid {
					t.Fatalf("Validate(%q) refused: %s: %s", tc.command, r.Err.Layer, r.Error)
				}
				checkAccepted(t, tc.command, tc.opts, r)
				return
			}
			if r.Valid {
				t.Fatalf("Validate(%q) accepted, want %s error containing %q", tc.command, layer, tc.wantMsg)
			}
			if r.Err.Layer != layer || !strings.Contains(r.Error, tc.wantMsg) {
				t.Fatalf("Validate(%q) = %s error %q, want %s error containing %q", tc.command, r.Err.Layer, r.Error, layer, tc.wantMsg)
			}
			if r.Error != r.Err.Message {
				t.Fatalf("Result.Error %q differs from Err.Message %q", r.Error, r.Err.Message)
			}
		})
	}
}
