package netrule

import (
	"net/netip"
	"strings"
	"testing"
)

func TestCanonical(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"lower case", "EXAMPLE.Com", "example.com"},
		{"trailing dot", "example.com.", "example.com"},
		{"idna", "bücher.example", "xn--bcher-kva.example"},
		{"idna upper", "BÜCHER.example", "xn--bcher-kva.example"},
		{"punycode kept", "xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"full-width dots", "example。com", "example.com"},
		{"underscore label", "_dmarc.example.com", "_dmarc.example.com"},
		{"dotted decimal", "127.0.0.1", "127.0.0.1"},
		{"short two parts", "127.1", "127.0.0.1"},
		{"short three parts", "127.0.1", "127.0.0.1"},
		{"hex parts", "0x7f.0.0.1", "127.0.0.1"},
		{"hex upper", "0X7F.0.0.1", "127.0.0.1"},
		{"octal", "0177.0.0.1", "127.0.0.1"},
		{"decimal integer", "2130706433", "127.0.0.1"},
		{"hex integer", "0x7f000001", "127.0.0.1"},
		{"octal integer", "017700000001", "127.0.0.1"},
		{"ipv4 trailing dot", "127.0.0.1.", "127.0.0.1"},
		{"metadata decimal", "2852039166", "169.254.169.254"},
		{"full-width digits", "１２７.０.０.１", "127.0.0.1"},
		{"bare zero", "0", "0.0.0.0"},
		{"ipv6", "::1", "::1"},
		{"ipv6 bracketed", "[::1]", "::1"},
		{"ipv6 long form", "0:0:0:0:0:0:0:1", "::1"},
		{"ipv6 upper", "FD00:EC2::254", "fd00:ec2::254"},
		{"ipv6 zone", "fe80::1%eth0", "fe80::1"},
		{"ipv6 zone bracketed", "[fe80::1%25eth0]", "fe80::1"},
		{"mapped", "::ffff:127.0.0.1", "127.0.0.1"},
		{"mapped hex", "::ffff:7f00:1", "127.0.0.1"},
		{"mapped bracketed", "[::ffff:169.254.169.254]", "169.254.169.254"},
		{"compatible", "::127.0.0.1", "127.0.0.1"},
		{"compatible hex", "::a9fe:a9fe", "169.254.169.254"},
		{"unspecified v6", "::", "::"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Canonical(tc.in)
			if err != nil {
				t.Fatalf("Canonical(%q): error %v, want %q", tc.in, err, tc.want)
			}
			if got != tc.want {
				t.Fatalf("Canonical(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestCanonicalRefuses(t *testing.T) {
	tests := []struct{ name, in string }{
		{"empty", ""},
		{"only dot", "."},
		{"two trailing dots", "example.com.."},
		{"leading dot", ".example.com"},
		{"empty label", "a..example.com"},
		{"nul", "example.com\x00.evil"},
		{"newline", "example.com\nHost: x"},
		{"tab", "example\t.com"},
		{"space", "example .com"},
		{"no-break space", "example\u00a0.com"},
		{"del", "exa\x7fmple.com"},
		{"c1 control", "exa\u0085mple.com"},
		{"at sign", "user@example.com"},
		{"at sign only", "@"},
		{"soft hyphen", "exa\u00admple.com"},
		{"bidi override", "\u202eexample.com"},
		{"slash", "example.com/x"},
		{"backslash", "example.com\\x"},
		{"colon port", "example.com:443"},
		{"percent", "exa%6dple.com"},
		{"star", "*.example.com"},
		{"invalid utf8", "ex\xffample.com"},
		{"five parts", "1.2.3.4.5"},
		{"octet too big", "256.0.0.1"},
		{"last part too big", "1.2.3.256"},
		{"integer too big", "4294967296"},
		{"bad octal", "08.0.0.1"},
		{"numeric last label", "example.123"},
		{"hex last label", "example.0x10"},
		{"label too long", strings.Repeat("a", 64) + ".com"},
		{"name too long", strings.Repeat("a.", 127) + "com"},
		{"leading hyphen", "-example.com"},
		{"bad punycode", "xn--zz-.example"},
		{"unbalanced bracket", "[::1"},
		{"brackets ipv4", "[127.0.0.1]"},
		{"bad ipv6", "1:2:3:4:5:6:7:8:9"},
		{"empty zone", "fe80::1%"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Canonical(tc.in)
			if err == nil {
				t.Fatalf("Canonical(%q) = %q, want an error", tc.in, got)
			}
		})
	}
}

func TestGlobal(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"2606:4700:4700::1111", true},
		{"127.0.0.1", false},
		{"127.255.255.254", false},
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"10.1.2.3", false},
		{"172.16.0.1", false},
		{"172.31.255.255", false},
		{"172.32.0.1", true},
		{"192.168.1.1", false},
		{"169.254.169.254", false},
		{"169.254.1.1", false},
		{"100.64.0.1", false},
		{"100.100.100.200", false},
		{"100.128.0.1", true},
		{"224.0.0.1", false},
		{"239.255.255.250", false},
		{"255.255.255.255", false},
		{"240.0.0.1", false},
		{"192.0.2.1", false},
		{"198.51.100.1", false},
		{"203.0.113.1", false},
		{"198.18.0.1", false},
		{"198.19.255.255", false},
		{"192.0.0.8", false},
		{"::", false},
		{"::1", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:8.8.8.8", true},
		{"::127.0.0.1", false},
		{"fe80::1", false},
		{"fe80::1%eth0", false},
		{"fc00::1", false},
		{"fd00:ec2::254", false},
		{"ff02::1", false},
		{"2001:db8::1", false},
		{"3fff::1", false},
		{"100::1", false},
		{"64:ff9b::7f00:1", false},
		{"64:ff9b::a9fe:a9fe", false},
		{"64:ff9b::808:808", true},
		{"64:ff9b:1::808:808", false},
		{"2002:7f00:1::1", false},
		{"2002:a9fe:a9fe::1", false},
		{"2002:808:808::1", true},
		// Teredo: server 65.54.227.120, client obfuscated in the last 32 bits.
		{"2001:0:4136:e378:8000:63bf:f7f7:f7f7", true},  // client ^f7f7f7f7 = 8.8.8.8
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", false}, // client ^3ffffdd2 = 192.0.2.45, documentation
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", false}, // client ^80fffffe = 127.0.0.1
		{"2001:0:7f00:1:8000:63bf:3fff:fdd2", false},    // server 127.0.0.1
		{"2001:2::1", false},
		{"2001:4860:4860::8888", true},
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			a, err := netip.ParseAddr(tc.addr)
			if err != nil {
				t.Fatal(err)
			}
			if got := Global(a); got != tc.want {
				t.Fatalf("Global(%s) = %v, want %v", tc.addr, got, tc.want)
			}
		})
	}
	if Global(netip.Addr{}) {
		t.Fatal("Global(invalid) = true, want false")
	}
}
