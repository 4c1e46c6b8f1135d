package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/airlock-run/airlock/mediator"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// elicitApprover puts an escalated call to the person at the MCP client
// through elicitation (a form with one yes/no field). Anything but an
// accepted yes denies; no answer within the kernel's timeout is a timeout.
// It offers "allow once" only: a rule saved for always is a person's choice
// made in `airlock approvals`, where the rule is shown.
type elicitApprover struct{ ss *sdk.ServerSession }

// mrtrVersion is the first protocol version without server requests in
// the middle of a call.
const mrtrVersion = "2026-07-28"

var approvalSchema = json.RawMessage(`{"type":"object","properties":{"allow":{"type":"boolean","title":"Allow this call once","default":false}},"required":["allow"]}`)

func (a elicitApprover) Ask(ctx context.Context, e mediator.Escalation) mediator.Reply {
	msg := fmt.Sprintf("airlock: the agent asks to %s. %s Allow it once?", describeCall(e.Call), e.Decision.Reason)
	res, err := a.ss.Elicit(ctx, &sdk.ElicitParams{Mode: "form", Message: msg, RequestedSchema: approvalSchema})
	switch {
	case err != nil && ctx.Err() != nil:
		return mediator.Reply{Answer: mediator.AnswerTimeout, Decider: "timeout"}
	case err != nil:
		return mediator.Reply{Answer: mediator.AnswerError, Decider: "error", Err: err}
	case res.Action == "accept" && res.Content["allow"] == true:
		return mediator.Reply{Answer: mediator.AnswerAllowOnce, Decider: "person:mcp-client"}
	}
	return mediator.Reply{Answer: mediator.AnswerDeny, Decider: "person:mcp-client"}
}

// describeCall says in a few words what a call does, for the person.
func describeCall(c mediator.Call) string {
	const max = 2000
	var s string
	switch c.Kind {
	case mediator.KindExec:
		b, _ := json.Marshal(c.Argv)
		s = "run the command " + string(b)
	case mediator.KindShell:
		s = fmt.Sprintf("run the shell command %q", c.Command)
	case mediator.KindRead:
		s = fmt.Sprintf("read %q", c.Path)
	case mediator.KindWrite:
		s = fmt.Sprintf("write %q", c.Path)
	default:
		b, _ := json.Marshal(c.Args)
		s = fmt.Sprintf("call the tool %s with %s", c.Tool, b)
	}
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "") + "…"
	}
	return s
}

// withApprover routes the call's escalations to the client's person when
// the server may ask it and the client declared elicitation; otherwise they
// go to the kernel's own approver (the approvals broker).
func (s *Server) withApprover(ctx context.Context, ss *sdk.ServerSession) context.Context {
	if !s.o.Elicit || ss == nil {
		return ctx
	}
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return ctx
	}
	// From protocol 2026-07-28 a server may not send a request of its own
	// while it serves one (input is asked for with multi round-trip
	// results instead, which airlock does not do yet): the broker asks.
	if p.ProtocolVersion >= mrtrVersion {
		return ctx
	}
	return mediator.WithApprover(ctx, elicitApprover{ss})
}
