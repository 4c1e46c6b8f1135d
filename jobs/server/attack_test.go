package server

import (
	"testing"

	commonpb "go.temporal.io/api/common/v1"

	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/jobs/pki"
)

// payload is a JSON result as the SDK sends it.
func payload(js string) *commonpb.Payloads {
	return &commonpb.Payloads{Payloads: []*commonpb.Payload{{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(js)}}}
}

// A node whose opt-out (or --dev) lets it poll the floor queue must still
// not claim a tier its attestation did not prove, nor hide its opt-out:
// the workflow lets a tier-1 claim without an opt-out take tainted work
// and records its runs at the tier claimed.
func TestAttackOptedOutNodeClaimsTier1(t *testing.T) {
	// n0: attested tier 0, opted out, so floor.ci is eligible.
	eligible := func(node, queue string) bool { return node == "n0" && queue == jobs.FloorQueue("ci") }
	standing := func(node string) (int, bool, bool) { return 0, node == "n0", node == "n0" }
	tk := newTokens(eligible, standing)
	n0 := pki.Identity{Role: pki.RoleNode, Node: "n0", Pool: "ci"}
	for _, tc := range []struct {
		name     string
		activity string
		result   string
	}{
		{"a claim at tier 1 without its opt-out", jobs.ClaimActivity, `{"node":"n0","tier":1}`},
		{"a claim at tier 0 hiding its opt-out", jobs.ClaimActivity, `{"node":"n0","tier":0}`},
		{"a run at tier 1", jobs.RunActivity, `{"node":"n0","tier":1,"exit_code":0}`},
		{"a call at tier 1", jobs.CallActivity, `{"call":"c1","node":"n0","tier":1,"exit_code":0}`},
		{"a call in another node's name", jobs.CallActivity, `{"call":"c1","node":"n1","tier":0,"exit_code":0}`},
		{"a lease of one call at tier 1", jobs.LeaseCallActivity, `{"call":"c1","node":"n0","tier":1,"exit_code":0}`},
		{"a lease of one call in another node's name", jobs.LeaseCallActivity, `{"call":"c1","node":"n1","tier":0,"exit_code":0}`},
		{"a lease of one call giving its opt-out twice", jobs.LeaseCallActivity, `{"call":"c1","node":"n0","tier":0,"exit_code":0,"opted_out":false,"opted_out":true}`},
		{"a claim giving the tier twice", jobs.ClaimActivity, `{"node":"n0","tier":0,"Tier":1,"opted_out":true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if why := tk.checkAnswer(n0, tc.activity, payload(tc.result)); why == "" {
				t.Fatalf("%s %s was allowed", tc.activity, tc.result)
			}
		})
	}
	t.Run("the truth is allowed", func(t *testing.T) {
		for _, r := range []struct{ activity, result string }{
			{jobs.ClaimActivity, `{"node":"n0","tier":0,"opted_out":true}`},
			{jobs.RunActivity, `{"node":"n0","tier":0,"exit_code":0}`},
			{jobs.CallActivity, `{"call":"c1","node":"n0","tier":0,"exit_code":0}`},
			{jobs.LeaseCallActivity, `{"call":"c1","node":"n0","tier":0,"exit_code":0}`},
		} {
			if why := tk.checkAnswer(n0, r.activity, payload(r.result)); why != "" {
				t.Errorf("%s %s: %s", r.activity, r.result, why)
			}
		}
	})
}

// A server restart keeps which node holds which task token: the node
// running a job meanwhile can still heartbeat and answer, and no other can.
func TestTaskBindingsSurviveRestart(t *testing.T) {
	file := t.TempDir() + "/task-bindings.json"
	before, err := keptTokens(file, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	before.give("n1", jobs.RunActivity, []byte("token-1"), "j-1/r-1")
	after, err := keptTokens(file, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h, ok := after.owns("n1", []byte("token-1")); !ok || h.Activity != jobs.RunActivity || h.Workflow != "j-1/r-1" {
		t.Fatalf("after the restart n1 owns token-1: %v (%+v), want true", ok, h)
	}
	if _, ok := after.owns("n2", []byte("token-1")); ok {
		t.Fatal("after the restart n2 owns n1's token")
	}
	after.release([]byte("token-1"))
	again, err := keptTokens(file, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := again.owns("n1", []byte("token-1")); ok {
		t.Fatal("a released token came back after a restart")
	}
}
