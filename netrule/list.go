package netrule

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// kind is what an entry names.
type kind uint8

const (
	kindHost     kind = iota // one exact name
	kindWildcard             // strict subdomains of a name
	kindPrefix               // an IP address (a /32 or /128) or a CIDR
)

// anyPort in ports means every port; an entry without a port gets 80 and 443.
const anyPort = -1

// entry is one parsed allow or deny line.
type entry struct {
	rule   string // "net.allow[3]"
	kind   kind
	name   string // canonical host, or the suffix without "*." for a wildcard
	prefix netip.Prefix
	ports  []int
}

// List is a parsed allow/deny list. The zero value and nil both match
// nothing. A List is immutable after Parse and safe for concurrent use.
type List struct {
	deny, allow []entry
}

// Parse reads the `net.allow` and `net.deny` entries of a policy. Each entry is
// one of
//
//	host              example.com           ports 80 and 443 (deny: every port)
//	host:port         example.com:8443      that port only; ":*" for every port
//	*.suffix[:port]   *.example.com         strict subdomains: a.example.com, a.b.example.com,
//	                                        never example.com, never evil-example.com
//	IP[:port]         192.0.2.7, [2001:db8::1]:443, ::1
//	CIDR[:port]       10.0.0.0/8, [fd00::/8]:5432
//
// A deny entry without a port covers every port.
//
// Host parts are canonicalised as Canonical does, so `127.1` is the address
// 127.0.0.1 and `EXAMPLE.com.` is example.com. An error names the entry:
// `net.allow[2]: "..." : why`. A nil List is never returned with a nil error.
func Parse(allow, deny []string) (*List, error) {
	l := &List{}
	for i, s := range deny {
		e, err := parseEntry(s, denyPorts)
		if err != nil {
			return nil, fmt.Errorf("net.deny[%d]: %q: %w", i, s, err)
		}
		e.rule = fmt.Sprintf("net.deny[%d]", i)
		l.deny = append(l.deny, e)
	}
	for i, s := range allow {
		e, err := parseEntry(s, allowPorts)
		if err != nil {
			return nil, fmt.Errorf("net.allow[%d]: %q: %w", i, s, err)
		}
		e.rule = fmt.Sprintf("net.allow[%d]", i)
		l.allow = append(l.allow, e)
	}
	return l, nil
}

// The ports of an entry written without one: an allow entry opens the web
// ports only, a deny entry closes every port.
var (
	allowPorts = []int{80, 443}
	denyPorts  = []int{anyPort}
)

func parseEntry(s string, defaultPorts []int) (entry, error) {
	if strings.Contains(s, "://") {
		return entry{}, errors.New("write a host, not a URL (drop the scheme)")
	}
	if strings.ContainsAny(s, "/?#") && !looksLikeCIDR(s) {
		return entry{}, errors.New("write a host, not a URL (no path, query or fragment)")
	}
	host, portText, err := splitEntry(s)
	if err != nil {
		return entry{}, err
	}
	ports := defaultPorts
	if portText != "" {
		p, err := parsePort(portText)
		if err != nil {
			return entry{}, err
		}
		ports = []int{p}
	}
	e := entry{ports: ports}
	switch {
	case strings.Contains(host, "/"):
		pfx, err := netip.ParsePrefix(strings.Trim(host, "[]"))
		if err != nil {
			return entry{}, fmt.Errorf("invalid CIDR: %v", err)
		}
		if pfx.Addr().Zone() != "" {
			return entry{}, errors.New("a CIDR has no zone")
		}
		if pfx.Addr().Is4In6() && pfx.Bits() >= 96 {
			pfx = netip.PrefixFrom(pfx.Addr().Unmap(), pfx.Bits()-96)
		}
		if pfx != pfx.Masked() {
			return entry{}, fmt.Errorf("CIDR has host bits set (did you mean %s?)", pfx.Masked())
		}
		e.kind, e.prefix = kindPrefix, pfx
	case strings.HasPrefix(host, "*."):
		suffix, err := Canonical(host[2:])
		if err != nil {
			return entry{}, err
		}
		if _, err := netip.ParseAddr(suffix); err == nil {
			return entry{}, errors.New("a wildcard needs a domain name, not an address")
		}
		if !strings.Contains(suffix, ".") {
			return entry{}, errors.New("a wildcard over a top-level domain is too broad")
		}
		e.kind, e.name = kindWildcard, suffix
	case strings.Contains(host, "*"):
		return entry{}, errors.New(`"*" is allowed only as a whole first label ("*.example.com")`)
	default:
		c, err := Canonical(host)
		if err != nil {
			return entry{}, err
		}
		if a, err := netip.ParseAddr(c); err == nil {
			e.kind, e.prefix = kindPrefix, netip.PrefixFrom(a, a.BitLen())
		} else {
			e.kind, e.name = kindHost, c
		}
	}
	return e, nil
}

