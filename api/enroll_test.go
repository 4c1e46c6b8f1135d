package api

import (
	"crypto/ecdsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/jobs/pki"
)

const enrollToken = "fedcba9876543210fedcba9876543210"

func serveEnrol(t *testing.T) (*httptest.Server, *Server, *pki.CA) {
	s, a, _ := serveEnrolIn(t)
	return s, a, a.cfg.CA
}

// enrolNode enrols id in pool ci and returns its key and certificate.
func enrolNode(t *testing.T, s *httptest.Server, id string) (*ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, cert, _ := enrolWithToken(t, s, id)
	return key, cert
}

// enrolWithToken enrols id in pool ci and returns its key, certificate
// and API token.
func enrolWithToken(t *testing.T, s *httptest.Server, id string) (*ecdsa.PrivateKey, []byte, string) {
	t.Helper()
	key, _ := pki.NewKey()
	csr, _ := pki.CSR(key, id)
	body, _ := json.Marshal(EnrollRequest{ID: id, Pool: "ci", CSR: string(csr)})
	code, out := do(t, s, "POST", "/v1/nodes/enroll", "Bearer "+enrollToken, string(body))
	if code != http.StatusOK {
		t.Fatalf("enrol %s: %d %v", id, code, out)
	}
	tok, _ := out["token"].(string)
	return key, []byte(out["cert"].(string)), tok
}

func heldRows() []pki.Row {
	var rows []pki.Row
	for _, a := range pki.AttestRows {
		rows = append(rows, pki.Row{Attempt: a, Mechanism: "bubblewrap", Tier: 1, Outcome: "held"})
	}
	return rows
}

func register(t *testing.T, s *httptest.Server, reg Registration) (int, map[string]any) {
	b, _ := json.Marshal(reg)
	return do(t, s, "POST", "/v1/nodes", "Bearer "+token, string(b))
}

