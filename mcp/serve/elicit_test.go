package serve

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/mcp"
	"github.com/airlock-run/airlock/mediator"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawClient is a client speaking plain JSON-RPC, so the test chooses the
// protocol version: 2025-06-18, which real clients speak and in which a
// server may ask the client in the middle of a call.
type rawClient struct {
	t    *testing.T
	conn sdk.Connection
	ctx  context.Context
	// answer replies to elicitation/create; asked collects the questions.
	answer func(message string) json.RawMessage
	asked  []string
}

func newRawClient(t *testing.T, srv *Server, elicitation bool) *rawClient {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	st, ct := sdk.NewInMemoryTransports()
	done := make(chan struct{})
	go func() { defer close(done); srv.Run(ctx, st) }()
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); cancel(); <-done })
	c := &rawClient{t: t, conn: conn, ctx: ctx}
	caps := `{}`
	if elicitation {
		caps = `{"elicitation":{}}`
	}
	if _, err := c.request(1, "initialize", `{"protocolVersion":"2025-06-18","capabilities":`+caps+`,"clientInfo":{"name":"raw","version":"1"}}`); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if err := conn.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	return c
}

// request sends a request and reads until its response, answering the
// server's elicitation requests on the way.
func (c *rawClient) request(id int64, method, params string) (json.RawMessage, error) {
	rid, _ := jsonrpc.MakeID(float64(id))
	if err := c.conn.Write(c.ctx, &jsonrpc.Request{ID: rid, Method: method, Params: json.RawMessage(params)}); err != nil {
		return nil, err
	}
	for {
		msg, err := c.conn.Read(c.ctx)
		if err != nil {
			return nil, err
		}
		switch m := msg.(type) {
		case *jsonrpc.Request:
			if m.Method != "elicitation/create" || !m.ID.IsValid() {
				continue
			}
			var p struct{ Message string }
			json.Unmarshal(m.Params, &p)
			c.asked = append(c.asked, p.Message)
			if err := c.conn.Write(c.ctx, &jsonrpc.Response{ID: m.ID, Result: c.answer(p.Message)}); err != nil {
				return nil, err
			}
		case *jsonrpc.Response:
			if m.ID == rid {
				return m.Result, m.Error
			}
		}
	}
}

func (c *rawClient) exec(argv ...string) (string, error) {
	args, _ := json.Marshal(map[string]any{"name": "exec", "arguments": map[string]any{"argv": argv}})
	res, err := c.request(time.Now().UnixNano()%1e9, "tools/call", string(args))
	if err != nil {
		return "", err
	}
	var r sdk.CallToolResult
	if err := json.Unmarshal(res, &r); err != nil {
		return "", err
	}
	return resultText(&r), nil
}

func rawDenial(err error) string {
	je, _ := err.(*jsonrpc.Error)
	if d, ok := mcp.Denial(je); ok {
		return d.Code
	}
	return ""
}

// TestEscalationThroughElicitation: an escalated call is put to the person
// at the client; a yes runs it, anything else refuses it; a client without
// elicitation, or a server told not to ask, leaves it to the approvals
// broker (nobody there: a timeout).
func TestEscalationThroughElicitation(t *testing.T) {
	f := newFixture(t, testPolicy, "observe", nil, func(c *fixtureConfig) { c.serve.Elicit = true })
	c := newRawClient(t, f.srv, true)
	reply := `{"action":"accept","content":{"allow":true}}`
	c.answer = func(string) json.RawMessage { return json.RawMessage(reply) }
	ask := []string{"echo", "please-ask", "nicely"}

	if text, err := c.exec(ask...); err != nil || !strings.Contains(text, "please-ask nicely\n") {
		t.Errorf("approved: got %q, %v; want it run", text, err)
	}
	if len(c.asked) != 1 || !strings.Contains(c.asked[0], `run the command ["echo","please-ask","nicely"]`) {
		t.Errorf("got questions %q, want one naming the command", c.asked)
	}
	for _, r := range []string{`{"action":"accept","content":{"allow":false}}`, `{"action":"decline"}`, `{"action":"cancel"}`} {
		reply = r
		if text, err := c.exec(ask...); rawDenial(err) != errs.CodePolicyDenied {
			t.Errorf("answer %s: got %q, %v; want POLICY_DENIED", r, text, err)
		}
	}
	if text, err := c.exec("echo", "plain"); err != nil || !strings.Contains(text, "plain\n") || len(c.asked) != 4 {
		t.Errorf("an allowed call: got %q, %v, %d questions; want it run without asking", text, err, len(c.asked))
	}

	noCap := newRawClient(t, f.srv, false)
	noCap.answer = c.answer
	if _, err := noCap.exec(ask...); rawDenial(err) != errs.CodeEscalationTimeout || len(noCap.asked) != 0 {
		t.Errorf("client without elicitation: got %v, asked %d; want the broker's timeout", err, len(noCap.asked))
	}
	off := newFixture(t, testPolicy, "observe", nil, nil)
	offc := newRawClient(t, off.srv, true)
	offc.answer = c.answer
	if _, err := offc.exec(ask...); rawDenial(err) != errs.CodeEscalationTimeout || len(offc.asked) != 0 {
		t.Errorf("server with Elicit off: got %v, asked %d; want the broker's timeout", err, len(offc.asked))
	}
}