func looksLikeCIDR(s string) bool {
	return strings.Count(s, "/") == 1 && !strings.ContainsAny(s, "?#")
}

// splitEntry separates an entry's host from its port, if any. An IPv6
// address with a port must be bracketed; a bare one has no port.
func splitEntry(s string) (host, port string, err error) {
	if s == "" {
		return "", "", errors.New("empty entry")
	}
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", errors.New("unbalanced '['")
		}
		host, rest := s[:end+1], s[end+1:]
		if rest == "" {
			return host, "", nil
		}
		if rest[0] != ':' || len(rest) == 1 {
			return "", "", errors.New("expected ':port' after ']'")
		}
		return host, rest[1:], nil
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, "", nil
	case 1:
		i := strings.IndexByte(s, ':')
		if i == len(s)-1 {
			return "", "", errors.New("empty port")
		}
		return s[:i], s[i+1:], nil
	}
	return s, "", nil // a bare IPv6 address or CIDR
}

func parsePort(s string) (int, error) {
	if s == "*" {
		return anyPort, nil
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("port %q is not a number (or \"*\")", s)
		}
	}
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 || len(s) > 5 {
		return 0, fmt.Errorf("port %q is not in 1-65535", s)
	}
	return p, nil
}

func (e *entry) port(p int) bool {
	for _, q := range e.ports {
		if q == anyPort || q == p {
			return true
		}
	}
	return false
}

// matchHost reports whether e names the canonical host h (a name or an
// address) at port p.
func (e *entry) matchHost(h string, a netip.Addr, isAddr bool, p int) bool {
	if !e.port(p) {
		return false
	}
	switch e.kind {
	case kindHost:
		return !isAddr && h == e.name
	case kindWildcard:
		// Strict subdomain: at least one whole label before the suffix.
		return !isAddr && len(h) > len(e.name)+1 &&
			strings.HasSuffix(h, e.name) && h[len(h)-len(e.name)-1] == '.'
	case kindPrefix:
		return isAddr && e.prefix.Contains(a)
	}
	return false
}

// Match reports whether host at port is allowed, and which entry decided:
// "net.deny[i]" (ok false) or "net.allow[i]" (ok true). Deny entries are
// checked first. host is canonicalised here; a host that Canonical refuses
// matches nothing. A nil or empty List matches nothing, and so does a port
// outside 1-65535. rule is "" when no entry matched.
//
// Host and wildcard entries match names only and IP entries match addresses
// only: a name is never compared with an address it might resolve to (the
// proxy checks resolved addresses with AllowsAddr and Global).
func (l *List) Match(host string, port int) (ok bool, rule string) {
	if l == nil || port < 1 || port > 65535 {
		return false, ""
	}
	h, err := Canonical(host)
	if err != nil {
		return false, ""
	}
	a, aerr := netip.ParseAddr(h)
	isAddr := aerr == nil
	for i := range l.deny {
		if l.deny[i].matchHost(h, a, isAddr, port) {
			return false, l.deny[i].rule
		}
	}
	for i := range l.allow {
		if l.allow[i].matchHost(h, a, isAddr, port) {
			return true, l.allow[i].rule
		}
	}
	return false, ""
}

// AllowsAddr reports whether an IP or CIDR entry of the allow list names addr
// at port, and none of the deny list's IP or CIDR entries does. Host and
// wildcard entries never admit an address: that is what keeps a name that
// resolves to 127.0.0.1 from reaching this host. addr's zone is ignored and
// IPv4-mapped addresses are read as IPv4.
func (l *List) AllowsAddr(addr netip.Addr, port int) (ok bool, rule string) {
	if l == nil || !addr.IsValid() || port < 1 || port > 65535 {
		return false, ""
	}
	if denied, rule := l.DeniesAddr(addr, port); denied {
		return false, rule
	}
	a := canonicalAddr(addr)
	for i := range l.allow {
		if l.allow[i].matchHost("", a, true, port) {
			return true, l.allow[i].rule
		}
	}
	return false, ""
}

// DeniesAddr reports whether an IP or CIDR entry of the deny list names addr
// at port. The proxy asks it for every address it is about to connect to, so
// a deny CIDR holds against names that resolve into it.
func (l *List) DeniesAddr(addr netip.Addr, port int) (denied bool, rule string) {
	if l == nil || !addr.IsValid() {
		return false, ""
	}
	a := canonicalAddr(addr)
	for i := range l.deny {
		if l.deny[i].matchHost("", a, true, port) {
			return true, l.deny[i].rule
		}
	}
	return false, ""
}

// Empty reports whether the list allows nothing at all.
func (l *List) Empty() bool { return l == nil || len(l.allow) == 0 }
