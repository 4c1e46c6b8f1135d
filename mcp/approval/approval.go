// Package approval is the one way airlock's MCP front ends put an
// escalated call to the person at the client (MCP elicitation): the
// question's text, form and mark, and the reading of the answer. mcp/serve
// and mcp/gateway import it; each only carries the question over its own
// transport.
//
// The question says it is airlock's and carries the mark Meta under
// `_meta`, which the gateway refuses in any request a wrapped server sends,
// so a server cannot ask the person something that reads as airlock's
// question and take the answer as approval. Only an exact `"action":
// "accept"` with `"allow": true` allows, and only once: a rule saved for
// always is a person's choice made in `airlock approvals`, where the rule
// is shown.
package approval

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/airlock-run/airlock/mcp"
	"github.com/airlock-run/airlock/mediator"
)

// Meta is the `_meta` key that marks airlock's own questions.
const Meta = "airlock/approval"

// ServerPrefix begins the message of an elicitation a wrapped server
// sends, so the person can tell it from airlock's.
const ServerPrefix = "[asked by the wrapped MCP server, not by airlock] "

// Schema is the form of the question: one boolean, false by default.
var Schema = json.RawMessage(`{"type":"object","properties":{"allow":{"type":"boolean","title":"Allow this call once","default":false}},"required":["allow"]}`)

// Question is an elicitation's params for e.
type Question struct {
	Mode            string          `json:"mode,omitempty"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
	Meta            map[string]any  `json:"_meta"`
}

// For is the question that puts e to the person.
func For(e mediator.Escalation) Question {
	msg := fmt.Sprintf("airlock: the agent asks to %s. %s Allow it once? (This question is airlock's own; a wrapped server's questions begin %q.)",
		Describe(e.Call), e.Decision.Reason, strings.TrimSpace(ServerPrefix))
	return Question{Mode: "form", Message: msg, RequestedSchema: Schema,
		Meta: map[string]any{Meta: map[string]any{"call": e.Call.Digest()}}}
}

// Describe is what the call asks, in a line a person reads, at most about
// 2,000 bytes.
func Describe(c mediator.Call) string {
	const max = 2000
	var s string
	switch c.Kind {
	case mediator.KindExec:
		b, _ := json.Marshal(c.Argv)
		s = "run the command " + string(b)
	case mediator.KindShell:
		s = fmt.Sprintf("run the shell command %q", c.Command)
	case mediator.KindRead, mediator.KindList, mediator.KindSearch:
		s = fmt.Sprintf("read %q", c.Path)
	case mediator.KindWrite:
		s = fmt.Sprintf("write %q", c.Path)
	default:
		b, _ := json.Marshal(c.Args)
		s = fmt.Sprintf("call the tool %s with arguments %s", c.Tool, b)
	}
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "") + "…"
	}
	return s
}

// Answer reads the client's answer to a question, with exact keys: only
// `"action": "accept"` with `"content": {"allow": true}` allows (once);
// anything else the person said denies, and an answer that is not one is
// an error.
func Answer(result json.RawMessage) mediator.Reply {
	var r, content map[string]json.RawMessage
	if mcp.CheckJSON(result) != nil || json.Unmarshal(result, &r) != nil {
		return mediator.Reply{Answer: mediator.AnswerError, Decider: "error", Err: fmt.Errorf("the client's answer is not an elicitation result")}
	}
	json.Unmarshal(r["content"], &content)
	if string(r["action"]) == `"accept"` && string(content["allow"]) == "true" {
		return mediator.Reply{Answer: mediator.AnswerAllowOnce, Decider: "person:mcp-client"}
	}
	return mediator.Reply{Answer: mediator.AnswerDeny, Decider: "person:mcp-client"}
}

// Failed is the reply when the question could not be asked or answered:
// a timeout when ctx (the kernel's escalation timeout) ended, else an
// error with its cause (recorded, never shown to the agent).
func Failed(ctx context.Context, err error) mediator.Reply {
	if ctx.Err() != nil {
		return mediator.Reply{Answer: mediator.AnswerTimeout, Decider: "timeout"}
	}
	return mediator.Reply{Answer: mediator.AnswerError, Decider: "error", Err: err}
}
