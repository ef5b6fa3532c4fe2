package wasmvalidator_test

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/adapters/safehttp"
	"github.com/mediajobs/mediajobs/adapters/wasmvalidator"
	"github.com/mediajobs/mediajobs/validator"
	"github.com/mediajobs/mediajobs/validator/validatortest"
)

// TestAddressesMatchNative runs the address table through validator.wasm: each answer is the
// native one, byte for byte, so every spelling of a non-public host is refused there too, naming
// its address, and every public host and relative -hls_base_url passes.
func TestAddressesMatchNative(t *testing.T) {
	t.Parallel()
	b := setup(t, wasmvalidator.Config{})
	cases := validatortest.Addresses()
	if len(cases) < 200 {
		t.Fatalf("%d address cases, want at least 200", len(cases))
	}
	for _, c := range cases {
		want := nativeJSON(t, c.Command, c.Options)
		got, err := b.engine.ValidateJSON(t.Context(), c.Command, c.Options)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: wasm %s, native %s", c.Name, got, want)
			continue
		}
		res, err := b.engine.Validate(t.Context(), c.Command, c.Options)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		switch {
		case c.Layer == "" && !res.Valid:
			t.Errorf("%s: wasm refused: %s", c.Name, res.Error)
		case c.Layer != "" && (res.Valid || !strings.Contains(res.Error, c.Names)):
			t.Errorf("%s: wasm answered valid %v, error %q; want a refusal naming %q", c.Name, res.Valid, res.Error, c.Names)
		}
	}
}

// TestAllowListMatchesSafehttp: the operator's allow list opens the same addresses to the
// validator (Options.AllowPrivateNetworks) as to the fetcher (safehttp.Config.AllowPrivate).
// Both judge an address by validator.NonPublicOutside; this holds the validator's reading of the
// URL (brackets, zones, embedded IPv4) to the address the fetcher dials.
func TestAllowListMatchesSafehttp(t *testing.T) {
	t.Parallel()
	allow, err := safehttp.ParseAllowList("127.0.0.0/8, fd00::/8, 10.1.0.0/16")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"127.0.0.1", "127.9.9.9", "::ffff:127.0.0.1", "64:ff9b::127.0.0.1", "2002:7f00:1::1", "fd00::1",
		"fd00::1%eth0", "10.1.2.3", "10.2.0.1", "::1", "fc00::1", "169.254.169.254", "::ffff:10.1.0.1", "8.8.8.8",
	} {
		a := netip.MustParseAddr(s)
		host := a.String()
		if a.Is6() {
			host = "[" + strings.ReplaceAll(host, "%", "%25") + "]"
		}
		opts := validator.Options{AllowPrivateNetworks: allow,
			Inputs: map[string]validator.Input{"in.mp4": {URL: "https://" + host + "/in.mp4"}}}
		r := validator.Validate("ffmpeg -i in.mp4 out.mp4", opts)
		if fetched := safehttp.CheckAddr(a, allow) == nil; r.Valid != fetched {
			t.Errorf("%s: validator valid %v (%s), fetcher dials %v", s, r.Valid, r.Error, fetched)
		}
	}
}

// TestAllowListAloneReachesWASM: options holding nothing but the allow list still reach the
// module, so a URL in the command on an opened range is valid there as natively.
func TestAllowListAloneReachesWASM(t *testing.T) {
	t.Parallel()
	b := setup(t, wasmvalidator.Config{})
	opts := validator.Options{AllowPrivateNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	cmd := "ffmpeg -i https://127.0.0.1:8443/clip.mp4 out.mp4"
	if r := validator.Validate(cmd, opts); !r.Valid {
		t.Fatalf("native refused: %s", r.Error)
	}
	res, err := b.engine.Validate(t.Context(), cmd, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Valid {
		t.Errorf("wasm refused: %s", res.Error)
	}
}
