package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"slices"
	"time"

	"github.com/airlock-run/airlock/errs"
)

// AttestRows are the escape matrix's attempts a node runs at start and
// reports signed: one or more of each class a box must hold (a file beside
// the working directory, a protected write, loopback, the egress proxy's
// refusal of loopback, a process outliving the run, a namespace, a refused
// system call). The server proves a tier only from these rows, every one
// of them present and held on a mechanism of that tier. None needs a
// process outside the box, so they run the same from any caller.
var AttestRows = []string{
	"read-absolute",
	"write-beside-workdir",
	"write-protected-hook",
	"tcp-127.0.0.1",
	"egress-127.0.0.1",
	"leave-process-behind",
	"create-user-namespace",
	"seccomp-bpf",
}

// tier2Untested are the rows a gVisor box cannot be tried on yet (it has
// no network): they do not count against tier 2.
var tier2Untested = []string{"egress-127.0.0.1"}

// Row is one attempt on one mechanism, as the escape matrix reported it.
type Row struct {
	Attempt   string `json:"attempt"`
	Mechanism string `json:"mechanism"`
	// Tier is the mechanism's tier.
	Tier    int    `json:"tier"`
	Outcome string `json:"outcome"` // held, escaped, untested, open, unsupported, failed
	Detail  string `json:"detail,omitempty"`
}

// Report is what a node attests: who it is, the tier it claims, and the
// rows that prove it. Signed is when it was signed; the server refuses a
// report signed more than maxSkew away from its clock, and takes its
// Challenge once, so a report is never registered twice.
type Report struct {
	Node   string    `json:"node"`
	Pool   string    `json:"pool"`
	Tier   int       `json:"tier"`
	Rows   []Row     `json:"rows"`
	Signed time.Time `json:"signed"`
	// Findings are the node's probe findings (an advisory, a missing
	// profile), signed so that whoever replays a report cannot register
	// the node without them.
	Findings []string `json:"findings,omitempty"`
	// Challenge is the server's challenge for this report (see
	// Challenge): signed in it, taken once, so a report is not
	// registered again.
	Challenge string `json:"challenge,omitempty"`
}

// Attestation is a signed report and the certificate whose key signed it.
type Attestation struct {
	// Report is the report's JSON, exactly as signed.
	Report []byte `json:"report"`
	// Signature is ECDSA (ASN.1) over SHA-256 of attestContext, a zero
	// byte and Report.
	Signature []byte `json:"signature"`
	// Cert is the node's certificate (PEM).
	Cert []byte `json:"cert"`
}

// attestContext keeps a signature over a report from being anything else
// the node's key signs (a TLS handshake signs with its own context).
const attestContext = "airlock node attestation v1"

// maxSkew bounds how old (or how far ahead) a report's signing time may be.
const maxSkew = 5 * time.Minute

func digest(report []byte) []byte {
	h := sha256.New()
	h.Write([]byte(attestContext))
	h.Write([]byte{0})
	h.Write(report)
	return h.Sum(nil)
}

// Sign signs r with key at now; certPEM is the node's certificate.
func Sign(key *ecdsa.PrivateKey, certPEM []byte, r Report, now time.Time) (Attestation, error) {
	r.Signed = now.UTC()
	b, err := json.Marshal(r)
	if err != nil {
		return Attestation{}, errs.Wrap(errs.Internal, err, "attestation")
	}
	sig, err := ecdsa.SignASN1(rand.Reader, key, digest(b))
	if err != nil {
		return Attestation{}, errs.Wrap(errs.Internal, err, "sign the attestation")
	}
	return Attestation{Report: b, Signature: sig, Cert: certPEM}, nil
}

// VerifyAttestation checks a: its certificate is a node's, issued by this
// CA and valid now; the signature verifies with that certificate's key;
// the report names the same node and pool and was signed within maxSkew.
// Only then is the report decoded (exactly: no unknown field). A report
// that passes proves that the holder of the enrolled key sent it, not that
// its rows are true.
func (ca *CA) VerifyAttestation(a Attestation) (Report, error) {
	cert, err := ParseCert(a.Cert)
	if err != nil {
		return Report{}, errs.Wrap(errs.Denied, err, "attestation")
	}
	id, err := ca.Verify(cert)
	if err != nil {
		return Report{}, errs.Wrap(errs.Denied, err, "attestation")
	}
	if id.Role != RoleNode {
		return Report{}, errs.New(errs.Denied, "attestation: the certificate is not a node's")
	}
	pub, ok := cert.PublicKey.(*ecdsa.PublicKey)
	if !ok || !ecdsa.VerifyASN1(pub, digest(a.Report), a.Signature) {
		return Report{}, errs.New(errs.Denied, "attestation: the signature does not verify with the enrolled key")
	}
	if err := ca.checkBound(id.Node, id.Pool, pub); err != nil {
		return Report{}, errs.Wrap(errs.Denied, err, "attestation")
	}
	var r Report
	dec := json.NewDecoder(bytes.NewReader(a.Report))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil || dec.More() {
		return Report{}, errs.New(errs.Denied, "attestation: the report is not one JSON report")
	}
	if r.Node != id.Node || r.Pool != id.Pool {
		return Report{}, errs.New(errs.Denied, "attestation: the report names node %s of pool %s, the certificate %s", r.Node, r.Pool, id)
	}
	if d := ca.now().Sub(r.Signed); d > maxSkew || d < -maxSkew {
		return Report{}, errs.New(errs.Denied, "attestation: signed at %s, more than %s from the server's clock (fix: the node's clock)", r.Signed.Format(time.RFC3339), maxSkew)
	}
	return r, nil
}

// CertOf is the certificate of a verified attestation.
func CertOf(a Attestation) (*x509.Certificate, error) { return ParseCert(a.Cert) }

// Proven is the highest tier r's rows prove, up to the tier r claims: a
// tier t ≥ 1 is proven when every one of AttestRows was held on a
// mechanism of tier t (the attempt reached its target unconfined and not
// in the box). why lists, for the claimed tier when it is not proven, the
// rows that did not hold.
func (r Report) Proven() (tier int, why []string) {
	for t := min(r.Tier, 2); t >= 1; t-- {
		missing := r.notHeld(t)
		if len(missing) == 0 {
			return t, why
		}
		if t == r.Tier {
			why = missing
		}
	}
	return 0, why
}

// notHeld is every attest row that was not held at tier t, with how it
// ended.
func (r Report) notHeld(t int) []string {
	var out []string
	for _, a := range AttestRows {
		if t == 2 && slices.Contains(tier2Untested, a) {
			continue
		}
		// Fail closed: every row of the attempt at t must say held, so a
		// report that lists an escape beside a "held" is no proof.
		seen, failed := false, ""
		for _, row := range r.Rows {
			if row.Attempt != a || row.Tier != t {
				continue
			}
			seen = true
			if row.Outcome != "held" && failed == "" {
				failed = row.Outcome
			}
		}
		switch {
		case !seen:
			out = append(out, a+" missing")
		case failed != "":
			out = append(out, a+" "+failed)
		}
	}
	return out
}
