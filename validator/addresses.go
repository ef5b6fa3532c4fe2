package validator

import (
	"net/netip"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Part of layer 3: the host of an input URL. The runner's fetcher (adapters/safehttp) refuses
// non-public addresses when it dials; the inputs layer refuses a URL whose host is one as well,
// so that each wall holds alone. It reads the host in every spelling the parsers that may meet
// the URL turn into an address, and refuses when any of them would:
//   - the authority as FFmpeg's av_url_split splits it (up to the first '/', '?' or '#', the
//     host after the last '@', in brackets or before a port), and as the WHATWG URL standard
//     does ('\' ends it too; any number of slashes after the scheme);
//   - IPv4 as inet_aton reads it behind getaddrinfo, in one to four parts, each decimal, octal
//     after a leading 0 or hex after 0x (127.1, 0x7f.1, 017700000001, 2130706433), and as the
//     WHATWG parser does (a trailing dot, "0x" alone); a part with leading zeros is also read as
//     decimal, as older parsers did;
//   - IPv6 in brackets, zones and IPv4-mapped, -compatible, NAT64 and 6to4 forms included;
//   - percent-encoding, and the fullwidth forms and ignorable characters IDNA maps or drops;
//   - names under localhost (RFC 6761), which resolve to loopback.
//
// A host that ends in a number but reads as no IPv4 address (1.2.3.4.5, 0x1g, 4294967297) is
// refused too: no public name ends in a number, and parsers disagree on such hosts (some wrap
// values past 32 bits). Names that only DNS maps to a private address are the fetcher's to
// refuse: the validator does not resolve.

// nonPublicV4 and nonPublicV6 are the IANA special-purpose registries (IPv4 and IPv6): none of
// these is a place a media file or a webhook receiver should live. This is the one table of
// them: the input fetcher (adapters/safehttp) dials by NonPublicOutside, so that the validator
// and the fetcher share one notion of public.
var nonPublicV4 = addrRanges(
	"0.0.0.0/8", "this network",
	"10.0.0.0/8", "private",
	"100.64.0.0/10", "carrier-grade NAT",
	"127.0.0.0/8", "loopback",
	"169.254.0.0/16", "link-local",
	"172.16.0.0/12", "private",
	"192.0.0.0/24", "IETF protocol assignments",
	"192.0.2.0/24", "documentation",
	"192.88.99.0/24", "6to4 relay anycast",
	"192.168.0.0/16", "private",
	"198.18.0.0/15", "benchmarking",
	"198.51.100.0/24", "documentation",
	"203.0.113.0/24", "documentation",
	"224.0.0.0/4", "multicast",
	"240.0.0.0/4", "reserved",
	"255.255.255.255/32", "broadcast",
	// Beyond the registries: a cloud's own endpoint on a public address, answering only its
	// virtual machines (Azure's WireServer, which hands out VM configuration).
	"168.63.129.16/32", "cloud platform endpoint",
)

var nonPublicV6 = addrRanges(
	"::/128", "unspecified",
	"::1/128", "loopback",
	"::/96", "IPv4-compatible",
	"::ffff:0:0:0/96", "IPv4-translated",
	"64:ff9b:1::/48", "local-use NAT64",
	"100::/64", "discard-only",
	"2001::/23", "IETF protocol assignments (Teredo, benchmarking, ORCHID)",
	"2001:db8::/32", "documentation",
	"3fff::/20", "documentation",
	"5f00::/16", "segment routing",
	"fc00::/7", "unique local",
	"fe80::/10", "link-local",
	"fec0::/10", "site-local",
	"ff00::/8", "multicast",
)

var (
	nat64Prefix     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFourPrefix = netip.MustParsePrefix("2002::/16")
	global6Prefix   = netip.MustParsePrefix("2000::/3")
)

type addrRange struct {
	prefix netip.Prefix
	reason string
}

func addrRanges(pairs ...string) []addrRange {
	out := make([]addrRange, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, addrRange{netip.MustParsePrefix(pairs[i]), pairs[i+1]})
	}
	return out
}

