package wire

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestPreambleRoundTrip(t *testing.T) {
	tok, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if !ValidToken(tok) {
		t.Fatalf("NewToken() = %q, not a valid token", tok)
	}
	for _, mode := range []string{ModeHTTP, ModeSOCKS, ModeHTTPFD, ModeSOCKSFD, ModePing} {
		t.Run(mode, func(t *testing.T) {
			line := Preamble(mode, tok)
			if len(line) > MaxLine+1 || line[len(line)-1] != '\n' {
				t.Fatalf("Preamble = %q: too long or not one line", line)
			}
			got, err := ParsePreamble(bytes.TrimSuffix(line, []byte("\n")), tok)
			if err != nil || got != mode {
				t.Fatalf("ParsePreamble = %q, %v; want %q", got, err, mode)
			}
		})
	}
}

func TestParsePreambleRefuses(t *testing.T) {
	tok, _ := NewToken()
	other, _ := NewToken()
	tests := []struct {
		name, line string
		want       error
	}{
		{"other token", Magic + " http " + other, ErrBadToken},
		{"upper-case token", Magic + " http " + strings.ToUpper(tok), ErrBadToken},
		{"short token", Magic + " http " + tok[:10], ErrBadToken},
		{"empty token", Magic + " http ", ErrBadToken},
		{"unknown mode", Magic + " udp " + tok, ErrBadPreamble},
		{"other version", "AIRLOCK-EGRESS/2 http " + tok, ErrBadPreamble},
		{"extra field", Magic + " http " + tok + " x", ErrBadPreamble},
		{"double space", Magic + "  http " + tok, ErrBadPreamble},
		{"HTTP request", "CONNECT example.com:443 HTTP/1.1\r", ErrBadPreamble},
		{"too long", Magic + " http " + tok + strings.Repeat("a", MaxLine), ErrBadPreamble},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParsePreamble([]byte(tc.line), tok); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := ParsePreamble(Preamble(ModeHTTP, tok)[:len(Preamble(ModeHTTP, tok))-1], "not-a-token"); !errors.Is(err, ErrBadToken) {
		t.Fatalf("an invalid expected token must refuse everything, got %v", err)
	}
}

func FuzzParsePreamble(f *testing.F) {
	tok := strings.Repeat("ab", 32)
	f.Add(Magic + " http " + tok)
	f.Add(Magic + " socks-fd " + tok)
	f.Add("GET / HTTP/1.1")
	f.Fuzz(func(t *testing.T, line string) {
		mode, err := ParsePreamble([]byte(line), tok)
		if err == nil && line != Magic+" "+mode+" "+tok {
			t.Fatalf("accepted %q", line)
		}
	})
}
