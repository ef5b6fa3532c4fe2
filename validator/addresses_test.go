package validator_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/validator"
	"github.com/mediajobs/mediajobs/validator/validatortest"
)

// TestAddresses runs the address table (validatortest.Addresses): every spelling of a
// non-public host is refused by the inputs layer naming the address, public hosts pass, and
// -hls_base_url takes relative names only.
func TestAddresses(t *testing.T) {
	t.Parallel()
	for _, c := range validatortest.Addresses() {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			r := validator.Validate(c.Command, c.Options)
			if c.Layer == "" {
				if !r.Valid {
					t.Fatalf("Validate(%q) refused: %s", c.Command, r.Error)
				}
				return
			}
			if r.Valid {
				t.Fatalf("Validate(%q) accepted, want a %s refusal naming %q", c.Command, c.Layer, c.Names)
			}
			if r.Err.Layer != c.Layer || !strings.Contains(r.Error, c.Names) {
				t.Fatalf("Validate(%q) = %s error %q, want %s error naming %q", c.Command, r.Err.Layer, r.Error, c.Layer, c.Names)
			}
		})
	}
}

// TestReferenceParser holds the fuzz targets' reference to what FFmpeg and glibc do with these
// URLs, so that a fuzz run checks the validator against the right thing.
func TestReferenceParser(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url  string
		host string // "" when av_url_split finds none
		addr string // "" when getaddrinfo reads no address or loopback name
	}{
		{"https://cdn.example.com/a.mp4", "cdn.example.com", ""},
		{"https://127.0.0.1/a.mp4", "127.0.0.1", "127.0.0.1"},
		{"https://127.1:8443/a.mp4", "127.1", "127.0.0.1"},
		{"https://0x7f.1/a.mp4", "0x7f.1", "127.0.0.1"},
		{"https://0X7F.0.0.1/", "0X7F.0.0.1", "127.0.0.1"},
		{"https://017700000001/", "017700000001", "127.0.0.1"},
		{"https://2130706433?x", "2130706433", "127.0.0.1"},
		{"https://0177.0.0.1#x", "0177.0.0.1", "127.0.0.1"},
		{"https://169.254.43518/", "169.254.43518", "169.254.169.254"},
		{"https://a@b@10.1/", "10.1", "10.0.0.1"},
		{"https://[::1]:80/", "::1", "::1"},
		{"https://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1", "::ffff:127.0.0.1"},
		{"https://[fe80::1%eth0]/", "fe80::1%eth0", "fe80::1%eth0"},
		{"https://[127.0.0.1]/", "127.0.0.1", "127.0.0.1"},
		{"https://localhost./", "localhost.", "127.0.0.1"},
		{"https://Media.LocalHost/", "Media.LocalHost", "127.0.0.1"},
		{"https:127.0.0.1/", "127.0.0.1", "127.0.0.1"},
		{"https:///127.0.0.1/", "", ""},
		{"https://0x/", "0x", ""},
		{"https://08.0.0.1/", "08.0.0.1", ""},
		{"https://256.0.0.1/", "256.0.0.1", ""},
		{"https://1.2.3.4.5/", "1.2.3.4.5", ""},
		{"https://4294967296/", "4294967296", ""},
		{"https://127.0.0.1./", "127.0.0.1.", ""},
		{"https://127.0.0.1 x/", "127.0.0.1 x", "127.0.0.1"},
		{"in.mp4", "", ""},
	}
	for _, tt := range tests {
		host, ok := avURLSplitHost(tt.url)
		if host != tt.host || ok != (tt.host != "") {
			t.Errorf("avURLSplitHost(%q) = %q, %v, want %q", tt.url, host, ok, tt.host)
			continue
		}
		addr, ok := getaddrinfo(host)
		if got := ""; ok {
			got = addr.String()
			if got != tt.addr {
				t.Errorf("getaddrinfo(%q) = %s, want %q", host, got, tt.addr)
			}
		} else if tt.addr != "" {
			t.Errorf("getaddrinfo(%q) reads no address, want %s", host, tt.addr)
		}
	}
}

