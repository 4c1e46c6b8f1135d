package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/jobs/pki"
)

// An enrolment token holder must not enrol as a node that is enrolled
// already: the id names the node's queue (node.<id>), its runs and its
// attested tier. Only the node's own key renews it.
func TestAttackReEnrolExistingNode(t *testing.T) {
	s, a, _ := serveEnrol(t)
	key, cert := enrolNode(t, s, "n1")
	if code, out := register(t, s, Registration{ID: "n1", Pool: "ci", Tier: 1, Attestation: signed(t, s, key, cert, "n1", 1, heldRows())}); code != http.StatusOK {
		t.Fatalf("register n1: %d %v", code, out)
	}
	attacker, _ := pki.NewKey()
	for _, tc := range []struct{ name, id, pool string }{
		{"the same id and pool", "n1", "ci"},
		{"the same id in another pool", "n1", "other"},
	} {
		t.Run(tc.name+" with another key is refused", func(t *testing.T) {
			csr, _ := pki.CSR(attacker, tc.id)
			body, _ := json.Marshal(EnrollRequest{ID: tc.id, Pool: tc.pool, CSR: string(csr)})
			code, out := do(t, s, "POST", "/v1/nodes/enroll", "Bearer "+enrollToken, string(body))
			if code != http.StatusForbidden {
				t.Fatalf("enrol as %s/%s with the attacker's key: got %d %v, want 403", tc.id, tc.pool, code, out)
			}
		})
	}
	t.Run("the hijacked id keeps its tier and key", func(t *testing.T) {
		if !a.Eligible("n1", "floor.ci") {
			t.Errorf("n1 lost its floor eligibility")
		}
	})
	t.Run("the node's own key renews", func(t *testing.T) {
		csr, _ := pki.CSR(key, "n1")
		body, _ := json.Marshal(EnrollRequest{ID: "n1", Pool: "ci", CSR: string(csr)})
		if code, out := do(t, s, "POST", "/v1/nodes/enroll", "Bearer "+enrollToken, string(body)); code != http.StatusOK {
			t.Fatalf("renewal: got %d %v", code, out)
		}
	})
}

