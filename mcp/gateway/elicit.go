package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/airlock-run/airlock/mcp/approval"
	"github.com/airlock-run/airlock/mediator"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// elicitApprover puts an escalated tool call to the person at the client,
// through MCP elicitation (elicitation/create) with airlock's one question
// (mcp/approval). Anything but an accepted yes denies; no answer by the
// kernel's timeout is a timeout, and the question is withdrawn
// (notifications/cancelled).
type elicitApprover struct{ s *session }

func (a elicitApprover) Ask(ctx context.Context, e mediator.Escalation) mediator.Reply {
	params, err := json.Marshal(approval.For(e))
	if err != nil {
		return mediator.Reply{Answer: mediator.AnswerError, Decider: "error", Err: err}
	}
	resp, err := a.s.ask(ctx, "elicitation/create", params)
	if err != nil {
		return approval.Failed(ctx, err)
	}
	if resp.Error != nil {
		return mediator.Reply{Answer: mediator.AnswerError, Decider: "error", Err: resp.Error}
	}
	return approval.Answer(resp.Result)
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