// FuzzURLHost: whenever FFmpeg would reach a non-public address through an input URL, as its
// av_url_split takes the host out and getaddrinfo reads it (inet_aton for IPv4, inet_pton for
// IPv6, /etc/hosts and nss-myhostname for localhost names), the validator refuses the URL,
// as an -i value and as a staged input's url.
func FuzzURLHost(f *testing.F) {
	for _, c := range validatortest.Addresses() {
		if u, ok := strings.CutPrefix(c.Command, "ffmpeg -i '"); ok {
			f.Add(strings.TrimSuffix(u, "' out.mp4"))
		}
	}
	for _, s := range []string{
		"127.1", "0x7f.1", "0x7f.0.0.1", "0177.0.0.1", "017700000001", "2130706433", "0", "0x0",
		"0xa9.0xfe.0xa9.0xfe", "0251.254.43518", "10.0x10000", "127.0.0.1:80", "[::1]:443",
		"[::ffff:7f00:1]", "[::ffff:10.0.0.1]", "[fe80::a%eth0]", "[fd00:ec2::254]", "[127.1]",
		"good.com@127.1", "a:b@[::1]:80", "localhost.", "x.localhost", "LOCALHOST",
		"https:127.0.0.1/x.mp4", "https:/0x7f.1/x.mp4", "https://127.0.0.1?@cdn.example.com/",
		"https://cdn.example.com#@127.0.0.1/", "https://1.1.1.1/x.mp4", "https://8.8.8.8:443/x.mp4",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u := raw
		if !strings.HasPrefix(u, "https:") {
			u = "https://" + raw
		}
		host, ok := avURLSplitHost(u)
		if !ok {
			return
		}
		addr, ok := getaddrinfo(host)
		if !ok || validator.NonPublic(addr) == "" {
			return
		}
		quoted := "'" + strings.ReplaceAll(u, "'", `'\''`) + "'"
		if r := validator.Validate("ffmpeg -i "+quoted+" out.mp4", validator.Options{}); r.Valid {
			t.Fatalf("-i %q accepted: FFmpeg reads host %q, which getaddrinfo reads as %s (%s)", u, host, addr, validator.NonPublic(addr))
		}
		staged := validator.Options{Inputs: map[string]validator.Input{"in.mp4": {URL: u}}}
		if r := validator.Validate("ffmpeg -i in.mp4 out.mp4", staged); r.Valid {
			t.Fatalf("staged url %q accepted: FFmpeg reads host %q, which getaddrinfo reads as %s (%s)", u, host, addr, validator.NonPublic(addr))
		}
	})
}

// FuzzHLSBaseURL: a -hls_base_url the validator accepts is a relative name: no scheme, no
// leading '/' or '\', no "..", no "//", nothing a player would take out of the playlist's
// directory.
func FuzzHLSBaseURL(f *testing.F) {
	for _, s := range []string{"segments/", "v1/seg-", "", "file:///etc/", "//evil.example/", "/abs/", "../up/",
		"a/../b", "a//b", `a\b`, "%2e%2e/", "https://127.0.0.1/", "data:,x", "\\\\evil/", "./x/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		quoted := "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
		r := validator.Validate("ffmpeg -i https://cdn.example.com/in.mp4 -f hls -hls_base_url "+quoted+" out.m3u8", validator.Options{})
		if !r.Valid {
			return
		}
		if strings.ContainsAny(v, `:\%`) || strings.HasPrefix(v, "/") || strings.Contains(v, "..") || strings.Contains(v, "//") {
			t.Fatalf("-hls_base_url %q accepted", v)
		}
	})
}

// avURLSplitHost is the hostname FFmpeg's av_url_split (libavformat/utils.c) takes out of url:
// the scheme ends at the first ':', at most two '/' follow it, the authority ends at the first
// of "/?#", the host follows the last '@' in it, and is either in brackets or ends at the first
// ':'. ok is false when url has no ':' or an empty authority.
func avURLSplitHost(url string) (host string, ok bool) {
	colon := strings.IndexByte(url, ':')
	if colon < 0 {
		return "", false
	}
	p := url[colon+1:]
	for i := 0; i < 2 && strings.HasPrefix(p, "/"); i++ {
		p = p[1:]
	}
	end := strings.IndexAny(p, "/?#")
	if end < 0 {
		end = len(p)
	}
	auth := p[:end]
	if auth == "" {
		return "", false
	}
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		auth = auth[at+1:]
	}
	if strings.HasPrefix(auth, "[") {
		if brk := strings.IndexByte(auth, ']'); brk >= 0 {
			return auth[1:brk], true
		}
	}
	if col := strings.IndexByte(auth, ':'); col >= 0 {
		return auth[:col], true
	}
	return auth, true
}