// A body that gives a key twice must not be read as whichever spelling
// came last: encoding/json matches keys ignoring case, so "Tier0" after
// "tier0" silently won.
func TestAttackDuplicateKeys(t *testing.T) {
	s, f := serve(t, Config{})
	for _, tc := range []struct{ name, body string }{
		{"the same key twice", `{"argv":["true"],"tier0":false,"tier0":true}`},
		{"a key twice under case folding", `{"argv":["true"],"tier0":false,"TIER0":true}`},
		{"a pool twice", `{"pool":"ci","argv":["true"],"Pool":"other"}`},
		{"a key twice, once escaped", `{"argv":["true"],"tier0":false,"tier\u0030":true}`},
		{"calls under a long s", `{"argv":["true"],"calls":[{"kind":"exec","argv":["true"]}],"call\u017f":[{"kind":"shell","command":"sh"}]}`},
		{"a call's kind under a Kelvin sign", `{"argv":["true"],"calls":[{"kind":"read_file","\u212aind":"shell","path":"x"}]}`},
		{"mcp under case", `{"argv":["true"],"mcp":{"fs":["x"]},"MCP":{"sh":["sh"]}}`},
		{"open under case", `{"argv":["true"],"open":false,"Open":true}`},
		{"tenant under case", `{"argv":["true"],"TeNaNt":"beta"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := do(t, s, "POST", "/v1/jobs", "Bearer "+token, tc.body)
			if code != http.StatusBadRequest {
				t.Fatalf("got %d %v, want 400", code, out)
			}
		})
	}
	if len(f.started) != 0 {
		t.Errorf("%d jobs started from bodies with a key given twice", len(f.started))
	}
	t.Run("one of each key is taken", func(t *testing.T) {
		if code, out := do(t, s, "POST", "/v1/jobs", "Bearer "+token, `{"argv":["true"],"tier0":true}`); code != http.StatusCreated {
			t.Fatalf("got %d %v", code, out)
		}
	})
}

// A question, once raised, is the one a person answers: raising its id
// again (with the same digest and another call line) must not change what
// the list shows, or a person would approve "ls" and let the real call run.
func TestAttackReRaiseQuestion(t *testing.T) {
	s, f := serve(t, Config{})
	digest := "sha256:" + strings.Repeat("d", 64)
	raise := func(call string) int {
		q := fmt.Sprintf(`{"id":"q-1","job":"j-1","node":"n1","digest":%q,"call":%q,"kind":"exec","verdict":"escalate","timeout":30000000000}`, digest, call)
		code, _ := do(t, s, "POST", "/v1/jobs/j-1/questions", "Bearer "+token, q)
		return code
	}
	if code := raise("rm -rf /srv/data"); code != http.StatusAccepted {
		t.Fatalf("raise: %d", code)
	}
	if code := raise("ls"); code != http.StatusConflict {
		t.Errorf("raising q-1 again: got %d, want 409", code)
	}
	var listed []jobs.Question
	getJSON(t, s, "/v1/approvals", &listed)
	if len(listed) != 1 || listed[0].Call != "rm -rf /srv/data" {
		t.Fatalf("listed %+v, want the first question's call", listed)
	}
	if len(f.asked) != 1 {
		t.Errorf("signalled %d questions, want the first only", len(f.asked))
	}
	t.Run("nor once it is answered", func(t *testing.T) {
		if code, out := do(t, s, "POST", "/v1/approvals/q-1", "Bearer "+token, `{"answer":"deny","digest":"`+digest+`"}`); code != http.StatusAccepted {
			t.Fatalf("answer: %d %v", code, out)
		}
		if code := raise("ls"); code != http.StatusConflict {
			t.Errorf("raising answered q-1 again: got %d, want 409", code)
		}
		getJSON(t, s, "/v1/approvals", &listed)
		if len(listed) != 0 {
			t.Errorf("listed %+v after the answer, want none", listed)
		}
	})
}

// Two answers to one question at once: one is signalled and recorded,
// the other refused, so the audit never shows an answer that did not
// take effect.
func TestAttackAnswerTwiceAtOnce(t *testing.T) {
	f := &slowAnswers{fakeJobs: &fakeJobs{known: []jobs.Job{jobOne}}}
	a := New(Config{Token: token, Jobs: f})
	s := httptest.NewServer(a.Handler())
	t.Cleanup(s.Close)
	t.Cleanup(a.Close)
	digest := "sha256:" + strings.Repeat("d", 64)
	q := fmt.Sprintf(`{"id":"q-1","job":"j-1","node":"n1","digest":%q,"call":"x","kind":"exec","verdict":"escalate","timeout":30000000000}`, digest)
	if code, _ := do(t, s, "POST", "/v1/jobs/j-1/questions", "Bearer "+token, q); code != http.StatusAccepted {
		t.Fatal("raise")
	}
	codes := make(chan int, 8)
	var wg sync.WaitGroup
	for i := range 8 {
		answer := []string{"allow-once", "deny"}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _ := do(t, s, "POST", "/v1/approvals/q-1", "Bearer "+token, `{"answer":"`+answer+`","digest":"`+digest+`"}`)
			codes <- code
		}()
	}
	wg.Wait()
	close(codes)
	accepted := 0
	for c := range codes {
		if c == http.StatusAccepted {
			accepted++
		}
	}
	if accepted != 1 || len(f.answers) != 1 {
		t.Fatalf("%d answers accepted, %d signalled; want one of each", accepted, len(f.answers))
	}
}

// A registration's findings are the node's signed word: someone replaying
// a node's fresh attestation must not register it without the advisory
// findings it reported.
func TestAttackReplayWithoutFindings(t *testing.T) {
	s, _, _ := serveEnrol(t)
	key, cert := enrolNode(t, s, "n1")
	findings := []string{"advisory: bubblewrap is setuid on this host"}
	a, err := pki.Sign(key, cert, pki.Report{Node: "n1", Pool: "ci", Tier: 1, Rows: heldRows(), Findings: findings, Challenge: challengeFor(t, s, "n1")}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if code, out := register(t, s, Registration{ID: "n1", Pool: "ci", Tier: 1, Findings: findings, Attestation: &a}); code != http.StatusOK {
		t.Fatalf("register: %d %v", code, out)
	}
	if code, out := register(t, s, Registration{ID: "n1", Pool: "ci", Tier: 1, Attestation: &a}); code != http.StatusForbidden {
		t.Fatalf("the same attestation without its findings: got %d %v, want 403", code, out)
	}
	var list []NodeEntry
	getJSON(t, s, "/v1/nodes", &list)
	if len(list) != 1 || !slices.Equal(list[0].Findings, findings) {
		t.Fatalf("listed %+v, want n1 with its findings", list)
	}
}

// slowAnswers signals answers slowly, as Temporal may, so answers given
// at once overlap.
type slowAnswers struct{ *fakeJobs }

func (f *slowAnswers) Answer(ctx context.Context, id string, a jobs.Answer) error {
	time.Sleep(50 * time.Millisecond)
	return f.fakeJobs.Answer(ctx, id, a)
}