// TestDuplicateKeysRefused: arguments naming a key twice are refused whole,
// whichever of the two a parser in front of airlock read.
func TestDuplicateKeysRefused(t *testing.T) {
	f := newFixture(t, testPolicy, "observe", setupWork, nil)
	c := newRawClient(t, f.srv, false)
	res, err := c.request(7, "tools/call", `{"name":"read_file","arguments":{"path":"hello.txt","path":"../outside/secret"}}`)
	var r sdk.CallToolResult
	if err != nil || json.Unmarshal(res, &r) != nil || !r.IsError || !strings.Contains(resultText(&r), "duplicate key") {
		t.Errorf("got %s, %v; want a failed call naming the duplicate key", res, err)
	}
}

// TestEscalationRoundTrip: with a client speaking protocol 2026-07-28 (the
// Go SDK's own), the question goes out as the call's answer and the
// client's retry carries the person's answer.
func TestEscalationRoundTrip(t *testing.T) {
	var asked []string
	action := "accept"
	client := &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		asked = append(asked, r.Params.Message)
		return &sdk.ElicitResult{Action: action, Content: map[string]any{"allow": true}}, nil
	}}
	f := newFixture(t, testPolicy, "observe", nil, func(c *fixtureConfig) { c.serve.Elicit = true }, client)
	if v := f.cs.InitializeResult().ProtocolVersion; v < mrtrVersion {
		t.Skipf("the SDK client speaks %s, before multi round-trip", v)
	}
	ask := map[string]any{"argv": []string{"echo", "please-ask", "again"}}
	check(t, f, "exec", ask, want{contains: []string{"please-ask again\n"}})
	if len(asked) != 1 || !strings.Contains(asked[0], "please-ask") {
		t.Errorf("got questions %q, want one naming the command", asked)
	}
	action = "decline"
	check(t, f, "exec", ask, want{denial: errs.CodePolicyDenied, category: "shell"})
}

// TestRoundTripState: an answer counts only with the state airlock signed
// for the same call, and only within the escalation timeout.
func TestRoundTripState(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := &Server{key: []byte("0123456789abcdef0123456789abcdef"), now: func() time.Time { return now }}
	e := mediator.Escalation{Call: mediator.Call{Kind: mediator.KindExec, Argv: []string{"echo", "please-ask"}}, Timeout: 30 * time.Second}
	other := mediator.Call{Kind: mediator.KindExec, Argv: []string{"echo", "something", "else"}}
	yes := sdk.InputResponseMap{approvalKey: &sdk.ElicitResult{Action: "accept", Content: map[string]any{"allow": true}}}
	valid := s.makeState(e.Call.Digest(), now)
	tests := []struct {
		name    string
		state   string
		after   time.Duration
		want    mediator.Answer
		reasked bool
	}{
		{"signed state, in time", valid, time.Second, mediator.AnswerAllowOnce, false},
		{"no state: forged answer", "", 0, mediator.AnswerPending, true},
		{"state of another call", s.makeState(other.Digest(), now), 0, mediator.AnswerPending, true},
		{"state signed by another key", (&Server{key: []byte("another key, another key, 32 byt")}).makeState(e.Call.Digest(), now), 0, mediator.AnswerPending, true},
		{"tampered state", valid[:len(valid)-2] + "xx", 0, mediator.AnswerPending, true},
		{"answer after the timeout", valid, time.Minute, mediator.AnswerTimeout, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.now = func() time.Time { return now.Add(tt.after) }
			a := &roundTripApprover{s: s, responses: yes, state: tt.state}
			r := a.Ask(context.Background(), e)
			if r.Answer != tt.want || (a.asked != nil) != tt.reasked {
				t.Errorf("got %v, asked again %v; want %v, %v", r.Answer, a.asked != nil, tt.want, tt.reasked)
			}
		})
	}
}
