package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/files"
	"github.com/airlock-run/airlock/internal/wiring"
	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/offload"
	"github.com/airlock-run/airlock/sandbox"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// peerArg makes the test binary a real MCP server (the Go SDK's) on its
// standard input and output: the job's kernel starts it as a job's server.
const peerArg = "mcp-peer"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == peerArg {
		servePeer()
		return
	}
	os.Exit(m.Run())
}

// servePeer serves echo (read-only, closed world), secret (neither) and
// fetch (read-only, open world) until its input ends.
func servePeer() {
	s := sdk.NewServer(&sdk.Implementation{Name: "peer", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}}}`)
	s.AddTool(&sdk.Tool{Name: "echo", Description: "echo", InputSchema: schema, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}},
		func(ctx context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a struct{ Message string }
			json.Unmarshal(r.Params.Arguments, &a)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + a.Message}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "secret", Description: "secret", InputSchema: schema},
		func(ctx context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "the secret"}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "fetch", Description: "fetch", InputSchema: schema, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(true)}},
		func(ctx context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "text from outside"}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "big", Description: "big", InputSchema: schema, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}},
		func(ctx context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: bigText()}}}, nil
		})
	addAttackTools(s)
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "peer:", err)
		os.Exit(1)
	}
}

// bigText is a Markdown document of tens of thousands of tokens.
func bigText() string {
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "## Part %d\n\n%s\n\n", i, strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 30))
	}
	return b.String()
}

// testKernel builds each job's kernel as a node does (wiring, the job's
// policy, its own directory) at tier 0.
func testKernel(t *testing.T) KernelFunc {
	return func(ctx context.Context, j jobs.Job, dir string) (Kernel, error) {
		pf := filepath.Join(dir, "policy.yaml")
		if err := os.WriteFile(pf, []byte(j.Policy), 0o600); err != nil {
			return Kernel{}, err
		}
		getenv := func(k string) string {
			if k == "HOME" {
				return dir
			}
			return ""
		}
		st, err := files.Open(filepath.Join(dir, "files"), files.Options{})
		if err != nil {
			return Kernel{}, err
		}
		k, err := wiring.Build(wiring.Config{PolicyFile: pf,
			StoreDir: st.Dir(), Offloader: &offload.Offloader{Store: st, Threshold: offload.DefaultThreshold},
			Scope: files.Scope{Tenant: "node", Tree: j.ID}, Workdir: filepath.Join(dir, "work"), Dir: dir,
			Getenv: getenv, AuditFile: filepath.Join(dir, "audit.jsonl"), GrantsFile: filepath.Join(dir, "grants.json"),
			Tier: sandbox.Tier0, Log: slog.New(slog.DiscardHandler),
			Taint: func() string {
				if j.Tainted {
					return "it read text from outside"
				}
				return ""
			}})
		if err != nil {
			return Kernel{}, err
		}
		return Kernel{Kernel: k.Kernel, Close: func() error { return errors.Join(k.Close(), st.Close()) }}, nil
	}
}

// TestToolCalls: a job's tool calls reach its MCP server (a real one,
// started in the job's kernel on first use) through the gateway: the
// policy allows one tool and denies another, each as the result and the
// trace record say, and the server is gone when the lease closes.
func TestToolCalls(t *testing.T) {
	r := testRunner(t, Config{})
	j := peerJob(t, r, "j-1", "", "  peer.echo: true\n  peer.big: true\n  peer.secret: false\n")
	ctx := t.Context()
	call := func(c jobs.Call) jobs.CallResult {
		t.Helper()
		if err := c.Validate(); err != nil {
			t.Fatalf("call %s: %v", c.ID, err)
		}
		res, err := r.Call(ctx, jobs.CallRequest{Job: j, Node: "n1", Call: c})
		if err != nil {
			t.Fatalf("call %s: %v", c.ID, err)
		}
		return res
	}

	echo := jobs.Call{ID: "c1", Kind: jobs.CallTool, Server: "peer", Tool: "echo", Args: json.RawMessage(`{"message":"hi"}`)}
	res := call(echo)
	if res.Refused || res.ExitCode != 0 || res.Text != "echo: hi" || res.Verdict != "allow" || res.Rule == "" {
		t.Fatalf("allowed tool: %+v", res)
	}
	rec := jobs.Record(echo, res)
	if rec.Call != "peer/echo (args 16 bytes)" || rec.Verdict != "allow" || rec.Kind != jobs.CallTool {
		t.Errorf("trace record of the allowed call: %+v", rec)
	}

	secret := jobs.Call{ID: "c2", Kind: jobs.CallTool, Server: "peer", Tool: "secret"}
	res = call(secret)
	if !res.Refused || res.Verdict != "deny" || !strings.Contains(res.Rule, "peer.secret") || strings.Contains(res.Text, "the secret") {
		t.Fatalf("denied tool: %+v", res)
	}
	if rec := jobs.Record(secret, res); !rec.Refused || rec.Reason == "" {
		t.Errorf("trace record of the denied call: %+v", rec)
	}

	res = call(jobs.Call{ID: "c5", Kind: jobs.CallTool, Server: "peer", Tool: "big"})
	if res.Refused || res.ExitCode != 0 || len(res.Refs) != 1 || !strings.Contains(res.Text, res.Refs[0]) || len(res.Text) >= len(bigText())/4 {
		t.Fatalf("a result too big to show: refs %v, text of %d bytes (of %d)", res.Refs, len(res.Text), len(bigText()))
	}
	part := call(jobs.Call{ID: "c6", Kind: jobs.CallReadResult, Ref: res.Refs[0], Query: "Part 7"})
	if part.Refused || !strings.Contains(part.Text, "Part 7") {
		t.Errorf("read_result of the offloaded tool result: %+v", part)
	}

	res = call(jobs.Call{ID: "c3", Kind: jobs.CallTool, Server: "peer", Tool: "nosuch"})
	if res.Refused || res.ExitCode != 1 || !strings.Contains(res.Text, "nosuch") {
		t.Errorf("a tool the server does not list: %+v", res)
	}
	res = call(jobs.Call{ID: "c4", Kind: jobs.CallTool, Server: "other", Tool: "echo"})
	if !res.Refused || !strings.Contains(res.Reason, `server "other"`) {
		t.Errorf("a server the job does not name: %+v", res)
	}

	r.lmu.Lock()
	l := r.leases[j.ID]
	r.lmu.Unlock()
	if err := r.Close(context.Background(), j.ID); err != nil {
		t.Fatal(err)
	}
	if err := l.mcp.ctx.Err(); err == nil {
		t.Error("the job's MCP server outlived its lease")
	}
}

// TestToolServerCommandRefused: a job's server is a command like any
// other: one its policy's shell section does not allow never starts, and
// the tool call that needed it is refused, saying why.
func TestToolServerCommandRefused(t *testing.T) {
	r := testRunner(t, Config{})
	j := peerJob(t, r, "j-2", "ls", "  \"*\": true\n")
	res, err := r.Call(t.Context(), jobs.CallRequest{Job: j, Node: "n1", Call: jobs.Call{ID: "c1", Kind: jobs.CallTool, Server: "peer", Tool: "echo"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Refused || !strings.Contains(res.Reason, "not allowed") {
		t.Fatalf("a server whose command the policy does not allow: %+v", res)
	}
}

func ptr[T any](v T) *T { return &v }

// TestToolCallTaint: an open-world tool's result taints the job, and from
// then on a tool not marked read-only waits for a person (asked through
// the server, who denies it here), while a read-only one still runs.
func TestToolCallTaint(t *testing.T) {
	w := &jobs.Waiters{}
	asked := make(chan jobs.Question, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var q jobs.Question
		if json.NewDecoder(r.Body).Decode(&q) != nil {
			rw.WriteHeader(400)
			return
		}
		rw.WriteHeader(202)
		asked <- q
		go w.Deliver(jobs.Answer{Question: q.ID, Digest: q.Digest, Answer: jobs.AnswerDeny, By: "person:operator"})
	}))
	defer srv.Close()
	r := testRunner(t, Config{Server: srv.URL})
	r.waiters, r.token = w, func() string { return "node.n1.t" }
	j := peerJob(t, r, "j-3", "", "  \"*\": true\nescalation:\n  timeout: 5s\n")
	call := toolCaller(t, r, j)
	if res := call("c1", "secret"); res.Refused || res.Text != "the secret" {
		t.Fatalf("a tool not read-only before the taint: %+v", res)
	}
	if res := call("c2", "fetch"); res.Refused || res.Text != "text from outside" {
		t.Fatalf("the open-world tool: %+v", res)
	}
	if len(asked) != 0 {
		t.Fatalf("a person was asked before the taint: %+v", <-asked)
	}
	res := call("c3", "secret")
	if !res.Refused || res.Rule != "taint" || strings.Contains(res.Text, "the secret") {
		t.Fatalf("a tool not read-only after the taint: %+v", res)
	}
	select {
	case q := <-asked:
		if q.Call != "tool peer.secret" {
			t.Errorf("the person was asked %q", q.Call)
		}
	default:
		t.Error("no person was asked about the tainted call")
	}
	if res := call("c4", "echo"); res.Refused || res.Text != "echo: " {
		t.Errorf("a read-only tool after the taint: %+v", res)
	}
}

// TestToolCallOfTaintedJobUnconfined: a job tainted since its start (the
// server's record on its call) would run its MCP server unconfined on a
// tier-0 node, past the egress proxy, so its tool calls are refused there,
// as its commands are.
func TestToolCallOfTaintedJobUnconfined(t *testing.T) {
	r := testRunner(t, Config{})
	j := peerJob(t, r, "j-4", "", "  \"*\": true\n")
	res, err := r.Call(t.Context(), jobs.CallRequest{Job: j, Node: "n1", Call: jobs.Call{ID: "c1", Kind: jobs.CallTool, Server: "peer", Tool: "echo",
		Taint: "it read job j-0's result, which came from outside"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Refused || !strings.Contains(res.Reason, "tier 1 only") || res.Text != "" {
		t.Fatalf("a tainted job's tool call on a tier-0 node: %+v", res)
	}
}

// testRunner is a node's runner of jobs (id n1) with kernels as a node
// builds them, at tier 0, configured by cfg besides.
func testRunner(t *testing.T, cfg Config) *runner {
	cfg.ID, cfg.StateDir, cfg.Kernel, cfg.Log = "n1", t.TempDir(), testKernel(t), slog.New(slog.DiscardHandler)
	return &runner{cfg: cfg}
}

// peerJob opens the open job id on r with the test binary as its MCP
// server "peer", under a policy of isolation none whose shell section
// allows shell ("": the test binary) and whose tools section is tools;
// the lease closes at the test's end.
func peerJob(t *testing.T, r *runner, id, shell, tools string) jobs.Job {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if shell == "" {
		shell = strconv.Quote(exe)
	}
	policy := fmt.Sprintf("isolation: none\nshell:\n  allow: [%s]\ntools:\n%s", shell, tools)
	j := jobs.Job{ID: id, Pool: "ci", Open: true, Tier0: true, Policy: policy, MCP: map[string][]string{"peer": {exe, peerArg}}}
	if _, err := r.Open(t.Context(), jobs.LeaseRequest{Job: j, Node: "n1"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background(), id) })
	return j
}
