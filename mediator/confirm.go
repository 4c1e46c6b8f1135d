package mediator

import (
	"context"

	"github.com/airlock-run/airlock/policy"
)

// Confirm puts call to a person as an escalation with reason, whatever the
// policy says of it: a changed definition of a pinned MCP tool, say, which
// the person approves once. It takes the same path as every escalation —
// the approver, the timeout, the recording, the mapping of the answer to a
// denial — and never offers "allow always". A nil error means the person
// allowed it and the answer was recorded.
func (k *Kernel) Confirm(ctx context.Context, call Call, rule, reason string) error {
	out := Outcome{Decision: policy.Decision{Verdict: policy.Escalate, Category: categoryOf(call),
		Rule: rule, Reason: reason}, Decider: "policy"}
	out = k.ask(ctx, call, out, "a changed definition is approved once")
	if err := k.recordDecision(ctx, call, out); err != nil {
		return err
	}
	return denial(out)
}
