// Package netrule holds airlock's network allowlist: the host canonicaliser,
// the allow/deny entries of a policy's `net` section, and the classification
// of addresses as globally routable or not.
//
// It is pure (no I/O, no resolver, no clock), so the policy package, the
// egress proxy and tests may all import it and get the same answer for the
// same spelling. Everything that compares a host against a rule goes through
// Canonical first: allowlist bypasses have come from spellings that two
// parsers read differently (`127.1`, `0x7f.1`, trailing dots, upper case,
// Unicode look-alikes, `::ffff:127.0.0.1`), so there is exactly one reading.
package netrule

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Limits from RFC 1035: a label is at most 63 octets, a name at most 253
// characters in its dotted text form.
const (
	maxLabel = 63
	maxName  = 253
)

// Canonical returns the one spelling of host that airlock compares and
// connects to, or an error saying why host is not a host.
//
//   - Names are lower-cased, lose one trailing dot, and are converted to their
//     ASCII (IDNA "xn--") form with the lookup profile of UTS #46, so `EXAMPLE.com.`
//     and `exämple.com` compare equal to what a resolver would be asked.
//   - Every IPv4 spelling that a C resolver (inet_aton) or a browser accepts
//     — `127.1`, `0x7f.0.0.1`, `0177.0.0.1`, `2130706433` — becomes dotted
//     decimal. A name whose last label is numeric but that is not a valid
//     IPv4 address is refused rather than treated as a name, since some
//     parser downstream would read it as an address.
//   - IPv6 literals may be bracketed; their zone id is dropped (it selects an
//     interface, not a destination); IPv4-mapped (`::ffff:a.b.c.d`) and
//     IPv4-compatible (`::a.b.c.d`) forms become the IPv4 address.
//   - Control characters, NUL, whitespace, `@`, empty labels, and any
//     character that cannot appear in a host name are refused.
//
// Canonical is idempotent: Canonical(Canonical(h)) == Canonical(h).
func Canonical(host string) (string, error) {
	if host == "" {
		return "", errors.New("empty host")
	}
	if len(host) > 1024 {
		return "", errors.New("host too long")
	}
	for _, r := range host {
		switch {
		case r == utf8.RuneError:
			return "", errors.New("host is not valid UTF-8")
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return "", fmt.Errorf("host contains control character %U", r)
		case unicode.IsSpace(r):
			return "", fmt.Errorf("host contains white space %U", r)
		case r == '@':
			return "", errors.New("host contains '@' (user info is not part of a host)")
		case unicode.Is(unicode.Cf, r) && r != 0x200c && r != 0x200d:
			// Format characters (soft hyphen, bidi controls) render as nothing.
			return "", fmt.Errorf("host contains invisible character %U", r)
		}
	}
	if a, ok, err := parseIPLiteral(host); ok || err != nil {
		if err != nil {
			return "", err
		}
		return a.String(), nil
	}
	name := strings.ToLower(host)
	name = strings.TrimSuffix(name, ".")
	if name == "" {
		return "", errors.New("empty host")
	}
	if strings.HasPrefix(name, ".") || strings.Contains(name, "..") {
		return "", errors.New("host has an empty label")
	}
	// A name is decided to be an IPv4 address by its last label, as the URL
	// standard does: "1.2.3.4", "0x7f.1" and "foo.0x10" are all addresses
	// (the last one invalid). Anything else ending in a number is refused too.
	if v4, ok, err := numericName(name); ok {
		return v4, err
	}
	var ascii string
	if isLDH(name) {
		ascii = name
		// An ASCII name may still carry punycode; it must decode to a valid
		// IDN, or two readers could disagree about what it names.
		if strings.Contains(name, "xn--") {
			u, err := idna.Lookup.ToUnicode(name)
			if err != nil {
				return "", fmt.Errorf("invalid internationalised name: %v", err)
			}
			back, err := idna.Lookup.ToASCII(u)
			if err != nil || back != name {
				return "", errors.New("punycode label is not in canonical form")
			}
		}
	} else {
		var err error
		ascii, err = idna.Lookup.ToASCII(name)
		if err != nil {
			return "", fmt.Errorf("invalid host name: %v", err)
		}
		ascii = strings.TrimSuffix(ascii, ".")
		if !isLDH(ascii) {
			return "", errors.New("host contains a character not allowed in a host name")
		}
		// IDNA mapping can turn full-width digits and dots into ASCII ones;
		// the result gets the same address test as an ASCII input.
		if v4, ok, err := numericName(ascii); ok {
			return v4, err
		}
	}
	if err := checkLabels(ascii); err != nil {
		return "", err
	}
	return ascii, nil
}

// numericName reads name as an IPv4 address when its last label is numeric
// (ok true); err says why such a name is not a valid address.
func numericName(name string) (v4 string, ok bool, err error) {
	if !numericLabel(name[strings.LastIndexByte(name, '.')+1:]) {
		return "", false, nil
	}
	a, err := parseIPv4(name)
	if err != nil {
		return "", true, err
	}
	return a.String(), true, nil
}

// isLDH reports whether s has only lower-case letters, digits, hyphens,
// underscores (which real names carry, e.g. service records) and dots.
func isLDH(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func checkLabels(name string) error {
	if len(name) > maxName {
		return errors.New("host name longer than 253 characters")
	}
	for _, l := range strings.Split(name, ".") {
		switch {
		case l == "":
			return errors.New("host has an empty label")
		case len(l) > maxLabel:
			return errors.New("host label longer than 63 characters")
		case l[0] == '-' || l[len(l)-1] == '-':
			return fmt.Errorf("host label %q starts or ends with '-'", l)
		}
	}
	return nil
}

// parseIPLiteral recognises IPv6 literals (bare or bracketed, with or without
// a zone) and dotted-decimal IPv4. ok is false when host is not written as
// one of these; err is set when it is but is malformed.
func parseIPLiteral(host string) (a netip.Addr, ok bool, err error) {
	h := host
	bracketed := false
	if strings.HasPrefix(h, "[") {
		if !strings.HasSuffix(h, "]") {
			return netip.Addr{}, true, errors.New("unbalanced '[' in host")
		}
		h = h[1 : len(h)-1]
		bracketed = true
	}
	if !bracketed && !strings.Contains(h, ":") {
		return netip.Addr{}, false, nil
	}
	if !strings.Contains(h, ":") {
		return netip.Addr{}, true, errors.New("brackets around something that is not an IPv6 address")
	}
	if i := strings.IndexByte(h, '%'); i >= 0 {
		if i == len(h)-1 {
			return netip.Addr{}, true, errors.New("empty IPv6 zone")
		}
		h = h[:i]
	}
	a, err = netip.ParseAddr(h)
	if err != nil || !a.Is6() {
		return netip.Addr{}, true, fmt.Errorf("invalid IPv6 address %q", h)
	}
	return canonicalAddr(a), true, nil
}

// canonicalAddr drops the zone and turns IPv6 forms that carry an IPv4
// address in their low 32 bits by definition (mapped, compatible) into that
// IPv4 address.
func canonicalAddr(a netip.Addr) netip.Addr {
	a = a.WithZone("")
	if a.Is4In6() {
		return a.Unmap()
	}
	if a.Is6() {
		b := a.As16()
		compat := true
		for _, x := range b[:12] {
			if x != 0 {
				compat = false
				break
			}
		}
		// :: and ::1 are IPv6's own unspecified and loopback addresses; the
		// rest of ::/96 is the deprecated IPv4-compatible form.
		if compat && !(b[12] == 0 && b[13] == 0 && b[14] == 0 && b[15] <= 1) {
			return netip.AddrFrom4([4]byte(b[12:]))
		}
	}
	return a
}

// numericLabel reports whether a label is a number in the sense of the URL
// standard's IPv4 parser: decimal digits, or 0x/0X followed by hex digits.
func numericLabel(l string) bool {
	if l == "" {
		return false
	}
	if len(l) >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X') {
		for i := 2; i < len(l); i++ {
			if !isHex(l[i]) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// parseIPv4 reads every spelling inet_aton accepts: one to four parts, each
// decimal, octal (leading 0) or hex (0x); the last part fills the bytes
// that remain.
func parseIPv4(s string) (netip.Addr, error) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, fmt.Errorf("%q is not an IPv4 address (more than four parts)", s)
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, err := parseIPv4Part(p)
		if err != nil {
			return netip.Addr{}, fmt.Errorf("%q is not an IPv4 address: %v", s, err)
		}
		vals[i] = v
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, fmt.Errorf("%q is not an IPv4 address: part %d is over 255", s, i+1)
		}
		n |= v << (8 * (3 - i))
	}
	last := vals[len(vals)-1]
	room := uint(8 * (5 - len(vals)))
	if last >= 1<<room {
		return netip.Addr{}, fmt.Errorf("%q is not an IPv4 address: last part too large", s)
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), nil
}

func parseIPv4Part(p string) (uint64, error) {
	if p == "" {
		return 0, errors.New("empty part")
	}
	base := 10
	digits := p
	switch {
	case len(p) >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'):
		base, digits = 16, p[2:]
		if digits == "" {
			return 0, nil // "0x" alone is zero to inet_aton and to browsers
		}
	case len(p) > 1 && p[0] == '0':
		base, digits = 8, p[1:]
	}
	if len(digits) > 32 {
		return 0, errors.New("part too long")
	}
	v, err := strconv.ParseUint(digits, base, 64)
	if err != nil || strings.ContainsAny(digits, "+-_") {
		return 0, fmt.Errorf("part %q is not a number in base %d", p, base)
	}
	return v, nil
}
