package safehttp

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/mediajobs/mediajobs/validator"
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

// CheckAddr returns a *BlockedError unless addr is public or inside one of the allowed prefixes.
// What is public is the validator's table (validator.NonPublicOutside), so that a URL the
// validator lets through is one the fetcher dials, and the other way round.
func CheckAddr(addr netip.Addr, allow []netip.Prefix) error {
	addr = addr.WithZone("").Unmap()
	if reason := validator.NonPublicOutside(addr, allow); reason != "" {
		return &BlockedError{Addr: addr, Reason: reason}
	}
	return nil
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
