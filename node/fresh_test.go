package node

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/airlock-run/airlock/api"
	"github.com/airlock-run/airlock/jobs/pki"
)

// The node signs a challenge of the server's in every report, so each of
// its registrations proves its tier afresh, while a report it sent before
// proves nothing when sent again.
func TestEachRegistrationSignsAFreshChallenge(t *testing.T) {
	s, _ := enrolServer(t, 0)
	cfg := enrolConfig(s, t.TempDir())
	cfg.Tier = 1
	cfg.Attest = func(context.Context) ([]pki.Row, error) {
		var rows []pki.Row
		for _, a := range pki.AttestRows {
			rows = append(rows, pki.Row{Attempt: a, Mechanism: "bubblewrap", Tier: 1, Outcome: "held"})
		}
		return rows, nil
	}
	ctx := context.Background()
	att, err := startAttesting(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	reg := Registration{ID: "n1", Pool: "ci", Tier: 1, Queues: []string{"node.n1"}}
	var sent []*pki.Attestation
	for i := range 2 {
		r := att.signed(ctx, cfg, reg)
		if _, err := register(ctx, cfg, att.token(), r); err != nil {
			t.Fatal(err)
		}
		if tier := listedTier(t, s, "n1"); tier != 1 {
			t.Fatalf("registration %d: listed at tier %d, want 1", i, tier)
		}
		sent = append(sent, r.Attestation)
	}
	if string(sent[0].Report) == string(sent[1].Report) {
		t.Fatal("two registrations sent the same report")
	}
	reg.Attestation = sent[0]
	if _, err := register(ctx, cfg, att.token(), reg); err != nil {
		t.Fatal(err)
	}
	if tier := listedTier(t, s, "n1"); tier != 0 {
		t.Fatalf("the first report sent again: listed at tier %d, want 0", tier)
	}
}

// listedTier is node id's attested tier as GET /v1/nodes lists it.
func listedTier(t *testing.T, s *httptest.Server, id string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", s.URL+"/v1/nodes", nil)
	req.Header.Set("Authorization", "Bearer "+operatorToken)
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list []api.NodeEntry
	json.NewDecoder(resp.Body).Decode(&list)
	for _, n := range list {
		if n.ID == id {
			return n.Tier
		}
	}
	return -1
}
