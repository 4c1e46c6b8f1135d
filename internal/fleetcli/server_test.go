package fleetcli

import "testing"

func TestCheckListen(t *testing.T) {
	tests := []struct {
		name, addr string
		ok         bool
	}{
		{"loopback v4", "127.0.0.1:8420", true},
		{"loopback v6", "[::1]:0", true},
		{"another loopback", "127.0.0.2:1", true},
		{"every address", ":8420", false},
		{"0.0.0.0", "0.0.0.0:8420", false},
		{"a name", "localhost:8420", false},
		{"v6 unspecified", "[::]:1", false},
		{"no port", "127.0.0.1", false},
		// Beyond loopback the API is TLS only (plain HTTP there too only
		// with --insecure-listen, which changes no address taken).
		{"a network address", "10.0.0.1:80", true},
		{"a name beyond loopback", "example.com:80", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkListen(tt.addr)
			if (err == nil) != tt.ok {
				t.Errorf("checkListen(%q): got %v, want ok=%v", tt.addr, err, tt.ok)
			}
		})
	}
}

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"", 0, true}, {"512", 512, true}, {"64M", 64 << 20, true}, {"2g", 2 << 30, true}, {"8K", 8 << 10, true},
		{"0", 0, false}, {"-1M", 0, false}, {"M", 0, false}, {"1.5G", 0, false}, {"2T", 0, false}, {"9999999999G", 0, false},
	}
	for _, tt := range tests {
		got, err := parseBytes(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}
