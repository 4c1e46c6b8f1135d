package mediator

import (
	"context"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/egress"
)

const taintPolicy = `
shell:
  allow: [echo]
net:
  allow: ["api.example.com:443"]
tools:
  search: true
  send_mail: true
escalation:
  timeout: 200ms
`

// TestTaintedCallsThatSendOutWait: in a tainted job a call the policy
// allows that can send data out (a connection, a tool not annotated
// read-only) waits for a person, and the record says why; what cannot
// send out goes ahead. Without the taint the same calls go ahead (the
// shape before), so the rule is what makes them wait.
func TestTaintedCallsThatSendOutWait(t *testing.T) {
	tests := []struct {
		name     string
		call     Call
		taint    string
		answer   Answer
		wantAsk  bool
		wantDeny bool
	}{
		{"untainted, an allowed connection goes ahead", Call{Kind: KindNet, Host: "api.example.com", Port: 443}, "", AnswerDeny, false, false},
		{"tainted, an allowed connection waits and a refusal denies it", Call{Kind: KindNet, Host: "api.example.com", Port: 443}, "an outside event", AnswerDeny, true, true},
		{"tainted, an allowed connection waits and an approval lets it go", Call{Kind: KindNet, Host: "api.example.com", Port: 443}, "an outside event", AnswerAllowOnce, true, false},
		{"tainted, nobody answering denies at the timeout", Call{Kind: KindNet, Host: "api.example.com", Port: 443}, "an outside event", AnswerTimeout, true, true},
		{"tainted, a tool not annotated read-only waits", Call{Kind: KindTool, Tool: "send_mail"}, "model m is not vetted", AnswerDeny, true, true},
		{"tainted, a read-only tool goes ahead", Call{Kind: KindTool, Tool: "search", ReadOnly: true}, "an outside event", AnswerDeny, false, false},
		{"tainted, a command goes ahead (its connections are decided one by one)", Call{Kind: KindExec, Argv: []string{"echo", "hi"}}, "an outside event", AnswerDeny, false, false},
		{"tainted, a refused connection stays refused without asking", Call{Kind: KindNet, Host: "evil.example", Port: 443}, "an outside event", AnswerAllowOnce, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var asked Escalation
			pp := &person{answer: func(_ context.Context, e Escalation) Reply {
				asked = e
				return Reply{Answer: tt.answer, Decider: "person:ann"}
			}}
			rec := &memRecorder{}
			k := newKernel(t, taintPolicy, Options{Approver: pp, Recorder: rec, Taint: func() string { return tt.taint }})
			_, err := k.Decide(context.Background(), tt.call)
			if (pp.asked > 0) != tt.wantAsk {
				t.Fatalf("asked %d times, want asked %v", pp.asked, tt.wantAsk)
			}
			if (err != nil) != tt.wantDeny {
				t.Fatalf("err %v, want denied %v", err, tt.wantDeny)
			}
			if !tt.wantAsk {
				return
			}
			if asked.Decision.Rule != "taint" || !strings.Contains(asked.Decision.Reason, "the job is tainted ("+tt.taint+")") || asked.Grant != nil {
				t.Errorf("escalation %+v: want rule taint, the reason naming the taint, no allow-always", asked.Decision)
			}
			last := rec.recs[len(rec.recs)-1]
			if last.Rule != "taint" || !strings.Contains(last.Reason, "tainted") {
				t.Errorf("record: rule %q reason %q, want the taint named", last.Rule, last.Reason)
			}
		})
	}
}

// TestEscalationDigestBindsTheQuestion: two escalations that differ in
// the call or the decision have different digests, the same one the same.
func TestEscalationDigestBindsTheQuestion(t *testing.T) {
	a := Escalation{Call: Call{Kind: KindNet, Host: "a.example", Port: 443}}
	b := Escalation{Call: Call{Kind: KindNet, Host: "b.example", Port: 443}}
	c := a
	c.Decision.Reason = "other"
	if a.Digest() != a.Digest() || a.Digest() == b.Digest() || a.Digest() == c.Digest() {
		t.Fatalf("digests: a %s, b %s, c %s", a.Digest(), b.Digest(), c.Digest())
	}
}

// TestTaintedEgressAsksPerDestination: the egress proxy's check of a
// tainted caller's connection asks a person for a destination the list
// allows (once per destination for the command), and a refusal holds;
// an untainted caller's connection goes ahead as the list says (the
// shape before), and a destination the list refuses is never asked of.
func TestTaintedEgressAsksPerDestination(t *testing.T) {
	list := func(host string, port int) egress.Verdict {
		return egress.Verdict{Allow: host == "api.example.com", Rule: "net.allow[0]"}
	}
	tests := []struct {
		name      string
		taint     string
		answer    Answer
		host      string
		wantAllow bool
		wantAsked int
	}{
		{"untainted, an allowed destination goes ahead unasked", "", AnswerDeny, "api.example.com", true, 0},
		{"tainted, an allowed destination waits and is refused", "an outside event", AnswerDeny, "api.example.com", false, 1},
		{"tainted, an allowed destination waits and is approved", "an outside event", AnswerAllowOnce, "api.example.com", true, 1},
		{"tainted, a refused destination is not asked", "an outside event", AnswerAllowOnce, "evil.example", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pp := &person{answer: func(context.Context, Escalation) Reply { return Reply{Answer: tt.answer, Decider: "person:ann"} }}
			k := newKernel(t, taintPolicy, Options{Approver: pp, Taint: func() string { return tt.taint }})
			check := k.taintedCheck(context.Background(), list)
			for range 3 { // one program's many connections ask once
				if v := check(context.Background(), tt.host, 443); v.Allow != tt.wantAllow {
					t.Fatalf("allow %v (%+v), want %v", v.Allow, v, tt.wantAllow)
				}
			}
			if pp.asked != tt.wantAsked {
				t.Errorf("asked %d times, want %d", pp.asked, tt.wantAsked)
			}
		})
	}
}

// TestMarkTaintedHoldsFromThenOn: an untainted kernel lets an allowed
// tool call go ahead; once a front end marks it tainted (it read an
// open-world tool's result), the same call waits for a person, and the
// reason names what tainted it.
func TestMarkTaintedHoldsFromThenOn(t *testing.T) {
	var asked Escalation
	pp := &person{answer: func(_ context.Context, e Escalation) Reply { asked = e; return Reply{Answer: AnswerDeny} }}
	k := newKernel(t, taintPolicy, Options{Approver: pp})
	call := Call{Kind: KindTool, Tool: "send_mail"}
	if _, err := k.Decide(context.Background(), call); err != nil || pp.asked != 0 {
		t.Fatalf("untainted: err %v, asked %d; want it allowed unasked", err, pp.asked)
	}
	k.MarkTainted("a result of open-world tool web_fetch")
	if _, err := k.Decide(context.Background(), call); err == nil || pp.asked != 1 {
		t.Fatalf("tainted: err %v, asked %d; want it put to a person and refused", err, pp.asked)
	}
	if !strings.Contains(asked.Decision.Reason, "open-world tool web_fetch") {
		t.Errorf("reason %q, want what tainted it", asked.Decision.Reason)
	}
}