// NonPublic returns why addr is not a public unicast address ("loopback", "private",
// "embeds 127.0.0.1, loopback"), or "" when it is. IPv6 forms that carry an IPv4 address
// (mapped, NAT64, 6to4) are judged by that address; a zone is ignored.
func NonPublic(addr netip.Addr) string {
	addr = addr.WithZone("").Unmap()
	if !addr.IsValid() {
		return "invalid"
	}
	if addr.Is4() {
		for _, r := range nonPublicV4 {
			if r.prefix.Contains(addr) {
				return r.reason
			}
		}
		return ""
	}
	if v4, ok := embeddedV4(addr); ok {
		if reason := NonPublic(v4); reason != "" {
			return "embeds " + v4.String() + ", " + reason
		}
		return ""
	}
	for _, r := range nonPublicV6 {
		if r.prefix.Contains(addr) {
			return r.reason
		}
	}
	if !global6Prefix.Contains(addr) {
		return "not global unicast"
	}
	return ""
}

// NonPublicOutside returns why addr is refused, as NonPublic does, or "" when it is public or
// inside one of the prefixes the operator opened (Options.AllowPrivateNetworks): an IPv6 form
// that embeds an IPv4 address is opened by a prefix holding either. The input fetcher
// (adapters/safehttp) dials by this rule, so the two walls judge every address alike.
func NonPublicOutside(addr netip.Addr, allow []netip.Prefix) string {
	reason := NonPublic(addr)
	if reason == "" || allowedAddr(addr, allow) {
		return ""
	}
	return reason
}

