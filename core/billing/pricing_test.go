package billing_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/billing"
)

// TestStallSeconds: a plan's stall time is its pricing's stallSeconds, the default when the
// pricing names none (a file written before it existed), and never negative.
func TestStallSeconds(t *testing.T) {
	t.Parallel()
	if got := billing.Default().Limits(account.PlanFree).StallSeconds; got != billing.DefaultStallSeconds {
		t.Errorf("the built-in Free plan stalls after %d s, want %d", got, billing.DefaultStallSeconds)
	}
	with := func(stall any) []byte {
		var doc map[string]any
		b, _ := json.Marshal(billing.Default())
		_ = json.Unmarshal(b, &doc)
		pro := doc["plans"].(map[string]any)["pro"].(map[string]any)
		if stall == nil {
			delete(pro, "stallSeconds")
		} else {
			pro["stallSeconds"] = stall
		}
		b, _ = json.Marshal(doc)
		return b
	}
	for _, tc := range []struct {
		name    string
		stall   any
		want    int
		wantErr string
	}{
		{"named", 5, 5, ""},
		{"absent is the default", nil, billing.DefaultStallSeconds, ""},
		{"zero is the default", 0, billing.DefaultStallSeconds, ""},
		{"negative", -1, 0, `plan "pro": stallSeconds must not be negative`},
		{"not a number", "60", 0, "stallSeconds"},
	} {
		p, err := billing.Parse(with(tc.stall))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := p.Limits(account.PlanPro).StallSeconds; got != tc.want {
			t.Errorf("%s: Pro stalls after %d s, want %d", tc.name, got, tc.want)
		}
	}
}
