package fleetcli

import "testing"

func TestCheckListen(t *testing.T) {
	tests := []struct {
		name, addr string
		insecure   bool
		ok         bool
	}{
		{"loopback v4", "127.0.0.1:8420", false, true},
		{"loopback v6", "[::1]:0", false, true},
		{"another loopback", "127.0.0.2:1", false, true},
		{"every address", ":8420", false, false},
		{"0.0.0.0", "0.0.0.0:8420", false, false},
		{"a name", "localhost:8420", false, false},
		{"v6 unspecified", "[::]:1", false, false},
		{"a network address without the flag", "10.0.0.1:80", false, false},
		{"no port", "127.0.0.1", false, false},
		{"a network address with --insecure-listen", "10.0.0.1:80", true, true},
		{"every address even with --insecure-listen", "0.0.0.0:80", true, false},
		{"v6 every address even with --insecure-listen", "[::]:80", true, false},
		{"a name even with --insecure-listen", "example.com:80", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkListen(tt.addr, tt.insecure)
			if (err == nil) != tt.ok {
				t.Errorf("checkListen(%q, %v): got %v, want ok=%v", tt.addr, tt.insecure, err, tt.ok)
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
