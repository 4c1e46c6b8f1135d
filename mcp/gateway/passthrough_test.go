package gateway

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-run/airlock/mcp/httpfront"
	"github.com/airlock-run/airlock/mediator"
	"github.com/airlock-run/airlock/policy"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// interactiveServer is a real MCP server whose tool talks back to the
// client while it runs: progress, a log message, a sampling request and an
// elicitation, all of which the gateway must pass through untouched.
func interactiveServer() *sdk.Server {
	// A protocol version in which a server may call the client while it
	// serves a call (2026-07-28 replaced that with multi round-trip requests).
	s := sdk.NewServer(&sdk.Implementation{Name: "interactive", Version: "1"}, &sdk.ServerOptions{SupportedProtocolVersions: []string{"2025-06-18"}})
	s.AddTool(&sdk.Tool{Name: "echo", Description: "asks the client things", InputSchema: json.RawMessage(plainSchema)},
		func(ctx context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if tok := r.Params.GetProgressToken(); tok != nil {
				if err := r.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half"}); err != nil {
					return nil, err
				}
			}
			if err := r.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "info", Data: "working"}); err != nil {
				return nil, err
			}
			msg, err := r.Session.CreateMessage(ctx, &sdk.CreateMessageParams{MaxTokens: 10,
				Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "say hi"}}}})
			if err != nil {
				return nil, err
			}
			el, err := r.Session.Elicit(ctx, &sdk.ElicitParams{Message: "name?", RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				return nil, err
			}
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "sampled " + msg.Content.(*sdk.TextContent).Text + ", elicited " + el.Content["name"].(string)},
				&sdk.AudioContent{Data: []byte("wav"), MIMEType: "audio/wav"},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "demo://x", MIMEType: "text/plain", Text: "embedded"}},
			}}, nil
		})
	s.AddResource(&sdk.Resource{URI: "demo://doc", Name: "doc", MIMEType: "text/plain"},
		func(ctx context.Context, r *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: "demo://doc", Text: "the doc"}}}, nil
		})
	s.AddPrompt(&sdk.Prompt{Name: "greet"}, func(ctx context.Context, r *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "hello"}}}}, nil
	})
	return s
}

type seen struct {
	progress chan string
	logs     chan string
}

func interactiveClient() (*sdk.Client, *seen) {
	sn := &seen{progress: make(chan string, 10), logs: make(chan string, 10)}
	c := sdk.NewClient(&sdk.Implementation{Name: "client", Version: "1"}, &sdk.ClientOptions{
		CreateMessageHandler: func(ctx context.Context, r *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			return &sdk.CreateMessageResult{Role: "assistant", Model: "m", Content: &sdk.TextContent{Text: "hi"}}, nil
		},
		ElicitationHandler: func(ctx context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
		ProgressNotificationHandler: func(ctx context.Context, r *sdk.ProgressNotificationClientRequest) {
			sn.progress <- r.Params.Message
		},
		LoggingMessageHandler: func(ctx context.Context, r *sdk.LoggingMessageRequest) {
			sn.logs <- r.Params.Data.(string)
		},
	})
	return c, sn
}

func checkInteractive(t *testing.T, cs *sdk.ClientSession, sn *seen) {
	t.Helper()
	if err := cs.SetLoggingLevel(t.Context(), &sdk.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	params := &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*sdk.TextContent).Text; got != "sampled hi, elicited Ada" {
		t.Errorf("got %q, want sampling and elicitation answered through the gateway", got)
	}
	if _, ok := res.Content[1].(*sdk.AudioContent); !ok {
		t.Errorf("audio became %T", res.Content[1])
	}
	if e, ok := res.Content[2].(*sdk.EmbeddedResource); !ok || e.Resource.Text != "embedded" {
		t.Errorf("embedded resource became %#v", res.Content[2])
	}
	for name, ch := range map[string]chan string{"progress": sn.progress, "log": sn.logs} {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Errorf("no %s notification reached the client", name)
		}
	}
	r, err := cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: "demo://doc"})
	if err != nil || r.Contents[0].Text != "the doc" {
		t.Errorf("resources/read: %v %+v", err, r)
	}
	p, err := cs.GetPrompt(t.Context(), &sdk.GetPromptParams{Name: "greet"})
	if err != nil || len(p.Messages) != 1 {
		t.Errorf("prompts/get: %v", err)
	}
}

