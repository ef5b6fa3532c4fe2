package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/validator"
)

// TestValidateOpensTheOperatorsRanges: POST /ffmpeg/validate validates with the server's allow
// list (Options.AllowPrivateNetworks), as POST /jobs does, so that it does not call invalid a
// job the server would take; ranges outside it stay refused, naming the address.
func TestValidateOpensTheOperatorsRanges(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{allowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})

	tests := []struct {
		url, refusal string // refusal "": valid
	}{
		{url: "https://127.0.0.1:8443/a.mp4"},
		{url: "https://[::ffff:127.0.0.1]/a.mp4"},
		{url: "https://10.0.0.1/a.mp4", refusal: "non-public address 10.0.0.1 (private)"},
		{url: "https://[::1]/a.mp4", refusal: "non-public address ::1 (loopback)"},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			t.Parallel()
			body, _ := json.Marshal(map[string]any{"command": "ffmpeg -i in.mp4 out.mp4", "inputs": map[string]string{"in.mp4": tc.url}})
			res := b.do(t, request{method: "POST", path: "/ffmpeg/validate", body: body})
			if res.status != http.StatusOK {
				t.Fatalf("status %d, body %s", res.status, res.body)
			}
			var got validator.Result
			res.data(t, &got)
			if tc.refusal == "" && !got.Valid {
				t.Fatalf("refused: %s", got.Error)
			}
			if tc.refusal != "" && (got.Valid || !strings.Contains(got.Error, tc.refusal)) {
				t.Fatalf("valid %v, error %q; want a refusal naming %q", got.Valid, got.Error, tc.refusal)
			}
		})
	}
}