// embeddedV4 extracts the IPv4 address NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry: a
// packet to them reaches that IPv4 host through a translator or relay.
func embeddedV4(addr netip.Addr) (netip.Addr, bool) {
	b := addr.As16()
	switch {
	case nat64Prefix.Contains(addr):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFourPrefix.Contains(addr):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}

// allowedAddr reports whether addr, or the IPv4 address it embeds, is inside one of the prefixes
// the operator opened (Options.AllowPrivateNetworks), as the fetcher decides it.
func allowedAddr(addr netip.Addr, allow []netip.Prefix) bool {
	addr = addr.WithZone("").Unmap()
	v4, embedded := embeddedV4(addr)
	for _, p := range allow {
		if p.Contains(addr) || (embedded && p.Contains(v4)) {
			return true
		}
	}
	return false
}

var (
	loopback4 = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	loopback6 = netip.IPv6Loopback()
)

// checkURLHost returns why the host of raw, a URL with an authority, is refused: a non-public
// address outside allow or a localhost name, in any spelling (see above), named in the answer;
// "" when raw has no authority or its host is none of these.
func checkURLHost(raw string, allow []netip.Prefix) string {
	auth, ok := urlAuthority(raw)
	if !ok {
		return ""
	}
	// Every piece between '@' and '\' is a host to some parser: FFmpeg and Go take the text after
	// the last '@', WHATWG ends the authority at '\'. A URL with either is refused anyway (for
	// its credentials, or as invalid), so judging the user part as a host costs nothing.
	var first string
	for auth != "" {
		end := strings.IndexAny(auth, "@\\")
		piece := auth
		if end >= 0 {
			piece, auth = auth[:end], auth[end+1:]
		} else {
			auth = ""
		}
		why, named := checkHostPiece(piece, allow)
		if named {
			return why
		}
		if first == "" {
			first = why
		}
	}
	return first
}

// urlAuthority returns the authority of raw as the most permissive of the parsers reads it:
// after a scheme and ':', past any '/' and '\', up to the first '/', '?' or '#'. ok is false
// when raw does not start with a scheme and a slash: "pipe:0" and "fd:3" name no host.
func urlAuthority(raw string) (auth string, ok bool) {
	i := 0
	for i < len(raw) && (raw[i] >= 'a' && raw[i] <= 'z' || raw[i] >= 'A' && raw[i] <= 'Z' ||
		i > 0 && (raw[i] >= '0' && raw[i] <= '9' || raw[i] == '+' || raw[i] == '-' || raw[i] == '.')) {
		i++
	}
	if i == 0 || i == len(raw) || raw[i] != ':' {
		return "", false
	}
	i++
	slashes := i
	for i < len(raw) && (raw[i] == '/' || raw[i] == '\\') {
		i++
	}
	if i == slashes {
		return "", false
	}
	end := i
	for end < len(raw) && raw[end] != '/' && raw[end] != '?' && raw[end] != '#' {
		end++
	}
	return raw[i:end], true
}

// checkHostPiece judges one host[:port] of an authority: the text in brackets, or the whole of
// it, the text before the first ':' (FFmpeg) and before the last ':' (Go, WHATWG). Like every
// judge below, it answers why the host is refused and whether that names an address or a
// loopback name; a refusal that names one is preferred to one that does not (a host that ends
// in a number, characters IDNA maps) when several readings are refused.
func checkHostPiece(piece string, allow []netip.Prefix) (why string, named bool) {
	if piece == "" {
		return "", false
	}
	if piece[0] == '[' {
		// FFmpeg hands what is in the brackets to getaddrinfo, which reads IPv4 and names there
		// too.
		if end := strings.IndexByte(piece, ']'); end > 0 {
			return checkHost(piece[1:end], allow)
		}
	}
	candidates := [3]string{piece}
	if first := strings.IndexByte(piece, ':'); first >= 0 {
		candidates[1] = piece[:first]
		if last := strings.LastIndexByte(piece, ':'); last != first {
			candidates[2] = piece[:last]
		}
	}
	for _, h := range candidates {
		if h == "" {
			continue
		}
		w, n := checkHost(h, allow)
		if n {
			return w, true
		}
		if why == "" {
			why = w
		}
	}
	return why, false
}

// checkHost judges one host as written in a URL.
func checkHost(written string, allow []netip.Prefix) (why string, named bool) {
	host := written
	// escaped: '%' escapes, or a control or space byte where C parsers stop.
	var escaped, upper, nonASCII bool
	for i := 0; i < len(host); i++ {
		switch c := host[i]; {
		case c == '%' || c <= ' ':
			escaped = true
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= utf8.RuneSelf:
			nonASCII = true
		}
	}
	if escaped {
		// As written (FFmpeg decodes nothing, and '%' starts an IPv6 zone), then decoded again
		// until nothing changes: a server or a second parser may decode twice. Each reading is
		// also cut at its first control or space byte, where C parsers and inet_aton stop.
		for i := 0; i < 4; i++ {
			readings := [2]string{host}
			if end := strings.IndexFunc(host, func(r rune) bool { return r <= ' ' }); end >= 0 {
				readings[1] = host[:end]
			}
			for _, h := range readings {
				w, n := checkDecodedHost(written, h, allow)
				if n {
					return w, true
				}
				if why == "" {
					why = w
				}
			}
			d := percentDecode(host)
			if d == host {
				break
			}
			host = d
		}
		return why, false
	}
	if nonASCII || upper {
		return checkDecodedHost(written, host, allow)
	}
	return judgeHost(written, host, allow)
}

// checkDecodedHost judges a host that may hold upper case and characters IDNA maps or drops.
func checkDecodedHost(written, host string, allow []netip.Prefix) (why string, named bool) {
	if strings.IndexByte(host, '%') >= 0 {
		// An IPv6 zone is any text: folding must not empty it.
		if addr, err := netip.ParseAddr(host); err == nil {
			return judgeAddr(written, addr, allow)
		}
	}
	folded, odd := foldHost(host)
	if why, named = judgeHost(written, folded, allow); why != "" || !odd {
		return why, named
	}
	return sprintf("has host %q, spelled with characters that IDNA maps to ASCII letters, digits or dots", written), false
}

// judgeHost judges host, lower-case ASCII apart from the letters of real IDNs; written is how
// the URL spells it, for the answer.
func judgeHost(written, host string, allow []netip.Prefix) (why string, named bool) {
	host = strings.TrimRight(host, ".")
	if host == "" {
		return "", false
	}
	if isLocalhostName(host) {
		if allowedAddr(loopback4, allow) || allowedAddr(loopback6, allow) {
			return "", false
		}
		return sprintf("names the loopback host %q (localhost and every name under it are loopback)", written), true
	}
	if strings.IndexByte(host, ':') >= 0 {
		addr, err := netip.ParseAddr(host)
		if err != nil {
			return "", false
		}
		return judgeAddr(written, addr, allow)
	}
	if !endsInNumber(host) {
		return "", false
	}
	octal, decimal, ok := parseIPv4(host)
	if !ok {
		return sprintf("has host %q, which ends in a number but is not an IPv4 address", written), false
	}
	if why, named = judgeAddr(written, octal, allow); why == "" && decimal != octal {
		return judgeAddr(written, decimal, allow)
	}
	return why, named
}

// judgeAddr refuses a non-public address outside allow, naming it and, when the URL spells it
// otherwise, how it is written.
func judgeAddr(written string, addr netip.Addr, allow []netip.Prefix) (why string, named bool) {
	reason := NonPublicOutside(addr, allow)
	if reason == "" {
		return "", false
	}
	a := addr.String()
	if written == a {
		return "names the non-public address " + a + " (" + reason + ")", true
	}
	return sprintf("names the non-public address %s (%s), written %q", a, reason, written), true
}

// isLocalhostName reports whether host is localhost, a name under it (RFC 6761), or one of the
// other loopback names of a stock /etc/hosts.
func isLocalhostName(host string) bool {
	switch host {
	case "localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback":
		return true
	}
	return strings.HasSuffix(host, ".localhost")
}

// endsInNumber reports whether the last label of host is a number as the WHATWG URL standard
// tells one: decimal digits, or 0x and hex digits.
func endsInNumber(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if len(last) >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X') {
		for i := 2; i < len(last); i++ {
			if hexVal(last[i]) < 0 {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(last); i++ {
		if last[i] < '0' || last[i] > '9' {
			return false
		}
	}
	return true
}

// parseIPv4 reads host as inet_aton and the WHATWG URL standard do: one to four parts, each
// decimal, octal after a leading 0 or hex after 0x ("0x" alone is 0), the last part filling
// the bytes left. decimal is the same host with leading zeros read as decimal, as older
// parsers did (0127.0.0.1 is 87.0.0.1 to inet_aton and was 127.0.0.1 to Go before 1.17); it is
// octal when no part has a leading zero. ok is false when no reading is an address.
func parseIPv4(host string) (octal, decimal netip.Addr, ok bool) {
	octal, okOctal := parseIPv4Base(host, false)
	decimal, okDecimal := parseIPv4Base(host, true)
	switch {
	case okOctal && okDecimal:
		return octal, decimal, true
	case okOctal:
		return octal, octal, true
	case okDecimal:
		return decimal, decimal, true
	}
	return netip.Addr{}, netip.Addr{}, false
}

func parseIPv4Base(host string, zerosDecimal bool) (netip.Addr, bool) {
	var parts [4]uint64
	n := 0
	for {
		if n == len(parts) {
			return netip.Addr{}, false
		}
		dot := strings.IndexByte(host, '.')
		part := host
		if dot >= 0 {
			part = host[:dot]
		}
		v, ok := parseIPv4Part(part, zerosDecimal)
		if !ok {
			return netip.Addr{}, false
		}
		parts[n] = v
		n++
		if dot < 0 {
			break
		}
		host = host[dot+1:]
	}
	for i := 0; i < n-1; i++ {
		if parts[i] > 0xff {
			return netip.Addr{}, false
		}
	}
	if parts[n-1] >= 1<<(8*(5-n)) {
		return netip.Addr{}, false
	}
	ip := parts[n-1]
	for i := 0; i < n-1; i++ {
		ip |= parts[i] << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}), true
}

func parseIPv4Part(s string, zerosDecimal bool) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := uint64(10)
	switch {
	case len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'):
		base, s = 16, s[2:]
	case len(s) >= 2 && s[0] == '0' && !zerosDecimal:
		base, s = 8, s[1:]
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		d := hexVal(s[i])
		if d < 0 || uint64(d) >= base {
			return 0, false
		}
		if v = v*base + uint64(d); v > 0xffffffff {
			return 0, false
		}
	}
	return v, true
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// percentDecode decodes the %XX escapes of s, leaving a '%' that starts none as it is.
func percentDecode(s string) string {
	if strings.IndexByte(s, '%') < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && hexVal(s[i+1]) >= 0 && hexVal(s[i+2]) >= 0 {
			b = append(b, byte(hexVal(s[i+1])<<4|hexVal(s[i+2])))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

// foldHost lowers ASCII letters and maps what IDNA (UTS #46) would turn into ASCII: fullwidth
// forms, the ideographic full stops, decimal digits of any script, long s and the Kelvin sign
// become their ASCII letters, digits and dots, and the characters it ignores (soft hyphen,
// zero-width and variation selectors) are dropped. odd reports characters left that IDNA would
// map to ASCII too but that are not folded here (superscripts, circled and mathematical
// letters and digits, ligatures, modifier letters, ...): no registrable name holds them.
func foldHost(host string) (folded string, odd bool) {
	b := make([]byte, 0, len(host))
	for _, r := range host {
		switch {
		case r >= 'A' && r <= 'Z':
			r += 'a' - 'A'
		case r < utf8.RuneSelf:
		case r >= 0xff01 && r <= 0xff5e: // fullwidth ASCII
			r -= 0xff01 - '!'
			if r >= 'A' && r <= 'Z' {
				r += 'a' - 'A'
			}
		case r == 0x3002 || r == 0xff61 || r == 0xfe52: // ideographic, halfwidth and small full stops
			r = '.'
		case r == 0x017f: // long s
			r = 's'
		case r == 0x212a: // Kelvin sign
			r = 'k'
		case ignoredByIDNA(r):
			continue
		case unicode.IsDigit(r):
			r = '0' + digitValue(r)
		case idnaMapsToASCII(r):
			odd = true
		}
		b = utf8.AppendRune(b, r)
	}
	return string(b), odd
}

// digitValue is the value of a decimal digit of any script: Unicode keeps each script's digits
// in runs of ten from zero.
func digitValue(r rune) rune {
	start := r
	for start > 0 && unicode.IsDigit(start-1) {
		start--
	}
	return (r - start) % 10
}

// ignoredByIDNA reports the characters UTS #46 maps to nothing.
func ignoredByIDNA(r rune) bool {
	switch {
	case r == 0x00ad, r == 0x034f, r == 0x200b, r == 0x2060, r == 0xfeff,
		r >= 0x180b && r <= 0x180f, r >= 0x200c && r <= 0x200d,
		r >= 0xfe00 && r <= 0xfe0f, r >= 0x1bca0 && r <= 0x1bca3, r >= 0xe0000 && r <= 0xe0fff:
		return true
	}
	return false
}

// idnaMapsToASCII reports the characters UTS #46 may map to ASCII letters, digits or dots that
// foldHost leaves: numbers other than decimal digits (IDNA2008 allows none of them), modifier
// letters of Latin (IDNA2008 allows other modifier letters, such as the okina) and whole
// blocks of compatibility forms.
func idnaMapsToASCII(r rune) bool {
	switch {
	case unicode.IsNumber(r),
		r >= 0x02b0 && r <= 0x02b8, r >= 0x02e0 && r <= 0x02e4, // spacing modifier letters ʰ ˡ ˢ ˣ
		r >= 0x1d2c && r <= 0x1d6a, r == 0x1d78, r >= 0x1d9b && r <= 0x1dbf, // phonetic modifier letters ᴬ ᵃ ᵢ
		r == 0xa770, r >= 0xa7f8 && r <= 0xa7f9, r >= 0xab5c && r <= 0xab5f,
		r >= 0x2070 && r <= 0x218f,   // superscripts, subscripts, letterlike symbols, number forms
		r >= 0x2460 && r <= 0x24ff,   // enclosed alphanumerics
		r >= 0x3200 && r <= 0x33ff,   // enclosed CJK letters, CJK compatibility
		r >= 0xfb00 && r <= 0xfb4f,   // ligatures
		r >= 0xfe10 && r <= 0xfe6f,   // vertical and small forms
		r >= 0xff00 && r <= 0xffef,   // halfwidth and fullwidth forms
		r >= 0x1d400 && r <= 0x1d7ff, // mathematical alphanumerics
		r >= 0x1f100 && r <= 0x1f1ff, // enclosed alphanumeric supplement
		r >= 0x1fbf0 && r <= 0x1fbf9: // segmented digits
		return true
	}
	return false
}
