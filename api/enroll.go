package api

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/jobs/pki"
)

// Enrolment and attestation:
//
//	node                                    server
//	key (never sent) ── POST /v1/nodes/enroll {id, pool, csr}
//	                    Bearer <enrol token> ──▶ cert for airlock://node/<id>,
//	                 ◀── cert, CA, frontend ─────  airlock://pool/<pool>
//	                    POST /v1/nodes/<id>/challenge ──▶ a fresh challenge
//	selftest rows and the challenge, signed with the key
//	                 ── POST /v1/nodes {…, attestation}
//	                                         verify: cert of this CA, the
//	                                         signature, node and pool, the
//	                                         challenge taken once; tier =
//	                                         min(claimed, what the rows prove),
//	                                         0 when not fresh
//	mTLS to the frontend with the cert ───▶ authorizer: floor.<pool> only
//	                                         while Eligible (attested tier ≥ 1)

// EnrollRequest is the body of POST /v1/nodes/enroll.
type EnrollRequest struct {
	ID   string `json:"id"`
	Pool string `json:"pool"`
	// CSR is a PEM certificate request; only its key is certified.
	CSR string `json:"csr"`
}

// Enrolled is the answer: the node's certificate, the CA to trust for the
// frontend, and where the frontend is.
type Enrolled struct {
	Cert      string    `json:"cert"`
	CA        string    `json:"ca"`
	Temporal  string    `json:"temporal"`
	Namespace string    `json:"namespace"`
	Expires   time.Time `json:"expires"`
	// Token is the node's own API token, new at every enrolment (the one
	// before stops working): it registers the node and raises its runs'
	// questions, nothing else. The server keeps only its SHA-256.
	Token string `json:"token"`
}

// enroll issues a node's certificate. It is behind the enrolment token,
// not the API's: the one secret a new node needs.
func (s *Server) enroll(w http.ResponseWriter, r *http.Request) {
	if s.cfg.CA == nil {
		writeErr(w, errs.NotFoundf("enrolment is off on this server"))
		return
	}
	if !bearerIs(r, s.cfg.EnrollToken) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="airlock-enroll"`)
		writeError(w, http.StatusUnauthorized, "the enrolment token is required (the server's STATE/enroll-token)")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	var req EnrollRequest
	if !decode(w, r, &req) {
		return
	}
	if err := errors.Join(jobs.CheckName("id", req.ID), jobs.CheckName("pool", req.Pool)); err != nil {
		writeErr(w, err)
		return
	}
	// Enrol, not IssueNode: an id enrolled already renews only with its
	// own key and pool, so the enrolment token does not take it over.
	certPEM, token, err := s.cfg.CA.Enrol([]byte(req.CSR), req.ID, req.Pool, s.cfg.NodeCertLifetime)
	if err != nil {
		s.cfg.Log.Warn("enrolment refused", "node", req.ID, "pool", req.Pool, "err", err)
		writeErr(w, err)
		return
	}
	cert, _ := pki.ParseCert(certPEM)
	s.cfg.Log.Info("node enrolled", "node", req.ID, "pool", req.Pool, "expires", cert.NotAfter)
	writeJSON(w, http.StatusOK, Enrolled{Cert: string(certPEM), CA: string(s.cfg.CA.PEM),
		Temporal: s.cfg.Temporal, Namespace: s.cfg.Namespace, Expires: cert.NotAfter, Token: token})
}

// Challenge is the answer to POST /v1/nodes/{id}/challenge: what the
// node's next signed report must carry (pki.Report.Challenge), used once,
// by Expires.
type Challenge struct {
	Challenge string    `json:"challenge"`
	Expires   time.Time `json:"expires"`
}

// challenge issues the challenge of a node's next registration. A node
// asks in its own name only.
func (s *Server) challenge(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if s.cfg.CA == nil {
		writeErr(w, errs.NotFoundf("enrolment is off on this server: registrations carry no attestation"))
		return
	}
	if err := jobs.CheckName("node id", id); err != nil {
		writeErr(w, err)
		return
	}
	if !actsAs(w, r, id) {
		return
	}
	p := PrincipalOf(r.Context())
	c, err := s.cfg.CA.Challenge(id, p.Role.String()+":"+p.Name)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, Challenge{Challenge: c, Expires: s.cfg.Now().Add(pki.ChallengeTTL)})
}

// bearerIs reports, in constant time, whether r carries the bearer token
// want; an empty want matches nothing.
func bearerIs(r *http.Request, want string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// attest is the tier the server records for reg: with enrolment on, the
// lowest of the tier claimed and what the signed selftest rows prove, with
// a finding naming the fix when they prove less. The attestation must be
// signed by the key of a certificate of this fleet's CA naming reg's node
// and pool. Without enrolment (no CA), the claim is taken as it is.
func (s *Server) attest(reg Registration) (tier int, findings []string, err error) {
	if s.cfg.CA == nil {
		return reg.Tier, reg.Findings, nil
	}
	if reg.Attestation == nil {
		return 0, nil, errs.New(errs.Denied, "node %s: no attestation: enrol the node (airlock node --enroll-token-file)", reg.ID)
	}
	rep, err := s.cfg.CA.VerifyAttestation(*reg.Attestation)
	if err != nil {
		return 0, nil, errs.Wrap(errs.Denied, err, "node %s", reg.ID)
	}
	if rep.Node != reg.ID || rep.Pool != reg.Pool || rep.Tier != reg.Tier || !slices.Equal(rep.Findings, reg.Findings) {
		return 0, nil, errs.New(errs.Denied, "node %s: the registration and its signed report disagree on node, pool, tier or findings", reg.ID)
	}
	proven, why := rep.Proven()
	findings = reg.Findings
	if ferr := s.cfg.CA.TakeChallenge(rep); ferr != nil {
		// Signed by the node's key, but not for this registration: it
		// proves nothing now.
		findings = append(findings, fmt.Sprintf(
			"error: attestation: node %s's signed report is not fresh: %s: it is recorded at tier 0 and takes no floor work (fix: the node asks POST /v1/nodes/%s/challenge before each registration and signs the challenge; upgrade or restart it)",
			reg.ID, errs.AgentMessage(ferr), reg.ID))
		return 0, findings, nil
	}
	if proven < rep.Tier {
		findings = append(findings, fmt.Sprintf(
			"error: attestation: node %s claims sandbox tier %d but its selftest rows did not hold (%s): it is recorded at tier %d and takes no floor work (fix: run `airlock sandbox selftest` on the node and fix what it reports, or start it with --sandbox off)",
			reg.ID, rep.Tier, strings.Join(why, ", "), proven))
	}
	return proven, findings, nil
}
