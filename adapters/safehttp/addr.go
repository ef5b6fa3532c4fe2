package safehttp

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// ErrBlockedAddress is the sentinel under every *BlockedError.
var ErrBlockedAddress = errors.New("safehttp: address blocked")

// BlockedError names the refused address and why it is refused.
type BlockedError struct {
	Host   string // the name asked for, when there was one
	Addr   netip.Addr
	Reason string
}

func (e *BlockedError) Error() string {
	if e.Host != "" && e.Host != e.Addr.String() {
		return fmt.Sprintf("safehttp: %s resolves to %s (%s), which is blocked", e.Host, e.Addr, e.Reason)
	}
	return fmt.Sprintf("safehttp: address %s (%s) is blocked", e.Addr, e.Reason)
}

func (e *BlockedError) Is(target error) bool { return target == ErrBlockedAddress }

type blockedRange struct {
	prefix netip.Prefix
	reason string
}

// The IANA special-purpose registries (IPv4 and IPv6), minus nothing: none of these is a place
// a media file or a webhook receiver should live.
var blockedV4 = ranges(
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
)

var blockedV6 = ranges(
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
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
	global6   = netip.MustParsePrefix("2000::/3")
)

func ranges(pairs ...string) []blockedRange {
	out := make([]blockedRange, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, blockedRange{netip.MustParsePrefix(pairs[i]), pairs[i+1]})
	}
	return out
}

// classify returns why addr must not be dialled, or "" when it is a public unicast address.
// IPv6 forms that carry an IPv4 address (mapped, NAT64, 6to4) are judged by that address.
func classify(addr netip.Addr) string {
	addr = addr.WithZone("").Unmap()
	if !addr.IsValid() {
		return "invalid"
	}
	if addr.Is4() {
		for _, r := range blockedV4 {
			if r.prefix.Contains(addr) {
				return r.reason
			}
		}
		return ""
	}
	if v4, ok := embeddedV4(addr); ok {
		if reason := classify(v4); reason != "" {
			return "embeds " + v4.String() + ", " + reason
		}
		return ""
	}
	for _, r := range blockedV6 {
		if r.prefix.Contains(addr) {
			return r.reason
		}
	}
	if !global6.Contains(addr) {
		return "not global unicast"
	}
	return ""
}

// embeddedV4 extracts the IPv4 address NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry: a
// packet to them reaches that IPv4 host through a translator or relay.
func embeddedV4(addr netip.Addr) (netip.Addr, bool) {
	b := addr.As16()
	switch {
	case nat64.Contains(addr):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFour.Contains(addr):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}

// CheckAddr returns a *BlockedError unless addr is public or inside one of the allowed prefixes.
func CheckAddr(addr netip.Addr, allow []netip.Prefix) error {
	addr = addr.WithZone("").Unmap()
	reason := classify(addr)
	if reason == "" || allowed(addr, allow) {
		return nil
	}
	return &BlockedError{Addr: addr, Reason: reason}
}

func allowed(addr netip.Addr, allow []netip.Prefix) bool {
	v4, embedded := embeddedV4(addr)
	for _, p := range allow {
		if p.Contains(addr) || (embedded && p.Contains(v4)) {
			return true
		}
	}
	return false
}

// ParseAllowList parses MEDIAJOBS_ALLOW_PRIVATE_NETWORKS: comma-separated CIDR prefixes (a bare
// address means just that address). The empty string opens nothing.
func ParseAllowList(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, field := range strings.Split(s, ",") {
		field = strings.TrimSpace(field)
		if field == "" {
			continue
		}
		if !strings.Contains(field, "/") {
			addr, err := netip.ParseAddr(field)
			if err != nil || addr.Zone() != "" {
				return nil, fmt.Errorf("safehttp: allow list entry %q is not a CIDR prefix or address", field)
			}
			out = append(out, netip.PrefixFrom(addr.Unmap(), addr.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(field)
		if err != nil {
			return nil, fmt.Errorf("safehttp: allow list entry %q: %w", field, err)
		}
		if p.Addr().Is4In6() {
			return nil, fmt.Errorf("safehttp: allow list entry %q: write IPv4 prefixes in IPv4 form", field)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
