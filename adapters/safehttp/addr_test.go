package safehttp

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// blockedReason is why CheckAddr refuses addr with no allow list, or "".
func blockedReason(addr netip.Addr) string {
	var blocked *BlockedError
	if errors.As(CheckAddr(addr, nil), &blocked) {
		return blocked.Reason
	}
	return ""
}

func TestCheckAddr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr    string
		blocked bool
	}{
		// IPv4 blocked ranges, edges included.
		{"0.0.0.0", true},
		{"0.1.2.3", true},
		{"10.0.0.0", true},
		{"10.255.255.255", true},
		{"100.64.0.1", true},
		{"100.127.255.255", true},
		{"127.0.0.1", true},
		{"127.255.255.254", true},
		{"169.254.169.254", true},
		{"169.254.0.1", true},
		{"172.16.0.1", true},
		{"172.31.255.255", true},
		{"192.0.0.1", true},
		{"192.0.2.10", true},
		{"192.88.99.1", true},
		{"192.168.1.1", true},
		{"198.18.0.1", true},
		{"198.19.255.255", true},
		{"198.51.100.7", true},
		{"203.0.113.9", true},
		{"224.0.0.1", true},
		{"239.255.255.250", true},
		{"240.0.0.1", true},
		{"255.255.255.255", true},
		// A cloud's own endpoint on a public address (Azure's WireServer).
		{"168.63.129.16", true},
		// IPv4 public, including the neighbours of blocked ranges.
		{"8.8.8.8", false},
		{"1.1.1.1", false},
		{"9.255.255.255", false},
		{"11.0.0.0", false},
		{"100.63.255.255", false},
		{"100.128.0.0", false},
		{"172.15.255.255", false},
		{"172.32.0.0", false},
		{"192.167.255.255", false},
		{"192.169.0.0", false},
		{"198.17.255.255", false},
		{"198.20.0.0", false},
		{"223.255.255.255", false},
		{"168.63.129.17", false},
		// IPv4-mapped IPv6 is judged as IPv4.
		{"::ffff:127.0.0.1", true},
		{"::ffff:10.1.2.3", true},
		{"::ffff:169.254.169.254", true},
		{"::ffff:7f00:1", true},
		{"::ffff:8.8.8.8", false},
		// IPv6.
		{"::", true},
		{"::1", true},
		{"::127.0.0.1", true},
		{"::ffff:0:7f00:1", true},
		{"64:ff9b::7f00:1", true},
		{"64:ff9b::10.0.0.1", true},
		{"64:ff9b::192.168.0.1", true},
		{"64:ff9b::8.8.8.8", false},
		{"64:ff9b:1::1", true},
		{"2002:7f00:1::", true},
		{"2002:a00:1::1", true},
		{"2002:c0a8:101::1", true},
		{"2002:a9fe:a9fe::1", true},
		{"2002:808:808::1", false},
		{"100::1", true},
		{"2001::1", true},
		{"2001:2::1", true},
		{"2001:db8::1", true},
		{"3fff::1", true},
		{"5f00::1", true},
		{"fc00::1", true},
		{"fd12:3456:789a::1", true},
		{"fe80::1", true},
		{"fe80::1%eth0", true},
		{"febf::1", true},
		{"fec0::1", true},
		{"ff02::1", true},
		{"ff0e::1", true},
		{"4000::1", true},
		{"2606:4700:4700::1111", false},
		{"2001:4860:4860::8888", false},
		{"2a00:1450:4001::1", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			t.Parallel()
			addr := netip.MustParseAddr(tt.addr)

			err := CheckAddr(addr, nil)

			if got := errors.Is(err, ErrBlockedAddress); got != tt.blocked {
				t.Errorf("CheckAddr(%s) = %v, want blocked = %v", tt.addr, err, tt.blocked)
			}
			if err != nil && !strings.Contains(err.Error(), addr.WithZone("").Unmap().String()) {
				t.Errorf("error %q does not name the address", err)
			}
		})
	}
}

func TestCheckAddrAllowList(t *testing.T) {
	t.Parallel()
	allow := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	tests := []struct {
		addr    string
		allowed bool
	}{
		{"127.0.0.1", true},
		{"::ffff:127.0.0.1", true},
		{"64:ff9b::127.0.0.1", true},
		{"fd00::1", true},
		{"10.0.0.1", false},
		{"::1", false},
		{"fc00::1", false},
		{"169.254.169.254", false},
	}
	for _, tt := range tests {
		err := CheckAddr(netip.MustParseAddr(tt.addr), allow)
		if got := err == nil; got != tt.allowed {
			t.Errorf("CheckAddr(%s) = %v, want allowed = %v", tt.addr, err, tt.allowed)
		}
	}
}

func TestParseAllowList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    []netip.Prefix
		wantErr bool
	}{
		{in: "", want: nil},
		{in: " , ", want: nil},
		{in: "10.0.0.0/8", want: prefixes("10.0.0.0/8")},
		{in: "10.1.2.3/8, 192.168.0.0/16 ,fd00::/8", want: prefixes("10.0.0.0/8", "192.168.0.0/16", "fd00::/8")},
		{in: "127.0.0.1", want: prefixes("127.0.0.1/32")},
		{in: "::1", want: prefixes("::1/128")},
		{in: "::ffff:127.0.0.1", want: prefixes("127.0.0.1/32")},
		{in: "10.0.0.0/33", wantErr: true},
		{in: "not-a-cidr", wantErr: true},
		{in: "10.0.0.0/8;192.168.0.0/16", wantErr: true},
		{in: "fe80::1%eth0", wantErr: true},
		{in: "::ffff:10.0.0.0/104", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseAllowList(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseAllowList(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if diff := cmp.Diff(tt.want, got, cmpopts.EquateComparable(netip.Prefix{})); diff != "" {
			t.Errorf("ParseAllowList(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

func FuzzParseAllowList(f *testing.F) {
	for _, s := range []string{"", "10.0.0.0/8", "127.0.0.1,::1", "fd00::/8, 192.168.0.0/16", "::ffff:1.2.3.4", "a,,b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseAllowList(s)
		if err != nil {
			return
		}
		for _, p := range got {
			if !p.IsValid() || p != p.Masked() || p.Addr().Is4In6() {
				t.Fatalf("ParseAllowList(%q) gave non-canonical prefix %s", s, p)
			}
		}
	})
}

// FuzzCheckAddr checks that the IPv4-mapped form of any IPv4 address is judged like the address.
func FuzzCheckAddr(f *testing.F) {
	f.Add([]byte{127, 0, 0, 1})
	f.Add([]byte{8, 8, 8, 8})
	f.Add([]byte{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		addr, ok := netip.AddrFromSlice(b)
		if !ok {
			return
		}
		reason := blockedReason(addr)
		if addr.Is4() {
			mapped := netip.AddrFrom16(addr.As16())
			if got := blockedReason(mapped); got != reason {
				t.Fatalf("%s is refused for %q but %s for %q", addr, reason, mapped, got)
			}
		}
	})
}