func TestPassThroughStdio(t *testing.T) {
	f := newFixture(t, interactiveServer())
	g, err := New(f.opts)
	if err != nil {
		t.Fatal(err)
	}
	c, sn := interactiveClient()
	cs, err := c.Connect(t.Context(), stdioPair(t, g), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	checkInteractive(t, cs, sn)
}

func TestPassThroughHTTP(t *testing.T) {
	f := newFixture(t, interactiveServer())
	g, err := New(f.opts)
	if err != nil {
		t.Fatal(err)
	}
	h := g.Handler(t.Context(), httpfront.Options{NoAuth: true})
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Close()
	c, sn := interactiveClient()
	cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkInteractive(t, cs, sn)
	if f.starts != 1 {
		t.Errorf("%d servers started for one session, want 1", f.starts)
	}
	// A second session gets a server of its own; ending it ends that
	// server.
	cs2, err := sdk.NewClient(&sdk.Implementation{Name: "c2", Version: "1"}, nil).Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.starts != 2 {
		t.Errorf("%d servers started for two sessions, want 2", f.starts)
	}
	cs2.Close()
	cs.Close()
	h.mu.Lock()
	left := len(h.sessions)
	h.mu.Unlock()
	if left != 0 {
		t.Errorf("%d sessions left after both clients closed", left)
	}
}

func TestHTTPRefusesOtherHosts(t *testing.T) {
	f := newFixture(t, interactiveServer())
	g, _ := New(f.opts)
	h := g.Handler(t.Context(), httpfront.Options{NoAuth: true})
	defer h.Close()
	r := httptest.NewRequest("POST", "/mcp", strings.NewReader(initLine))
	r.Host = "attacker.example:8931"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 403 || f.starts != 0 {
		t.Errorf("got %d with %d servers started, want 403 and none", w.Code, f.starts)
	}
}

// nobody is the kernel's own approver: nobody there, so only the per-call
// approver the gateway passes can answer.
type nobody struct{}

func (nobody) Ask(ctx context.Context, e mediator.Escalation) mediator.Reply {
	<-ctx.Done()
	return mediator.Reply{Answer: mediator.AnswerTimeout, Decider: "timeout"}
}

func TestEscalationThroughElicitation(t *testing.T) {
	p, err := policy.Parse("test.yaml", []byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		answer   *sdk.ElicitResult // nil: never answers
		wantErr  string
		wantText string
	}{
		{"person allows", &sdk.ElicitResult{Action: "accept", Content: map[string]any{"allow": true}}, "", "ran ask"},
		{"person refuses", &sdk.ElicitResult{Action: "accept", Content: map[string]any{"allow": false}}, "POLICY_DENIED", ""},
		{"person declines", &sdk.ElicitResult{Action: "decline"}, "POLICY_DENIED", ""},
		{"nobody answers", nil, "ESCALATION_TIMEOUT", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Elicitation during a call needs a protocol version before
			// 2026-07-28, which replaced it with multi round-trip requests.
			srv := sdk.NewServer(&sdk.Implementation{Name: "old", Version: "1"}, &sdk.ServerOptions{SupportedProtocolVersions: []string{"2025-06-18"}})
			srv.AddTool(&sdk.Tool{Name: "ask", InputSchema: json.RawMessage(plainSchema)},
				func(ctx context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
					return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ran ask"}}}, nil
				})
			f := newFixture(t, srv)
			k, err := mediator.New(p, policy.World{Workdir: t.TempDir()}, mediator.Options{Approver: nobody{}})
			if err != nil {
				t.Fatal(err)
			}
			f.opts.Kernel = k
			f.opts.WithApprover = mediator.WithApprover
			g, err := New(f.opts)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var asked string
			c := sdk.NewClient(&sdk.Implementation{Name: "client", Version: "1"}, &sdk.ClientOptions{
				ElicitationHandler: func(ctx context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
					mu.Lock()
					asked = r.Params.Message
					mu.Unlock()
					if tt.answer == nil {
						<-ctx.Done()
						return nil, ctx.Err()
					}
					return tt.answer, nil
				},
			})
			cs, err := c.Connect(t.Context(), stdioPair(t, g), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "ask", Arguments: map[string]any{"message": "m"}})
			mu.Lock()
			q := asked
			mu.Unlock()
			if !strings.Contains(q, "ask") {
				t.Errorf("the client was asked %q, want the tool named", q)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Content[0].(*sdk.TextContent).Text; got != tt.wantText {
				t.Errorf("got %q, want %q", got, tt.wantText)
			}
		})
	}
}

func TestHTTPRefusesDuplicateKeys(t *testing.T) {
	f := newFixture(t, interactiveServer())
	g, _ := New(f.opts)
	h := g.Handler(t.Context(), httpfront.Options{NoAuth: true})
	defer h.Close()
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","method":"tools/call","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"a":1,"a":2}}`,
		`not json`,
	} {
		r := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
		r.Host = "127.0.0.1:1"
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 400 || !strings.Contains(w.Body.String(), "-32700") {
			t.Errorf("%s: got %d %s, want 400 and a parse error", body, w.Code, w.Body.String())
		}
	}
	if f.starts != 0 {
		t.Errorf("%d servers started for refused requests", f.starts)
	}
}
