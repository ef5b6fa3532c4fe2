package wasmvalidator_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
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

// TestNonPublicMatchesSafehttp holds the validator's table of non-public addresses to the
// fetcher's: over every /16 of IPv4, every /16 of IPv6 and the IPv4 forms IPv6 embeds, an
// address the fetcher refuses is refused by the validator for the same reason, and one it dials
// is public to the validator too, but for the cloud endpoints on public addresses, which only
// the validator refuses yet. The two walls judge alike.
func TestNonPublicMatchesSafehttp(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	var v4 []netip.Addr
	for hi := 0; hi < 1<<16; hi++ {
		for _, lo := range []int{0, 0xffff, rng.IntN(1 << 16)} {
			v4 = append(v4, netip.AddrFrom4([4]byte{byte(hi >> 8), byte(hi), byte(lo >> 8), byte(lo)}))
		}
	}
	// The ranges smaller than a /16, whole.
	for _, hi := range [][2]byte{{192, 0}, {192, 88}, {198, 51}, {203, 0}, {168, 63}} {
		for lo := 0; lo < 1<<16; lo += 7 {
			v4 = append(v4, netip.AddrFrom4([4]byte{hi[0], hi[1], byte(lo >> 8), byte(lo)}))
		}
	}
	addrs := append([]netip.Addr(nil), v4...)
	for hi := 0; hi < 1<<16; hi++ {
		for _, second := range []uint16{0, 0x1ff, 0x200, 0xdb8, 0xffff, uint16(rng.Uint32())} {
			var b [16]byte
			b[0], b[1], b[2], b[3] = byte(hi>>8), byte(hi), byte(second>>8), byte(second)
			for i := 4; i < 16; i++ {
				b[i] = byte(rng.Uint32())
			}
			addrs = append(addrs, netip.AddrFrom16(b))
		}
	}
	for i := 0; i < len(v4); i += 97 {
		a := v4[i].As4()
		for _, embed := range []string{"::ffff:%d.%d.%d.%d", "::%d.%d.%d.%d", "64:ff9b::%d.%d.%d.%d", "::ffff:0:%d.%d.%d.%d"} {
			addrs = append(addrs, netip.MustParseAddr(fmt.Sprintf(embed, a[0], a[1], a[2], a[3])))
		}
		addrs = append(addrs, netip.AddrFrom16([16]byte{0x20, 0x02, a[0], a[1], a[2], a[3], 15: 1}))
	}
	for _, s := range []string{"::", "::1", "fe80::1%eth0", "64:ff9b:1::1", "100::1", "2001:db8::1", "3fff::1", "5f00::1", "fec0::1", "4000::1",
		"168.63.129.16", "::ffff:168.63.129.16", "64:ff9b::168.63.129.16", "2002:a83f:8110::1"} {
		addrs = append(addrs, netip.MustParseAddr(s))
	}

	mismatches := 0
	for _, a := range addrs {
		got := validator.NonPublic(a)
		want := ""
		var blocked *safehttp.BlockedError
		if err := safehttp.CheckAddr(a, nil); errors.As(err, &blocked) {
			want = blocked.Reason
		}
		if got == want || (want == "" && strings.HasSuffix(got, "cloud platform endpoint")) {
			continue
		}
		if mismatches++; mismatches <= 20 {
			t.Errorf("%s: validator %q, safehttp %q", a, got, want)
		}
	}
	if mismatches > 20 {
		t.Errorf("... %d mismatches in all, over %d addresses", mismatches, len(addrs))
	}
}

// TestAllowListMatchesSafehttp: the operator's allow list opens the same addresses to the
// validator (Options.AllowPrivateNetworks) as to the fetcher (safehttp.Config.AllowPrivate).
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
