package pki

import (
	"crypto/tls"
	"crypto/x509"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseEnrollFile(t *testing.T) {
	pin := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name, file, token, pin string
		ok                     bool
	}{
		{"the token alone (a file from before the pin)", "tok123\n", "tok123", "", true},
		{"token and pin", "tok123 " + pin + "\n", "tok123", pin, true},
		{"a pin of another digest", "tok123 md5:abcd\n", "", "", false},
		{"a short pin", "tok123 sha256:abcd\n", "", "", false},
		{"an upper-case pin", "tok123 sha256:" + strings.Repeat("AB", 32), "", "", false},
		{"three fields", "tok123 " + pin + " x", "", "", false},
		{"empty", "\n", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, p, err := ParseEnrollFile([]byte(tc.file))
			if (err == nil) != tc.ok || tok != tc.token || p != tc.pin {
				t.Fatalf("got %q %q %v, want %q %q ok=%v", tok, p, err, tc.token, tc.pin, tc.ok)
			}
		})
	}
	tok, p, err := ParseEnrollFile(EnrollFile("tok123", pin))
	if err != nil || tok != "tok123" || p != pin {
		t.Errorf("EnrollFile does not read back: %q %q %v", tok, p, err)
	}
}

// The API's certificate serves TLS for its hosts and is nobody at the
// frontend: no airlock identity, no client use.
func TestAPICertificate(t *testing.T) {
	ca, err := LoadOrCreateCA(filepath.Join(t.TempDir(), "pki"))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := LoadOrCreateCA(filepath.Join(t.TempDir(), "pki"))
	cert, err := ca.IssueAPI([]string{"127.0.0.1", "10.9.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Verify(cert.Leaf); err == nil {
		t.Error("the API's certificate verifies as a client of the frontend")
	}
	if id, err := IdentityOf(cert.Leaf); err == nil {
		t.Errorf("the API's certificate names %v", id)
	}
	chain := func(c tls.Certificate) []*x509.Certificate {
		var out []*x509.Certificate
		for _, der := range c.Certificate {
			x, _ := x509.ParseCertificate(der)
			out = append(out, x)
		}
		return out
	}
	otherCert, _ := other.IssueAPI([]string{"127.0.0.1"})
	// A leaf of another CA presented with this fleet's (public) CA
	// certificate after it.
	forged := append(chain(otherCert)[:1], ca.Cert)
	pin := Fingerprint(ca.Cert)
	for _, tc := range []struct {
		name   string
		chain  []*x509.Certificate
		host   string
		caPEM  []byte
		pin    string
		wantOK bool
	}{
		{"pinned", chain(cert), "10.9.0.1", nil, pin, true},
		{"the held CA", chain(cert), "127.0.0.1", ca.PEM, "", true},
		{"another host", chain(cert), "10.9.0.2", nil, pin, false},
		{"another CA's server, pinned", chain(otherCert), "127.0.0.1", nil, pin, false},
		{"another CA's leaf beside this CA", forged, "127.0.0.1", nil, pin, false},
		{"a held CA that is not the pinned one", chain(otherCert), "127.0.0.1", other.PEM, pin, false},
		{"neither CA nor pin", chain(cert), "127.0.0.1", nil, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifyAPI(tls.ConnectionState{PeerCertificates: tc.chain, ServerName: tc.host}, tc.caPEM, tc.pin)
			if (err == nil) != tc.wantOK {
				t.Fatalf("got %v, want ok=%v", err, tc.wantOK)
			}
		})
	}
}
