package api

import (
	"crypto/ecdsa"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/jobs/pki"
)

// nodeEntry is id as GET /v1/nodes lists it.
func nodeEntry(t *testing.T, s *httptest.Server, id string) NodeEntry {
	t.Helper()
	var list []NodeEntry
	getJSON(t, s, "/v1/nodes", &list)
	for _, n := range list {
		if n.ID == id {
			return n
		}
	}
	return NodeEntry{}
}

// A signed report recorded while the host had a sandbox, registered again
// later (by whoever kept it: the node's root after the sandbox broke, or
// anyone who saw it and holds the node's token), must not keep the node at
// tier 1. Each report signs a challenge the server issued for it, once.
func TestAttackReplayedAttestation(t *testing.T) {
	s, a, _ := serveEnrol(t)
	key, cert := enrolNode(t, s, "n1")
	rec, err := pki.Sign(key, cert, pki.Report{Node: "n1", Pool: "ci", Tier: 1, Rows: heldRows()}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if code, out := register(t, s, Registration{ID: "n1", Pool: "ci", Tier: 1, Attestation: &rec}); code != http.StatusOK {
			t.Fatalf("register %d: %d %v", i, code, out)
		}
	}
	n := nodeEntry(t, s, "n1")
	if n.Tier != 0 || a.Eligible("n1", "floor.ci") {
		t.Fatalf("after a replay n1 is listed at tier %d (eligible %v), want 0", n.Tier, a.Eligible("n1", "floor.ci"))
	}
	if f := strings.Join(n.Findings, "\n"); !strings.Contains(f, "not fresh") {
		t.Errorf("findings %q: want one saying the report is not fresh", f)
	}

	// A report that signs its challenge proves tier 1 once; registered
	// again it proves nothing, and the node's next fresh report restores
	// it. Another node's challenge is no challenge for n1.
	fresh := signed(t, s, key, cert, "n1", 1, heldRows())
	for _, tc := range []struct {
		name string
		att  *pki.Attestation
		tier int
		why  string
	}{
		{"a fresh report", fresh, 1, ""},
		{"the same report again", fresh, 0, "used already"},
		{"the next fresh report", signed(t, s, key, cert, "n1", 1, heldRows()), 1, ""},
		{"a report signing another node's challenge", signedWith(t, key, cert, challengeFor(t, s, "n2")), 0, "not one the server issued to node n1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, out := register(t, s, Registration{ID: "n1", Pool: "ci", Tier: 1, Attestation: tc.att}); code != http.StatusOK {
				t.Fatalf("register: %d %v", code, out)
			}
			n := nodeEntry(t, s, "n1")
			f := strings.Join(n.Findings, "\n")
			if n.Tier != tc.tier || a.Eligible("n1", "floor.ci") != (tc.tier == 1) || tc.why != "" && !strings.Contains(f, tc.why) {
				t.Fatalf("listed at tier %d with findings %q; want tier %d and %q", n.Tier, f, tc.tier, tc.why)
			}
		})
	}
}