// signed is id's report, signed by key with a challenge s issued for it.
func signed(t *testing.T, s *httptest.Server, key *ecdsa.PrivateKey, cert []byte, id string, tier int, rows []pki.Row) *pki.Attestation {
	a, err := pki.Sign(key, cert, pki.Report{Node: id, Pool: "ci", Tier: tier, Rows: rows, Challenge: challengeFor(t, s, id)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return &a
}

// challengeFor asks s for a challenge for node id's next report.
func challengeFor(t *testing.T, s *httptest.Server, id string) string {
	t.Helper()
	code, out := do(t, s, "POST", "/v1/nodes/"+id+"/challenge", "Bearer "+token, "")
	c, _ := out["challenge"].(string)
	if code != http.StatusOK || len(c) != 64 {
		t.Fatalf("challenge for %s: %d %v", id, code, out)
	}
	return c
}

func TestEnrolment(t *testing.T) {
	s, _, ca := serveEnrol(t)
	key, _ := pki.NewKey()
	csr, _ := pki.CSR(key, "n1")
	body, _ := json.Marshal(EnrollRequest{ID: "n1", Pool: "ci", CSR: string(csr)})
	for _, tc := range []struct {
		name, auth string
		want       int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a wrong token", "Bearer " + strings.Repeat("x", 32), http.StatusUnauthorized},
		{"the API token is not the enrolment token", "Bearer " + token, http.StatusUnauthorized},
		{"the enrolment token", "Bearer " + enrollToken, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := do(t, s, "POST", "/v1/nodes/enroll", tc.auth, string(body))
			if code != tc.want {
				t.Fatalf("got %d %v, want %d", code, out, tc.want)
			}
			if code != http.StatusOK {
				return
			}
			cert, err := pki.ParseCert([]byte(out["cert"].(string)))
			if err != nil {
				t.Fatal(err)
			}
			if id, err := ca.Verify(cert); err != nil || id.Node != "n1" || id.Pool != "ci" {
				t.Errorf("certificate: %v, %v", id, err)
			}
			if out["ca"] != string(ca.PEM) || out["temporal"] != "127.0.0.1:7233" {
				t.Errorf("answer: %v", out)
			}
		})
	}
	t.Run("the enrolment token opens nothing else", func(t *testing.T) {
		if code, _ := do(t, s, "GET", "/v1/nodes", "Bearer "+enrollToken, ""); code != http.StatusUnauthorized {
			t.Errorf("GET /v1/nodes with the enrolment token: %d", code)
		}
	})
	t.Run("a bad id or CSR is a 400 naming the field", func(t *testing.T) {
		for _, b := range []string{`{"id":"n.1","pool":"ci","csr":"x"}`, `{"id":"n1","pool":"ci","csr":"junk"}`, `{"id":"n1"}`} {
			code, out := do(t, s, "POST", "/v1/nodes/enroll", "Bearer "+enrollToken, b)
			if code != http.StatusBadRequest {
				t.Errorf("%s: got %d %v, want 400", b, code, out)
			}
		}
	})
}

func TestAttestedTier(t *testing.T) {
	s, a, _ := serveEnrol(t)
	key, cert := enrolNode(t, s, "n1")
	node := func(id string) NodeEntry {
		var list []NodeEntry
		req, _ := http.NewRequest("GET", s.URL+"/v1/nodes", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := s.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		json.NewDecoder(resp.Body).Decode(&list)
		for _, n := range list {
			if n.ID == id {
				return n
			}
		}
		return NodeEntry{}
	}
	t.Run("without an attestation a node claiming tier 1 is refused", func(t *testing.T) {
		enrolNode(t, s, "n9") // an id never enrolled is not listed at all
		code, _ := register(t, s, Registration{ID: "n9", Pool: "ci", Tier: 1})
		if code != http.StatusForbidden || a.Eligible("n9", "floor.ci") {
			t.Errorf("got %d, eligible %v; want 403 and not eligible", code, a.Eligible("n9", "floor.ci"))
		}
		if n := node("n9"); n.Tier != 0 || len(n.Findings) == 0 {
			t.Errorf("listed as %+v, want tier 0 with a finding", n)
		}
	})
	t.Run("rows that did not hold record tier 0 with the fix", func(t *testing.T) {
		rows := heldRows()
		rows[1].Outcome = "escaped"
		code, out := register(t, s, Registration{ID: "n1", Pool: "ci", Tier: 1, Attestation: signed(t, s, key, cert, "n1", 1, rows)})
		if code != http.StatusOK {
			t.Fatalf("got %d %v", code, out)
		}
		n := node("n1")
		if n.Tier != 0 || n.ClaimedTier != 1 || a.Eligible("n1", "floor.ci") {
			t.Errorf("got %+v; want attested tier 0 and not eligible", n)
		}
		if f := strings.Join(n.Findings, "\n"); !strings.Contains(f, pki.AttestRows[1]+" escaped") || !strings.Contains(f, "airlock sandbox selftest") {
			t.Errorf("findings %q: want the row that escaped and the fix", f)
		}
	})
	t.Run("held rows signed by the enrolled key record tier 1", func(t *testing.T) {
		code, out := register(t, s, Registration{ID: "n1", Pool: "ci", Tier: 1, Attestation: signed(t, s, key, cert, "n1", 1, heldRows())})
		if code != http.StatusOK || node("n1").Tier != 1 || !a.Eligible("n1", "floor.ci") {
			t.Fatalf("got %d %v, %+v", code, out, node("n1"))
		}
		if a.Eligible("n1", "tier2.ci") || a.Eligible("n1", "floor.other") || a.Eligible("n1", "node.n2") {
			t.Errorf("tier 1 made n1 eligible beyond floor.ci")
		}
	})
	t.Run("a forged signature is refused and changes nothing", func(t *testing.T) {
		other, _ := pki.NewKey()
		code, _ := register(t, s, Registration{ID: "n1", Pool: "ci", Tier: 1, Attestation: signed(t, s, other, cert, "n1", 1, heldRows())})
		if code != http.StatusForbidden {
			t.Errorf("got %d, want 403", code)
		}
		// A new node with a forged report is listed at tier 0.
		_, cert2 := enrolNode(t, s, "n2")
		code, _ = register(t, s, Registration{ID: "n2", Pool: "ci", Tier: 1, Attestation: signed(t, s, other, cert2, "n2", 1, heldRows())})
		if code != http.StatusForbidden || node("n2").Tier != 0 || a.Eligible("n2", "floor.ci") {
			t.Errorf("forged n2: got %d, %+v", code, node("n2"))
		}
	})
	t.Run("a report for another node or tier than the registration is refused", func(t *testing.T) {
		code, _ := register(t, s, Registration{ID: "n1", Pool: "ci", Tier: 1, Attestation: signed(t, s, key, cert, "n1", 0, heldRows())})
		if code != http.StatusForbidden {
			t.Errorf("tier mismatch: got %d", code)
		}
		code, _ = register(t, s, Registration{ID: "n3", Pool: "ci", Tier: 1, Attestation: signed(t, s, key, cert, "n1", 1, heldRows())})
		if code != http.StatusForbidden || a.Eligible("n3", "floor.ci") {
			t.Errorf("n1's report for n3: got %d", code)
		}
	})
}
