package pki

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"net"
	"strings"

	"github.com/airlock-run/airlock/errs"
)

// The HTTP API over TLS. The server presents a certificate of the fleet
// CA (server use only: it names no airlock identity, so it opens nothing
// at the Temporal frontend) for the addresses it listens on, with the CA
// certificate after it in the chain. A client that holds the CA (a node
// enrolled before, the CLI with --ca-file or the local STATE/pki/ca.pem)
// verifies the chain against it; a node enrolling for the first time
// holds only the CA's SHA-256, from the enrolment token file the server
// wrote ("TOKEN sha256:HEX"), and accepts the chain only when its CA
// certificate has that digest. Either way the enrolment token and every
// bearer token after it cross the network only to the fleet's server.

// IssueAPI issues the API's server certificate for hosts (IP addresses
// and names), with the CA certificate in its chain.
func (ca *CA) IssueAPI(hosts []string) (tls.Certificate, error) {
	tmpl := ca.template(serverURI, ServiceLifetime)
	// No airlock URI: this certificate is no identity (IdentityOf names
	// none), and it is for a server only.
	tmpl.URIs = nil
	tmpl.Subject.CommonName = "airlock API"
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	c, err := ca.issueKeyPair(tmpl)
	if err != nil {
		return tls.Certificate{}, err
	}
	c.Certificate = append(c.Certificate, ca.Cert.Raw)
	return c, nil
}

// Fingerprint is the pin of a CA certificate: "sha256:" and the hex
// SHA-256 of its DER.
func Fingerprint(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.Raw)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// FingerprintPEM is Fingerprint of a PEM certificate ("" when it does not
// parse).
func FingerprintPEM(certPEM []byte) string {
	c, err := ParseCert(certPEM)
	if err != nil {
		return ""
	}
	return Fingerprint(c)
}

// EnrollFile is the enrolment token file's line: the token and the fleet
// CA's pin.
func EnrollFile(token, pin string) []byte { return []byte(token + " " + pin + "\n") }

// ParseEnrollFile reads an enrolment token file: "TOKEN sha256:HEX", or
// the token alone (a file written before the pin; pin is then ""). Any
// other shape is refused rather than guessed at.
func ParseEnrollFile(b []byte) (token, pin string, err error) {
	f := strings.Fields(string(b))
	switch {
	case len(f) == 1:
		return f[0], "", nil
	case len(f) == 2 && validPin(f[1]):
		return f[0], f[1], nil
	}
	return "", "", errs.Invalidf("the enrolment token file: want one line \"TOKEN sha256:HEX\" (the HEX the fleet CA's SHA-256), as the server writes it")
}

func validPin(p string) bool {
	h, ok := strings.CutPrefix(p, "sha256:")
	if !ok || len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil && strings.ToLower(h) == h
}

// VerifyAPI checks the API server's chain in cs: its leaf must be a
// server certificate for cs.ServerName chaining to the CA caPEM or, when
// caPEM is nil, to the CA certificate in the chain whose pin is pin. With
// neither it refuses: a client that cannot tell the fleet's server from
// another sends it no token.
func VerifyAPI(cs tls.ConnectionState, caPEM []byte, pin string) error {
	if len(cs.PeerCertificates) == 0 {
		return errs.New(errs.Denied, "the server presented no certificate")
	}
	roots := x509.NewCertPool()
	switch {
	case caPEM != nil:
		ca, err := ParseCert(caPEM)
		if err != nil || !ca.IsCA {
			return errs.Invalidf("the fleet CA certificate does not parse as a CA")
		}
		if pin != "" && Fingerprint(ca) != pin {
			return errs.New(errs.Denied, "the fleet CA held is not the one the enrolment token file pins (%s)", pin)
		}
		roots.AddCert(ca)
	case pin != "":
		for _, c := range cs.PeerCertificates[1:] {
			if c.IsCA && Fingerprint(c) == pin {
				roots.AddCert(c)
			}
		}
	default:
		return errs.New(errs.Denied, "no fleet CA to check the server against (fix: the enrolment token file the server wrote carries its pin; the CLI takes --ca-file, or reads the local STATE/pki/ca.pem)")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: cs.ServerName,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		return errs.Wrap(errs.Denied, err, "the server's certificate is not the fleet's server's for %s", cs.ServerName)
	}
	return nil
}

// APIClientTLS is a client's TLS to the API: the server's chain checked
// by VerifyAPI against what caPEM returns (nil: none held yet) and pin,
// at every handshake.
func APIClientTLS(caPEM func() []byte, pin string) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13,
		// The chain is checked by VerifyConnection, against the fleet CA
		// or its pin, never the system's roots: no public CA can stand
		// in for the fleet's server.
		InsecureSkipVerify: true,
		VerifyConnection:   func(cs tls.ConnectionState) error { return VerifyAPI(cs, caPEM(), pin) },
	}
}