// signedWith is n1's tier-1 report signing challenge c.
func signedWith(t *testing.T, key *ecdsa.PrivateKey, cert []byte, c string) *pki.Attestation {
	a, err := pki.Sign(key, cert, pki.Report{Node: "n1", Pool: "ci", Tier: 1, Rows: heldRows(), Challenge: c}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return &a
}

// A node asks for challenges in its own name only.
func TestChallengeIsTheNodesOwn(t *testing.T) {
	s, _, _ := serveEnrol(t)
	_, _, tok := enrolWithToken(t, s, "n1")
	if code, out := do(t, s, "POST", "/v1/nodes/n1/challenge", "Bearer "+tok, ""); code != http.StatusOK {
		t.Errorf("n1's own challenge: %d %v", code, out)
	}
	if code, out := do(t, s, "POST", "/v1/nodes/n2/challenge", "Bearer "+tok, ""); code != http.StatusForbidden {
		t.Errorf("n1 asks n2's challenge: %d %v, want 403", code, out)
	}
	if code, _ := do(t, s, "POST", "/v1/nodes/n1/challenge", "", ""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
}

// Another principal's challenges of a node (an operator's: any tenant's
// token may ask one in any node's name) must not push the node's own
// outstanding challenge out, or whoever holds an operator's token keeps
// a tier-1 node at tier 0 by asking for its challenges while it
// registers.
func TestAttackChallengeEviction(t *testing.T) {
	s, a, _ := serveEnrol(t)
	key, cert, tok := enrolWithToken(t, s, "n1")
	code, out := do(t, s, "POST", "/v1/nodes/n1/challenge", "Bearer "+tok, "")
	own, _ := out["challenge"].(string)
	if code != http.StatusOK || own == "" {
		t.Fatalf("n1's own challenge: %d %v", code, out)
	}
	for range 2 * maxChallengesForTest {
		if code, out := do(t, s, "POST", "/v1/nodes/n1/challenge", "Bearer "+token, ""); code != http.StatusOK {
			t.Fatalf("an operator's challenge of n1: %d %v", code, out)
		}
	}
	if code, out := register(t, s, Registration{ID: "n1", Pool: "ci", Tier: 1, Attestation: signedWith(t, key, cert, own)}); code != http.StatusOK {
		t.Fatalf("register: %d %v", code, out)
	}
	if n := nodeEntry(t, s, "n1"); n.Tier != 1 || !a.Eligible("n1", "floor.ci") {
		t.Fatalf("n1 signed its own fresh challenge but is listed at tier %d with %q: another principal's challenges evicted it", n.Tier, n.Findings)
	}
}

// maxChallengesForTest is more than a node keeps outstanding.
const maxChallengesForTest = 4

// A node id moved to a new machine (its binding removed, the id enrolled
// again with a new key) or revoked (its binding removed) must not be
// attested by the old machine's key, whose certificate is still within
// its life: an attestation proves only the key the id is bound to now.
func TestAttackAttestationOfAnUnboundKey(t *testing.T) {
	s, _, dir := serveEnrolIn(t)
	oldKey, oldCert := enrolNode(t, s, "n1")
	regOld := func() (int, map[string]any) {
		return register(t, s, Registration{ID: "n1", Pool: "ci", Tier: 1, Attestation: signed(t, s, oldKey, oldCert, "n1", 1, heldRows())})
	}
	if code, out := regOld(); code != http.StatusOK || nodeEntry(t, s, "n1").Tier != 1 {
		t.Fatalf("the bound key's attestation: %d %v", code, out)
	}
	// Revoked: the binding removed on the server.
	if err := os.Remove(filepath.Join(dir, "nodes", "n1")); err != nil {
		t.Fatal(err)
	}
	if code, out := regOld(); code != http.StatusForbidden {
		t.Errorf("a revoked node's attestation: %d %v, want 403", code, out)
	}
	// Moved: the id enrolled again on a new machine.
	enrolNode(t, s, "n1")
	if code, out := regOld(); code != http.StatusForbidden {
		t.Errorf("the old machine's attestation of a moved id: %d %v, want 403", code, out)
	}
}

// Removing a node's binding revokes it: the registry must stop letting
// its still-valid certificate poll its queues and the floor at the tier
// it attested before.
func TestAttackRevokedNodeStaysEligible(t *testing.T) {
	s, a, dir := serveEnrolIn(t)
	key, cert := enrolNode(t, s, "n1")
	if code, out := register(t, s, Registration{ID: "n1", Pool: "ci", Tier: 1, Attestation: signed(t, s, key, cert, "n1", 1, heldRows())}); code != http.StatusOK {
		t.Fatalf("register: %d %v", code, out)
	}
	if !a.Eligible("n1", "floor.ci") || !a.Eligible("n1", "node.n1") {
		t.Fatal("an attested tier-1 node is not eligible")
	}
	if err := os.Remove(filepath.Join(dir, "nodes", "n1")); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"floor.ci", "node.n1", "ci"} {
		if a.Eligible("n1", q) {
			t.Errorf("revoked n1 may still poll %s", q)
		}
	}
	if _, _, known := a.Standing("n1"); known {
		t.Error("revoked n1 still has a standing its answers are held to")
	}
}

// Any operator's token may register in a node's name; a registration the
// server refuses must not list an id no node enrolled under (each a
// forged entry in GET /v1/nodes, and memory without bound).
func TestAttackGhostNodesListed(t *testing.T) {
	s, _, _ := serveEnrol(t)
	for i := range 3 {
		id := "ghost" + string(rune('a'+i))
		if code, out := register(t, s, Registration{ID: id, Pool: "ci", Tier: 1}); code != http.StatusForbidden {
			t.Fatalf("register %s without attestation: %d %v, want 403", id, code, out)
		}
		if n := nodeEntry(t, s, id); n.ID != "" {
			t.Errorf("%s, never enrolled, is listed: %+v", id, n)
		}
	}
	// An enrolled id whose registration is refused is still listed, at
	// tier 0 with the reason, as before.
	enrolNode(t, s, "n1")
	if code, _ := register(t, s, Registration{ID: "n1", Pool: "ci", Tier: 1}); code != http.StatusForbidden {
		t.Fatalf("n1 without attestation: %d", code)
	}
	if n := nodeEntry(t, s, "n1"); n.ID != "n1" || n.Tier != 0 {
		t.Errorf("enrolled n1 refused: listed as %+v, want tier 0 with the reason", n)
	}
}

// serveEnrolIn is serveEnrol with the CA's directory, where the nodes'
// bindings are.
func serveEnrolIn(t *testing.T) (*httptest.Server, *Server, string) {
	dir := filepath.Join(t.TempDir(), "pki")
	ca, err := pki.LoadOrCreateCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := New(Config{Token: token, Jobs: &fakeJobs{known: []jobs.Job{jobOne}}, CA: ca, EnrollToken: enrollToken, Temporal: "127.0.0.1:7233", Namespace: "airlock"})
	s := httptest.NewServer(a.Handler())
	t.Cleanup(s.Close)
	return s, a, dir
}
