package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/airlock-run/airlock/mcp"
	"github.com/airlock-run/airlock/mediator"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// elicitApprover puts an escalated tool call to the person at the client,
// through MCP elicitation (elicitation/create): the client shows the
// question and a yes/no field. Anything but an accepted yes denies; no
// answer by the kernel's timeout is a timeout, and the question is
// withdrawn (notifications/cancelled).
type elicitApprover struct{ s *session }

// approvalSchema is the form of the question: one boolean.
var approvalSchema = json.RawMessage(`{"type":"object","properties":{"allow":{"type":"boolean","title":"Allow this call once","default":false}},"required":["allow"]}`)

func (a elicitApprover) Ask(ctx context.Context, e mediator.Escalation) mediator.Reply {
	args, _ := json.Marshal(e.Call.Args)
	msg := fmt.Sprintf("airlock: the agent asks to call the tool %s with arguments %s. %s Allow it once? (This question is airlock's own; the wrapped server's questions begin %q.)",
		e.Call.Tool, truncate(string(args), 2000), e.Decision.Reason, strings.TrimSpace(serverPrefix))
	// The mark a client may show airlock's questions by: the gateway
	// refuses it in any request of the wrapped server's.
	params, err := json.Marshal(map[string]any{"message": msg, "requestedSchema": approvalSchema,
		"_meta": map[string]any{metaApproval: map[string]any{"tool": e.Call.Tool}}})
	if err != nil {
		return mediator.Reply{Answer: mediator.AnswerError, Decider: "error", Err: err}
	}
	resp, err := a.s.ask(ctx, "elicitation/create", params)
	if err != nil {
		if ctx.Err() != nil {
			return mediator.Reply{Answer: mediator.AnswerTimeout, Decider: "timeout"}
		}
		return mediator.Reply{Answer: mediator.AnswerError, Decider: "error", Err: err}
	}
	if resp.Error != nil {
		return mediator.Reply{Answer: mediator.AnswerError, Decider: "error", Err: resp.Error}
	}
	// Read with exact keys: only "action":"accept" with "allow":true is a yes.
	var r map[string]json.RawMessage
	var content map[string]json.RawMessage
	if json.Unmarshal(resp.Result, &r) != nil || mcp.CheckJSON(resp.Result) != nil {
		return mediator.Reply{Answer: mediator.AnswerError, Decider: "error"}
	}
	json.Unmarshal(r["content"], &content)
	if string(r["action"]) == `"accept"` && string(content["allow"]) == "true" {
		return mediator.Reply{Answer: mediator.AnswerAllowOnce, Decider: "person:mcp-client"}
	}
	return mediator.Reply{Answer: mediator.AnswerDeny, Decider: "person:mcp-client"}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ask sends the client a request of the gateway's own and waits for its
// answer or the end of ctx, when the request is withdrawn.
func (s *session) ask(ctx context.Context, method string, params json.RawMessage) (*jsonrpc.Response, error) {
	return s.request(ctx, s.client, s.ours, s.toClientNS, &s.nextClient, method, params)
}

// askServer sends the server a request of the gateway's own.
func (s *session) askServer(ctx context.Context, method string, params json.RawMessage) (*jsonrpc.Response, error) {
	return s.request(ctx, s.server, s.oursServer, s.toServerNS, &s.nextServer, method, params)
}

// request sends a request of the gateway's own on to (the client or the
// server), its answer awaited in waiting under an id of namespace ns: one
// namespace per direction, so that the ids one peer sees tell it nothing
// of those the other is asked under.
func (s *session) request(ctx context.Context, to Conn, waiting map[jsonrpc.ID]chan *jsonrpc.Response, ns string, next *atomic.Int64, method string, params json.RawMessage) (*jsonrpc.Response, error) {
	id, err := jsonrpc.MakeID(fmt.Sprintf("%s-%d", ns, next.Add(1)))
	if err != nil {
		return nil, err
	}
	ch := make(chan *jsonrpc.Response, 1)
	s.mu.Lock()
	waiting[id] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(waiting, id)
		s.mu.Unlock()
	}()
	if err := to.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: params}); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		p, _ := json.Marshal(map[string]any{"requestId": id.Raw(), "reason": "no answer in time"})
		if err := to.Write(context.WithoutCancel(ctx), &jsonrpc.Request{Method: "notifications/cancelled", Params: p}); err != nil {
			s.log().Debug("mcp: withdraw a request", "err", err)
		}
		return nil, ctx.Err()
	}
}
