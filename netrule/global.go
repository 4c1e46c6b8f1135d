package netrule

import "net/netip"

// Prefixes that are never a destination on the public Internet. Sources: the
// IANA IPv4 and IPv6 special-purpose address registries (RFC 6890 and its
// updates) and the cloud metadata services that live in them.
var (
	nonGlobal4 = prefixes(
		"0.0.0.0/8",       // "this network", and 0.0.0.0 reaches this host on Linux
		"10.0.0.0/8",      // private
		"100.64.0.0/10",   // shared address space (CGNAT); includes 100.100.100.200, Alibaba metadata
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link-local; includes 169.254.169.254, the AWS/GCP/Azure metadata service
		"172.16.0.0/12",   // private
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation (TEST-NET-1)
		"192.31.196.0/24", // AS112
		"192.52.193.0/24", // AMT
		"192.88.99.0/24",  // deprecated 6to4 relay anycast
		"192.168.0.0/16",  // private
		"192.175.48.0/24", // AS112 direct delegation
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation (TEST-NET-2)
		"203.0.113.0/24",  // documentation (TEST-NET-3)
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, and 255.255.255.255 broadcast
	)
	global6        = netip.MustParsePrefix("2000::/3") // the only global unicast space
	nat64WellKnown = netip.MustParsePrefix("64:ff9b::/96")
	teredo         = netip.MustParsePrefix("2001::/32")
	sixToFour      = netip.MustParsePrefix("2002::/16")
	nonGlobal6     = prefixes(
		"2001::/23",         // IETF protocol assignments (Teredo is handled before this)
		"2001:db8::/32",     // documentation
		"3fff::/20",         // documentation (RFC 9637)
		"2620:4f:8000::/48", // AS112
	)
)

func prefixes(ss ...string) []netip.Prefix {
	ps := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		ps[i] = netip.MustParsePrefix(s)
	}
	return ps
}

// Global reports whether addr is a globally routable unicast address, the
// only kind the egress proxy connects to without an IP entry naming it.
//
// It is false for loopback, "this host" (0.0.0.0/8, ::), private and unique
// local, link-local, CGNAT, multicast, broadcast and reserved space,
// documentation and benchmarking ranges, and the cloud metadata addresses
// (169.254.169.254, fd00:ec2::254, 100.100.100.200), all of which lie in
// those ranges. Addresses that carry an IPv4 address inside an IPv6 one —
// IPv4-mapped and -compatible, NAT64 (64:ff9b::/96), 6to4 (2002::/16) and
// Teredo (2001::/32) — are global only when every embedded IPv4 address is;
// the local-use NAT64 prefix 64:ff9b:1::/48 is never global, since its
// embedding is site-defined and cannot be checked. An invalid Addr is not
// global. Global does not know this host's own public addresses; the proxy
// checks those separately.
func Global(addr netip.Addr) bool {
	if !addr.IsValid() {
		return false
	}
	addr = canonicalAddr(addr)
	if addr.Is4() {
		for _, p := range nonGlobal4 {
			if p.Contains(addr) {
				return false
			}
		}
		return true
	}
	b := addr.As16()
	switch {
	case nat64WellKnown.Contains(addr):
		return Global(netip.AddrFrom4([4]byte(b[12:])))
	case teredo.Contains(addr):
		server := netip.AddrFrom4([4]byte(b[4:8]))
		client := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		return Global(server) && Global(client)
	case sixToFour.Contains(addr):
		return Global(netip.AddrFrom4([4]byte(b[2:6])))
	case !global6.Contains(addr):
		// Outside 2000::/3: loopback, unspecified, the rest of ::/96,
		// ULA fc00::/7 (fd00:ec2::254 among them), link-local fe80::/10,
		// multicast ff00::/8, discard 100::/64, 64:ff9b:1::/48, 5f00::/16.
		return false
	}
	for _, p := range nonGlobal6 {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}
