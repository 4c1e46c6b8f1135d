package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/jobs/pki"
)

// TestNodeTokenIsANodesOnly: a node's own token (from its enrolment)
// registers that node and raises its runs' questions, and does nothing an
// operator does. Before, a node held the operator's token, which answers
// any approval: shown first.
func TestNodeTokenIsANodesOnly(t *testing.T) {
	s, _, _ := serveEnrol(t)
	digest := "sha256:" + strings.Repeat("d", 64)
	question := func(id, node string) string {
		return `{"id":"` + id + `","job":"j-1","node":"` + node + `","digest":"` + digest + `","call":"connect api.example.com:443","kind":"net","verdict":"escalate","timeout":30000000000}`
	}

	// The old shape: the node's credential was the operator's token, and
	// it answers a job's approval.
	if code, out := do(t, s, "POST", "/v1/jobs/j-1/questions", "Bearer "+token, question("q-old", "n1")); code != 202 {
		t.Fatalf("raise with the operator's token: %d %v", code, out)
	}
	if code, out := do(t, s, "POST", "/v1/approvals/q-old", "Bearer "+token, `{"answer":"allow-once","digest":"`+digest+`"}`); code != 202 {
		t.Fatalf("the old shape: the operator's token (a node's, before) answers: %d %v", code, out)
	}

	key, _ := pki.NewKey()
	csr, _ := pki.CSR(key, "n1")
	body, _ := json.Marshal(EnrollRequest{ID: "n1", Pool: "ci", CSR: string(csr)})
	code, out := do(t, s, "POST", "/v1/nodes/enroll", "Bearer "+enrollToken, string(body))
	if code != http.StatusOK {
		t.Fatalf("enrol: %d %v", code, out)
	}
	nodeToken, _ := out["token"].(string)
	if nodeToken == "" || nodeToken == token || nodeToken == enrollToken {
		t.Fatalf("enrolment's token %q: want a node token of its own", nodeToken)
	}
	cert := []byte(out["cert"].(string))
	bearer := "Bearer " + nodeToken

	// What a node does, in its own name.
	reg, _ := json.Marshal(Registration{ID: "n1", Pool: "ci", Tier: 0, Queues: []string{"node.n1"},
		Attestation: signed(t, s, key, cert, "n1", 0, nil)})
	if code, out := do(t, s, "POST", "/v1/nodes", bearer, string(reg)); code != 200 {
		t.Fatalf("the node registers itself: %d %v", code, out)
	}
	if code, out := do(t, s, "POST", "/v1/jobs/j-1/questions", bearer, question("q-1", "n1")); code != 202 {
		t.Fatalf("the node raises its run's question: %d %v", code, out)
	}

	// Everything else is refused, naming the role.
	optout := `{"reason":"no bubblewrap"}`
	answer := `{"answer":"allow-once","digest":"` + digest + `"}`
	regN2, _ := json.Marshal(Registration{ID: "n2", Pool: "ci", Tier: 0, Queues: []string{"node.n2"}})
	for _, tc := range []struct {
		name, method, path, body, want string
		code                           int
	}{
		{"list approvals", "GET", "/v1/approvals", "", "operator role", 403},
		{"answer its own question", "POST", "/v1/approvals/q-1", answer, "operator role", 403},
		{"start a job", "POST", "/v1/jobs", `{"pool":"ci","argv":["true"]}`, "operator role", 403},
		{"kill a job", "POST", "/v1/jobs/j-1/kill", "", "operator role", 403},
		{"kill an agent's jobs", "POST", "/v1/agents/a1/kill", "", "operator role", 403},
		{"read a job", "GET", "/v1/jobs/j-1", "", "operator role", 403},
		{"list jobs", "GET", "/v1/jobs", "", "operator role", 403},
		{"list nodes", "GET", "/v1/nodes", "", "operator role", 403},
		{"opt itself out", "POST", "/v1/nodes/n1/sandbox-optout", optout, "admin role", 403},
		{"read the audit", "GET", "/v1/audit?job=j-1", "", "operator role", 403},
		{"register as another node", "POST", "/v1/nodes", string(regN2), "not node \"n2\"", 403},
		{"raise a question in another node's name", "POST", "/v1/jobs/j-1/questions", question("q-2", "n2"), "not node \"n2\"", 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := do(t, s, tc.method, tc.path, bearer, tc.body)
			msg, _ := out["error"].(string)
			if code != tc.code || !strings.Contains(msg, tc.want) || (tc.code == 403 && !strings.Contains(msg, "node")) {
				t.Fatalf("got %d %q; want %d naming %q", code, msg, tc.code, tc.want)
			}
		})
	}

	// A second enrolment with the same key rotates the token: the old one
	// is no longer a node's.
	code, out = do(t, s, "POST", "/v1/nodes/enroll", "Bearer "+enrollToken, string(body))
	if code != http.StatusOK || out["token"] == nodeToken {
		t.Fatalf("re-enrol: %d %v; want a new token", code, out)
	}
	if code, _ := do(t, s, "POST", "/v1/nodes", bearer, string(reg)); code != 401 {
		t.Errorf("the token before the re-enrolment registers: %d, want 401", code)
	}
	if code, _ := do(t, s, "POST", "/v1/nodes", "Bearer "+out["token"].(string), string(reg)); code != 200 {
		t.Errorf("the new token does not register: %d", code)
	}
	// The operator's token still passes the role check (this node then
	// fails only for want of an attestation).
	if code, out := do(t, s, "POST", "/v1/nodes", "Bearer "+token, string(regN2)); code == 401 || strings.Contains(out["error"].(string), "role") {
		t.Errorf("the operator's token is refused registering a node: %d %v", code, out)
	}
}
