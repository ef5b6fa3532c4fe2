package validator

import (
	"net/netip"
	"testing"
)

func TestParseIPv4(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host           string
		octal, decimal string // both the one reading when only one is an address; "" when none is
	}{
		{"127.0.0.1", "127.0.0.1", "127.0.0.1"},
		{"127.1", "127.0.0.1", "127.0.0.1"},
		{"127.0.1", "127.0.0.1", "127.0.0.1"},
		{"2130706433", "127.0.0.1", "127.0.0.1"},
		{"0x7f.1", "127.0.0.1", "127.0.0.1"},
		{"0X7F000001", "127.0.0.1", "127.0.0.1"},
		{"0x", "0.0.0.0", "0.0.0.0"},
		{"0x.0x.0x.0x", "0.0.0.0", "0.0.0.0"},
		{"0", "0.0.0.0", "0.0.0.0"},
		{"017700000001", "127.0.0.1", "127.0.0.1"}, // read as decimal, it is past 32 bits
		{"0177.0.0.1", "127.0.0.1", "177.0.0.1"},
		{"0127.0.0.1", "87.0.0.1", "127.0.0.1"},
		{"08.0.0.1", "8.0.0.1", "8.0.0.1"}, // no octal reading
		{"169.254.43518", "169.254.169.254", "169.254.169.254"},
		{"4294967295", "255.255.255.255", "255.255.255.255"},
		{"4294967296", "", ""},
		{"256.0.0.1", "", ""},
		{"1.2.3.4.5", "", ""},
		{"1.2.3.256", "", ""},
		{"1.2.65536", "", ""},
		{"1..2", "", ""},
		{"0x1g", "", ""},
		{"", "", ""},
	}
	for _, tt := range tests {
		octal, decimal, ok := parseIPv4(tt.host)
		if tt.octal == "" {
			if ok {
				t.Errorf("parseIPv4(%q) = %s, %s; want no address", tt.host, octal, decimal)
			}
			continue
		}
		if !ok || octal.String() != tt.octal || decimal.String() != tt.decimal {
			t.Errorf("parseIPv4(%q) = %s, %s, %v; want %s, %s", tt.host, octal, decimal, ok, tt.octal, tt.decimal)
		}
	}
}

func TestFoldHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host, folded string
		odd          bool
	}{
		{"CDN.Example.COM", "cdn.example.com", false},
		{"b\u00fccher.example", "b\u00fccher.example", false},
		{"\uff11\uff12\uff17.\uff10.\uff10.\uff11", "127.0.0.1", false},
		{"\uff2c\uff4fcalhost", "localhost", false},
		{"127\u30020\uff610\ufe521", "127.0.0.1", false},
		{"loc\u00adal\u200bhost\ufe0f", "localhost", false},
		{"\u0661\u0662\u0667.0.0.1", "127.0.0.1", false},
		{"\U0001d7cf\U0001d7d0\U0001d7d5.0.0.1", "127.0.0.1", false},
		{"localho\u017ft", "localhost", false},
		{"\u2460\u2461\u2466.0.0.1", "\u2460\u2461\u2466.0.0.1", true},
		{"0\u02e37f.1", "0\u02e37f.1", true},
		{"0x7\ufb00.1", "0x7\ufb00.1", true},
	}
	for _, tt := range tests {
		folded, odd := foldHost(tt.host)
		if folded != tt.folded || odd != tt.odd {
			t.Errorf("foldHost(%q) = %q, %v; want %q, %v", tt.host, folded, odd, tt.folded, tt.odd)
		}
	}
}

func TestAllowedAddr(t *testing.T) {
	t.Parallel()
	allow := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	tests := []struct {
		addr    string
		allowed bool
	}{
		{"127.0.0.1", true},
		{"::ffff:127.0.0.1", true},
		{"64:ff9b::127.0.0.1", true},
		{"2002:7f00:1::", true},
		{"fd00::1", true},
		{"fd00::1%eth0", true},
		{"10.0.0.1", false},
		{"::1", false},
		{"fc00::1", false},
		{"169.254.169.254", false},
	}
	for _, tt := range tests {
		if got := allowedAddr(netip.MustParseAddr(tt.addr), allow); got != tt.allowed {
			t.Errorf("allowedAddr(%s) = %v, want %v", tt.addr, got, tt.allowed)
		}
	}
}
