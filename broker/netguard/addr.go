package netguard

import (
	"fmt"
	"net/netip"
)

// Class is what an address is, for the check before a dial.
type Class int

const (
	Public   Class = iota // a global unicast address
	Private               // loopback, private (RFC 1918, ULA), link-local, CGNAT, documentation: opened only by Reach.Private
	Metadata              // a cloud provider's instance metadata service: opened only by a rule naming that IP
	Never                 // unspecified, multicast, broadcast, reserved (Teredo, ORCHID, discard): never dialled
)

var (
	metadataAddrs = []netip.Addr{
		netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, OpenStack, DigitalOcean…
		netip.MustParseAddr("fd00:ec2::254"),   // AWS over IPv6
		netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
		netip.MustParseAddr("169.254.170.2"),   // AWS ECS task credentials
	}
	// Not public: loopback, RFC 1918, link-local, CGNAT, benchmarking, IETF, the documentation ranges (some
	// networks number hosts from them), ULA and site-local.
	privateNets = prefixes("127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16",
		"100.64.0.0/10", "198.18.0.0/15", "192.0.0.0/24", "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24",
		"2001:db8::/32", "::1/128", "fc00::/7", "fe80::/10", "fec0::/10")
	neverNets = prefixes("0.0.0.0/8", "224.0.0.0/4", "240.0.0.0/4", "::/96", "ff00::/8", "100::/64", "2001::/32",
		"2001:10::/28")
	// IPv6 ranges that carry an IPv4 address, which is what they reach: NAT64 (RFC 6052) and 6to4.
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	nat64Loc  = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// Classify says what a is. An IPv4-mapped IPv6 address is its IPv4 address; NAT64 and 6to4 addresses are the
// IPv4 address they carry (defends against reaching 127.0.0.1 or 169.254.169.254 under an IPv6 spelling).
func Classify(a netip.Addr) (Class, string) {
	if !a.IsValid() {
		return Never, "not an address"
	}
	if a.Zone() != "" {
		return Never, "an address with a zone"
	}
	a = a.Unmap()
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a), nat64Loc.Contains(a):
			v4 := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
			if c, why := Classify(v4); c != Public {
				return c, why + " (through NAT64)"
			}
		case sixToFour.Contains(a):
			v4 := netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
			if c, why := Classify(v4); c != Public {
				return c, why + " (through 6to4)"
			}
		}
	}
	for _, m := range metadataAddrs {
		if a == m {
			return Metadata, "a cloud metadata address"
		}
	}
	switch {
	case a.IsUnspecified():
		return Never, "the unspecified address"
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return Never, "the broadcast address"
	case a.IsMulticast():
		return Never, "a multicast address"
	case a.IsLoopback():
		return Private, "a loopback address"
	case a.IsLinkLocalUnicast():
		return Private, "a link-local address"
	}
	for _, p := range neverNets {
		if p.Contains(a) {
			return Never, fmt.Sprintf("a reserved address (%s)", p)
		}
	}
	for _, p := range privateNets {
		if p.Contains(a) {
			return Private, fmt.Sprintf("a private address (%s)", p)
		}
	}
	return Public, "a public address"
}

// Reach says which addresses of a host may be dialled.
type Reach struct {
	// Private opens loopback, private and link-local addresses: set only where a rule or a consent names this
	// exact host (policy.Decision.OpensPrivate).
	Private bool
}

// permits reports whether reach lets host's address a be dialled, and if not, why.
func (r Reach) permits(host string, a netip.Addr) error {
	c, why := Classify(a)
	switch {
	case c == Public:
		return nil
	case c == Private && r.Private:
		return nil
	case c == Metadata && r.Private && host == a.Unmap().String():
		return nil // a rule names this very IP address
	case c == Private:
		return fmt.Errorf("%s %s, which only a rule naming this exact host opens (network(domain:%s)): %w",
			host, describe(host, a, why), host, ErrRefused)
	case c == Metadata:
		return fmt.Errorf("%s %s, which only a rule naming that IP address opens: %w", host, describe(host, a, why), ErrRefused)
	}
	return fmt.Errorf("%s %s, which is never dialled: %w", host, describe(host, a, why), ErrRefused)
}

func describe(host string, a netip.Addr, why string) string {
	if host == a.Unmap().String() {
		return "is " + why
	}
	return "resolves to " + a.Unmap().String() + ", " + why
}