// getaddrinfo is the address glibc's getaddrinfo gives for host without asking DNS: IPv6 as
// inet_pton reads it (with a scope), IPv4 as inet_aton does, and localhost names as /etc/hosts
// and nss-myhostname answer them. ok is false for any other name.
func getaddrinfo(host string) (netip.Addr, bool) {
	if strings.Contains(host, ":") {
		addr, err := netip.ParseAddr(host)
		return addr, err == nil
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return netip.AddrFrom4([4]byte{127, 0, 0, 1}), true
	}
	return inetAton(host)
}

// inetAton is glibc's inet_aton: one to four parts separated by '.', each read by strtoul with
// base 0 (0x hex, a leading 0 octal, else decimal) and starting with a digit; every part but the
// last at most 255, the last filling the bytes left; the text may end at whitespace.
func inetAton(s string) (netip.Addr, bool) {
	var parts []uint64
	for {
		if s == "" || s[0] < '0' || s[0] > '9' {
			return netip.Addr{}, false
		}
		v, n := strtoul0(s)
		if v > 0xffffffff {
			return netip.Addr{}, false
		}
		s = s[n:]
		if s == "" || s[0] != '.' {
			parts = append(parts, v)
			break
		}
		if len(parts) == 3 || v > 0xff {
			return netip.Addr{}, false
		}
		parts = append(parts, v)
		s = s[1:]
	}
	if s != "" && !strings.ContainsRune(" \t\n\v\f\r", rune(s[0])) {
		return netip.Addr{}, false
	}
	last := parts[len(parts)-1]
	if last >= 1<<(8*(5-len(parts))) {
		return netip.Addr{}, false
	}
	var b [4]byte
	for i, p := range parts[:len(parts)-1] {
		b[i] = byte(p)
	}
	for i := 3; i >= len(parts)-1; i-- {
		b[i] = byte(last)
		last >>= 8
	}
	return netip.AddrFrom4(b), true
}

// strtoul0 is strtoul(s, &end, 0) on text that starts with a digit: the value (saturated past
// 32 bits) and how many bytes it read. "0x" without a hex digit after it reads as "0".
func strtoul0(s string) (uint64, int) {
	base, i := uint64(10), 0
	switch {
	case len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && digitIn(s[2], 16) >= 0:
		base, i = 16, 2
	case s[0] == '0':
		base = 8
	}
	var v uint64
	for ; i < len(s); i++ {
		d := digitIn(s[i], base)
		if d < 0 {
			break
		}
		if v = v*base + uint64(d); v > 1<<40 {
			v = 1 << 40
		}
	}
	return v, i
}

func digitIn(c byte, base uint64) int {
	d := -1
	switch {
	case c >= '0' && c <= '9':
		d = int(c - '0')
	case c >= 'a' && c <= 'f':
		d = int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		d = int(c-'A') + 10
	}
	if d >= int(base) {
		return -1
	}
	return d
}

// TestNonPublicOutside: the operator's prefixes open the addresses inside them, and an IPv6
// form that embeds an IPv4 address is opened by a prefix holding that address; the fetcher
// dials by the same function.
func TestNonPublicOutside(t *testing.T) {
	t.Parallel()
	allow := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	for addr, want := range map[string]string{
		"127.0.0.1":          "",
		"::ffff:127.0.0.1":   "",
		"64:ff9b::127.0.0.1": "",
		"2002:7f00:1::1":     "",
		"fd00::1%eth0":       "",
		"8.8.8.8":            "",
		"10.0.0.1":           "private",
		"::1":                "loopback",
		"fc00::1":            "unique local",
		"64:ff9b::10.0.0.1":  "embeds 10.0.0.1, private",
		"168.63.129.16":      "cloud platform endpoint",
	} {
		if got := validator.NonPublicOutside(netip.MustParseAddr(addr), allow); got != want {
			t.Errorf("NonPublicOutside(%s) = %q, want %q", addr, got, want)
		}
	}
	if got := validator.NonPublicOutside(netip.MustParseAddr("127.0.0.1"), nil); got != "loopback" {
		t.Errorf("NonPublicOutside(127.0.0.1, nil) = %q, want loopback", got)
	}
}
