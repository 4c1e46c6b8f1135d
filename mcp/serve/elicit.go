package serve

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/airlock-run/airlock/mcp/approval"
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

// question is airlock's one question (mcp/approval) as the SDK sends it.
func question(e mediator.Escalation) *sdk.ElicitParams {
	q := approval.For(e)
	return &sdk.ElicitParams{Mode: q.Mode, Message: q.Message, RequestedSchema: q.RequestedSchema, Meta: q.Meta}
}

func (a elicitApprover) Ask(ctx context.Context, e mediator.Escalation) mediator.Reply {
	res, err := a.ss.Elicit(ctx, question(e))
	if err != nil {
		return approval.Failed(ctx, err)
	}
	return answerOf(res)
}

// answerOf reads the SDK's decoded answer as approval.Answer reads any.
func answerOf(res *sdk.ElicitResult) mediator.Reply {
	b, err := json.Marshal(res)
	if err != nil || res == nil {
		return mediator.Reply{Answer: mediator.AnswerError, Decider: "error", Err: err}
	}
	return approval.Answer(b)
}

// approvalKey names airlock's question among a result's input requests.
const approvalKey = "airlock-approval"

// errInputRequested is the "reply" of a round that asked the client: the
// kernel denies this round (recorded as an escalation error) and the call
// is answered with the question instead; the client's retry is decided
// anew with the person's answer.
var errInputRequested = errors.New("the approval was asked of the person at the client (multi round-trip)")

// roundTripApprover asks the person at a client speaking protocol
// 2026-07-28 or later, where a server asks for input by answering the call
// with input requests and the client calls again with the answers. The
// answer counts only with the request state airlock issued for the same
// call (signed, so a client cannot approve a call it was never asked
// about), and only within the escalation timeout.
type roundTripApprover struct {
	s         *Server
	responses sdk.InputResponseMap
	state     string
	// asked is set when this round asks the client.
	asked *sdk.CallToolResult
}

func (a *roundTripApprover) Ask(_ context.Context, e mediator.Escalation) mediator.Reply {
	digest := e.Call.Digest()
	if r, ok := a.responses[approvalKey].(*sdk.ElicitResult); ok {
		if issued, ok := a.s.checkState(a.state, digest); ok {
			if a.s.now().Sub(issued) > e.Timeout {
				return mediator.Reply{Answer: mediator.AnswerTimeout, Decider: "timeout"}
			}
			return answerOf(r)
		}
	}
	a.asked = &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{approvalKey: question(e)},
		RequestState: a.s.makeState(digest, a.s.now())}
	return mediator.Reply{Answer: mediator.AnswerPending, Decider: "pending", Err: errInputRequested}
}

type roundState struct {
	Digest string `json:"d"`
	Issued int64  `json:"t"`
}

// makeState signs which call was asked about, and when.
func (s *Server) makeState(digest string, now time.Time) string {
	b, _ := json.Marshal(roundState{Digest: digest, Issued: now.UnixNano()})
	m := hmac.New(sha256.New, s.key)
	m.Write(b)
	return base64.RawURLEncoding.EncodeToString(b) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkState verifies a state this server signed for digest and returns
// when it was issued.
func (s *Server) checkState(state, digest string) (time.Time, bool) {
	p, sig, ok := strings.Cut(state, ".")
	if !ok {
		return time.Time{}, false
	}
	b, err1 := base64.RawURLEncoding.DecodeString(p)
	got, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil {
		return time.Time{}, false
	}
	m := hmac.New(sha256.New, s.key)
	m.Write(b)
	var rs roundState
	if !hmac.Equal(got, m.Sum(nil)) || json.Unmarshal(b, &rs) != nil || rs.Digest != digest {
		return time.Time{}, false
	}
	return time.Unix(0, rs.Issued), true
}

// withApprover routes the call's escalations to the client's person when
// the server may ask it and the client declared elicitation; otherwise they
// go to the kernel's own approver (the approvals broker). From protocol
// 2026-07-28 a server may not send a request of its own while it serves
// one, so the question goes out as the call's answer (multi round-trip) and
// the returned approver says whether this round asked.
func (s *Server) withApprover(ctx context.Context, req *sdk.CallToolRequest) (context.Context, *roundTripApprover) {
	if !s.o.Elicit || req == nil || req.Session == nil {
		return ctx, nil
	}
	p := req.Session.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return ctx, nil
	}
	if p.ProtocolVersion >= mrtrVersion {
		a := &roundTripApprover{s: s}
		if req.Params != nil {
			a.responses, a.state = req.Params.InputResponses, req.Params.RequestState
		}
		return mediator.WithApprover(ctx, a), a
	}
	return mediator.WithApprover(ctx, elicitApprover{req.Session}), nil
}
