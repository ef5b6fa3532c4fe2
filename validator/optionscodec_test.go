package validator

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOptionsCodec(t *testing.T) {
	t.Parallel()
	opts := []Options{
		{},
		{OutputFormat: "mp4", Compute: "gpu", Timeout: -3, AssetURLPrefix: "http://h/assets/"},
		{Inputs: map[string]Input{"a.mp4": {URL: "https://h/a"}, "s.srt": {Inline: true, ContentSize: 65537}, "": {ContentSize: -1}, "x\n": {URL: "\x00"}}},
		{AllowPrivateNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.1.2.3/8"), {}, netip.MustParsePrefix("fd00::/8")}},
	}
	for _, c := range loadCorpus(t) {
		opts = append(opts, c.Options)
	}
	for _, o := range opts {
		got, err := DecodeOptions(AppendOptions(nil, &o))
		if err != nil {
			t.Fatalf("DecodeOptions(AppendOptions(%+v)): %v", o, err)
		}
		if diff := cmp.Diff(o, got, prefixComparer, cmp.Comparer(func(a, b map[string]Input) bool { return cmp.Equal(len(a), len(b)) && (len(a) == 0 || cmp.Equal(a, b)) })); diff != "" {
			t.Fatalf("round trip (-want +got):\n%s", diff)
		}
	}
	for _, bad := range []string{"", "{}", "\x01z", "\x01f\x05ab", "\x01n\x01a\x00\x00\x07", "\x01t", "\x01p\x0410/8", "\x01p\x03abc"} {
		if _, err := DecodeOptions([]byte(bad)); err == nil {
			t.Errorf("DecodeOptions(%q) accepted", bad)
		}
	}
}

// FuzzDecodeOptions: any bytes decode or fail without panicking, and what decodes encodes back
// to options that decode the same.
func FuzzDecodeOptions(f *testing.F) {
	o := Options{Compute: "cpu", Inputs: map[string]Input{"a": {URL: "https://h/a"}}}
	f.Add(AppendOptions(nil, &o))
	o = Options{AllowPrivateNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), {}}}
	f.Add(AppendOptions(nil, &o))
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := DecodeOptions(b)
		if err != nil {
			return
		}
		again, err := DecodeOptions(AppendOptions(nil, &o))
		if err != nil || !cmp.Equal(o, again, prefixComparer, cmp.Comparer(func(a, b map[string]Input) bool { return len(a) == len(b) && (len(a) == 0 || cmp.Equal(a, b)) })) {
			t.Fatalf("round trip of %q: %+v, then %+v (%v)", b, o, again, err)
		}
	})
}

// prefixComparer compares netip.Prefix values, whose fields cmp cannot see.
var prefixComparer = cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })
