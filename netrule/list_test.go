package netrule

import (
	"net/netip"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	l, err := Parse(
		[]string{
			"api.github.com",         // 0
			"*.example.com",          // 1
			"registry.npmjs.org:443", // 2
			"10.1.0.0/16",            // 3
			"[2001:db8::7]:8443",     // 4
			"127.1:5432",             // 5
			"any.example.net:*",      // 6
			"bücher.example",         // 7
			"blocked.example.com",    // 8 (deny wins)
		},
		[]string{"blocked.example.com", "10.1.9.0/24"},
	)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		host string
		port int
		ok   bool
		rule string
	}{
		{"exact 443", "api.github.com", 443, true, "net.allow[0]"},
		{"exact 80", "api.github.com", 80, true, "net.allow[0]"},
		{"exact other port", "api.github.com", 22, false, ""},
		{"exact upper dot", "API.GitHub.com.", 443, true, "net.allow[0]"},
		{"exact subdomain not included", "x.api.github.com", 443, false, ""},
		{"suffix confusion", "evilapi.github.com", 443, false, ""},
		{"wildcard one label", "a.example.com", 443, true, "net.allow[1]"},
		{"wildcard two labels", "a.b.example.com", 80, true, "net.allow[1]"},
		{"wildcard apex", "example.com", 443, false, ""},
		{"wildcard hyphen confusion", "evil-example.com", 443, false, ""},
		{"wildcard glued", "aexample.com", 443, false, ""},
		{"wildcard as suffix of longer", "a.example.com.evil.org", 443, false, ""},
		{"wildcard port", "a.example.com", 8080, false, ""},
		{"port entry", "registry.npmjs.org", 443, true, "net.allow[2]"},
		{"port entry other", "registry.npmjs.org", 80, false, ""},
		{"cidr", "10.1.2.3", 443, true, "net.allow[3]"},
		{"cidr spelled short", "10.1.515", 443, true, "net.allow[3]"},
		{"cidr outside", "10.2.0.1", 443, false, ""},
		{"deny cidr first", "10.1.9.9", 443, false, "net.deny[1]"},
		{"v6 literal", "[2001:db8::7]", 8443, true, "net.allow[4]"},
		{"v6 literal long", "2001:db8:0:0:0:0:0:7", 8443, true, "net.allow[4]"},
		{"loopback spelled", "0x7f.1", 5432, true, "net.allow[5]"},
		{"loopback mapped", "::ffff:127.0.0.1", 5432, true, "net.allow[5]"},
		{"loopback other port", "127.0.0.1", 5433, false, ""},
		{"any port", "any.example.net", 65535, true, "net.allow[6]"},
		{"idn unicode", "BÜCHER.example", 443, true, "net.allow[7]"},
		{"idn punycode", "xn--bcher-kva.example", 443, true, "net.allow[7]"},
		{"deny first", "blocked.example.com", 443, false, "net.deny[0]"},
		{"bad host", "api.github.com\x00", 443, false, ""},
		{"at host", "x@api.github.com", 443, false, ""},
		{"port zero", "api.github.com", 0, false, ""},
		{"port too big", "api.github.com", 65536, false, ""},
		{"name is not address", "localhost", 5432, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, rule := l.Match(tc.host, tc.port)
			if ok != tc.ok || rule != tc.rule {
				t.Fatalf("Match(%q, %d) = %v, %q; want %v, %q", tc.host, tc.port, ok, rule, tc.ok, tc.rule)
			}
		})
	}
}

func TestEmptyMatchesNothing(t *testing.T) {
	var nilList *List
	empty, err := Parse(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, l := range map[string]*List{"nil": nilList, "empty": empty, "zero": {}} {
		t.Run(name, func(t *testing.T) {
			if ok, rule := l.Match("example.com", 443); ok {
				t.Fatalf("Match = true (%s), want false", rule)
			}
			if ok, rule := l.AllowsAddr(netip.MustParseAddr("8.8.8.8"), 443); ok {
				t.Fatalf("AllowsAddr = true (%s), want false", rule)
			}
			if !l.Empty() {
				t.Fatal("Empty() = false, want true")
			}
		})
	}
}

func TestAllowsAddr(t *testing.T) {
	l, err := Parse(
		[]string{"localhost:8080", "*.internal.example", "127.0.0.1:8080", "fd00::/8", "10.0.0.0/8:5432"},
		[]string{"10.9.0.0/16", "internal.example"},
	)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		addr string
		port int
		ok   bool
		rule string
	}{
		{"ip entry", "127.0.0.1", 8080, true, "net.allow[2]"},
		{"ip entry mapped", "::ffff:127.0.0.1", 8080, true, "net.allow[2]"},
		{"ip entry wrong port", "127.0.0.1", 8081, false, ""},
		{"other loopback", "127.0.0.2", 8080, false, ""},
		{"v6 cidr", "fd00:ec2::254", 443, true, "net.allow[3]"},
		{"v6 cidr zone", "fd00::1%eth0", 80, true, "net.allow[3]"},
		{"cidr port", "10.1.1.1", 5432, true, "net.allow[4]"},
		{"deny cidr", "10.9.1.1", 5432, false, "net.deny[0]"},
		{"host entry never admits", "::1", 8080, false, ""},
		{"invalid", "", 80, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a netip.Addr
			if tc.addr != "" {
				a = netip.MustParseAddr(tc.addr)
			}
			ok, rule := l.AllowsAddr(a, tc.port)
			if ok != tc.ok || rule != tc.rule {
				t.Fatalf("AllowsAddr(%s, %d) = %v, %q; want %v, %q", tc.addr, tc.port, ok, rule, tc.ok, tc.rule)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name        string
		allow, deny []string
		want        string
	}{
		{"url", []string{"https://example.com"}, nil, `net.allow[0]: "https://example.com": write a host, not a URL`},
		{"path", []string{"example.com/x"}, nil, `net.allow[0]: "example.com/x"`},
		{"empty", []string{"ok.example", ""}, nil, `net.allow[1]: "": empty entry`},
		{"port zero", []string{"example.com:0"}, nil, "not in 1-65535"},
		{"port big", []string{"example.com:65536"}, nil, "not in 1-65535"},
		{"port text", []string{"example.com:https"}, nil, "not a number"},
		{"empty port", []string{"example.com:"}, nil, "empty port"},
		{"bare star", []string{"*"}, nil, `"*" is allowed only`},
		{"star tld", []string{"*.com"}, nil, "too broad"},
		{"star middle", []string{"a.*.example.com"}, nil, `"*" is allowed only`},
		{"star glued", []string{"*example.com"}, nil, `"*" is allowed only`},
		{"star ip", []string{"*.1.2.3"}, nil, "needs a domain name"},
		{"cidr host bits", []string{"10.0.0.1/8"}, nil, "host bits"},
		{"cidr bad", []string{"10.0.0.0/33"}, nil, "invalid CIDR"},
		{"deny named", nil, []string{"ok.example", "a b"}, `net.deny[1]: "a b"`},
		{"control", []string{"exa\x01mple.com"}, nil, "control character"},
		{"at", []string{"user@example.com"}, nil, "'@'"},
		{"bracket junk", []string{"[::1]x"}, nil, "expected ':port'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Parse(tc.allow, tc.deny)
			if err == nil {
				t.Fatalf("Parse = %v, nil; want error containing %q", l, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

// FuzzCanonical checks that Canonical never panics, is idempotent, and never
// returns a host containing a byte that could split a request line or a
// user-info part.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		"example.com", "EXAMPLE.com.", "127.1", "0x7f.0.0.1", "0177.0.0.1", "2130706433",
		"[::ffff:127.0.0.1]", "fe80::1%eth0", "bücher.example", "xn--bcher-kva.example",
		"a..b", "a@b", "１２７.０.０.１", "::a9fe:a9fe", "0x", "0x.0x.0x.0x", "1.2.3.4.5",
		"example.com\x00", "_srv.example", "2002:7f00:1::1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Canonical(s)
		if err != nil {
			return
		}
		if c == "" || strings.ContainsAny(c, "@ \t\r\n\x00/\\%[]*") {
			t.Fatalf("Canonical(%q) = %q: contains a forbidden byte", s, c)
		}
		c2, err := Canonical(c)
		if err != nil || c2 != c {
			t.Fatalf("Canonical not idempotent: %q -> %q -> %q, %v", s, c, c2, err)
		}
		if a, err := netip.ParseAddr(c); err == nil {
			if a.Is4In6() || a.Zone() != "" {
				t.Fatalf("Canonical(%q) = %q: mapped or zoned address survived", s, c)
			}
		}
	})
}

// FuzzParse checks that Parse never panics and that a parsed entry matches
// the host it was written as (when it names one host) and nothing on an
// unparsable host.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"example.com", "*.example.com:8443", "10.0.0.0/8", "[fd00::/8]:5432", "[::1]:443", "::1",
		"127.1:5432", "host:*", "https://x", "*.", "[", "]:", "a:b:c", "[::ffff:10.0.0.0/104]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := Parse([]string{s}, nil)
		if err != nil {
			if l != nil {
				t.Fatal("Parse returned a list with an error")
			}
			return
		}
		if len(l.allow) != 1 {
			t.Fatalf("Parse(%q) gave %d entries", s, len(l.allow))
		}
		e := l.allow[0]
		if e.kind == kindHost {
			if ok, _ := l.Match(e.name, e.ports[0]%65536); !ok && e.ports[0] != anyPort {
				t.Fatalf("entry %q does not match its own host %q", s, e.name)
			}
			if ok, _ := l.Match("x"+e.name, 443); ok {
				t.Fatalf("entry %q matches x%s", s, e.name)
			}
		}
		if e.kind == kindWildcard {
			if ok, _ := l.Match(e.name, 443); ok {
				t.Fatalf("wildcard %q matches its apex", s)
			}
		}
		// Denying what was allowed always wins.
		both, err := Parse([]string{s}, []string{s})
		if err != nil {
			t.Fatalf("Parse(%q) as deny: %v", s, err)
		}
		if e.kind == kindHost {
			if ok, _ := both.Match(e.name, 443); ok {
				t.Fatalf("deny %q did not win", s)
			}
		}
	})
}
