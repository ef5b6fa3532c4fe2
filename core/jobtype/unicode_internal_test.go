package jobtype

import "testing"

func TestNotUnicode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body string
		want int
	}{
		{`{"a":"plain é ✓"}`, -1},
		{`{"a":"\ud83d\ude00"}`, -1},   // a pair: one character
		{`{"a":"\\ud800"}`, -1},        // a backslash, then the letters ud800
		{`{"a":"\\\ud83d\ude00"}`, -1}, // a backslash, then a pair
		{`{"a":"\u00e9\u0041"}`, -1},   // no surrogate
		{`{"a":"\ud800"}`, 6},          // a high half alone
		{`{"a":"\ud800\u0041"}`, 6},    // a high half before no low one
		{`{"a":"\udc00"}`, 6},          // a low half first
		{`{"a":"\\\ud800"}`, 8},        // a backslash, then a lone half
		{"{\"a\":\"x\xff\"}", 7},       // a byte that is not UTF-8
		{`{"a":"\u12"}`, -1},           // not JSON: the decoder's to refuse
		{"{\"a\":\"\xe2\x9c\"}", 6},    // UTF-8 cut short
	} {
		if got := notUnicode([]byte(tc.body)); got != tc.want {
			t.Errorf("notUnicode(%q) = %d, want %d", tc.body, got, tc.want)
		}
	}
}
