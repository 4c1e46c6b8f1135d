package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/mcp"
	"github.com/airlock-run/airlock/mcp/gateway"
	"github.com/airlock-run/airlock/offload"
	"github.com/airlock-run/airlock/sandbox"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// These tests run the airlock binary around real third-party MCP servers
// installed by scripts/setup.sh (scripts/npm-peers.txt) in a real tier-1
// box. Without the servers they skip, except under CI=true, where that is a
// failure.

func airlockBin(t testing.TB) string {
	return testsupport.AirlockBin(t)
}

// npmDir is where scripts/setup.sh installs the MCP peers.
func npmDir() string {
	if d := os.Getenv("AIRLOCK_NPM_DIR"); d != "" {
		return d
	}
	abs, _ := filepath.Abs("../../.airlock-ci/npm")
	return abs
}

// peer returns the entry script of an installed npm peer, skipping (or
// failing under CI=true) when it is not there.
func peer(t *testing.T, bin string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(filepath.Join(npmDir(), "node_modules", ".bin", bin))
	if err == nil {
		if _, err = exec.LookPath("node"); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("%s is not installed (run bash scripts/setup.sh): %v", bin, err)
	testsupport.Missing(t, "%s", msg)
	return ""
}

func requireTier1(t *testing.T) {
	t.Helper()
	if tier := sandbox.Probe().Tier(); tier < sandbox.Tier1 {
		msg := fmt.Sprintf("the host gives sandbox tier %d; the gateway's box needs tier 1 (airlock sandbox check)", tier)
		testsupport.Missing(t, "%s", msg)
	}
}

// user is one user's world: a working directory, XDG directories and a
// policy.
type user struct {
	t       *testing.T
	root    string
	work    string
	environ []string
}

func newUser(t *testing.T, policy string) *user {
	root := t.TempDir()
	u := &user{t: t, root: root, work: filepath.Join(root, "work")}
	for _, d := range []string{u.work, filepath.Join(root, "run")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	u.environ = []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + filepath.Join(root, "home"),
		"XDG_STATE_HOME=" + filepath.Join(root, "state"),
		"XDG_CONFIG_HOME=" + filepath.Join(root, "config"),
		"XDG_DATA_HOME=" + filepath.Join(root, "data"),
		"XDG_RUNTIME_DIR=" + filepath.Join(root, "run"),
	}
	if err := os.WriteFile(filepath.Join(u.work, "airlock.yaml"), []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	return u
}

func (u *user) wrapCmd(flags []string, server ...string) *exec.Cmd {
	args := append([]string{"mcp", "wrap"}, flags...)
	args = append(append(args, "--"), server...)
	cmd := exec.Command(airlockBin(u.t), args...)
	cmd.Dir, cmd.Env = u.work, u.environ
	return cmd
}

// connect runs `airlock mcp wrap -- server...` under the Go SDK's client.
func (u *user) connect(ctx context.Context, copts *sdk.ClientOptions, flags []string, server ...string) (*sdk.ClientSession, *exec.Cmd) {
	u.t.Helper()
	cmd := u.wrapCmd(flags, server...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	u.t.Cleanup(func() {
		if u.t.Failed() {
			u.t.Logf("airlock stderr:\n%s", stderr.String())
		}
	})
	c := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, copts)
	cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		u.t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	return cs, cmd
}

func everythingPolicy(npm string) string {
	return fmt.Sprintf(`fs:
  read: [%q]
shell:
  allow: [node]
tools:
  echo: true
  get-sum: false
  get-tiny-image: escalate
  "*": true
escalation:
  timeout: 1s
`, npm)
}

func listNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func denialOf(t *testing.T, err error) errs.Denial {
	t.Helper()
	var je *jsonrpc.Error
	if !errors.As(err, &je) {
		t.Fatalf("got %v, want a JSON-RPC error", err)
	}
	d, ok := mcp.Denial(je)
	if !ok || je.Code != errs.JSONRPCDenied {
		t.Fatalf("got %+v, want a structured denial with code %d", je, errs.JSONRPCDenied)
	}
	return d
}

// descendants lists the processes below pid.
func descendants(pid int) []int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 {
			pp, _ := strconv.Atoi(fields[1])
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			out = append(out, c)
			walk(c)
		}
	}
	walk(pid)
	return out
}

func alive(pids []int) []int {
	var out []int
	for _, p := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err == nil && !strings.Contains(string(b), ") Z ") {
			out = append(out, p)
		}
	}
	return out
}

func TestWrapEverything(t *testing.T) {
	ev := peer(t, "mcp-server-everything")
	requireTier1(t)
	u := newUser(t, everythingPolicy(npmDir()))
	logs := make(chan string, 100)
	cs, cmd := u.connect(t.Context(), &sdk.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *sdk.LoggingMessageRequest) {
			select {
			case logs <- fmt.Sprint(r.Params.Data):
			default:
			}
		},
	}, []string{"--offload", "300"}, "node", ev, "stdio")

	names := listNames(t, cs)
	t.Run("tools listed, the denied one left out", func(t *testing.T) {
		if !has(names, "echo") || !has(names, "get-tiny-image") || !has(names, offload.ToolName) {
			t.Errorf("tools/list = %v, want echo, get-tiny-image and read_result", names)
		}
		if has(names, "get-sum") {
			t.Errorf("tools/list = %v, want get-sum left out", names)
		}
	})
	t.Run("allowed tool called", func(t *testing.T) {
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Content[0].(*sdk.TextContent).Text; got != "Echo: hi" {
			t.Errorf("got %q, want %q", got, "Echo: hi")
		}
	})
	t.Run("denied tool called anyway", func(t *testing.T) {
		_, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "get-sum", Arguments: map[string]any{"a": 1, "b": 2}})
		if d := denialOf(t, err); d.Code != errs.CodePolicyDenied || d.Category != "tools" {
			t.Errorf("got %+v, want POLICY_DENIED in tools", d)
		}
	})
	t.Run("escalated tool denied at the timeout", func(t *testing.T) {
		_, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "get-tiny-image", Arguments: map[string]any{}})
		if d := denialOf(t, err); d.Code != errs.CodeEscalationTimeout {
			t.Errorf("got %+v, want ESCALATION_TIMEOUT", d)
		}
	})
	t.Run("escalation answered through elicitation", func(t *testing.T) {
		var asked atomic.Int32
		cs2, _ := u.connect(t.Context(), &sdk.ClientOptions{
			ElicitationHandler: func(ctx context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				asked.Add(1)
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"allow": true}}, nil
			},
		}, nil, "node", ev, "stdio")
		defer cs2.Close()
		res, err := cs2.CallTool(t.Context(), &sdk.CallToolParams{Name: "get-tiny-image", Arguments: map[string]any{}})
		if err != nil {
			t.Fatalf("an escalation the person at the client allowed: %v", err)
		}
		if asked.Load() != 1 {
			t.Errorf("the client was asked %d times, want 1", asked.Load())
		}
		found := false
		for _, c := range res.Content {
			if _, ok := c.(*sdk.ImageContent); ok {
				found = true
			}
		}
		if !found {
			t.Errorf("no image in %+v", res.Content)
		}
	})
	t.Run("big result offloaded with _meta", func(t *testing.T) {
		msg := strings.Repeat("A long line of text for the model to read. ", 400)
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}})
		if err != nil {
			t.Fatal(err)
		}
		var stub offload.Stub
		if err := json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &stub); err != nil || stub.Offloaded.Ref == "" {
			t.Fatalf("got %.200q, want an offload stub", res.Content[0].(*sdk.TextContent).Text)
		}
		meta, _ := json.Marshal(res.Meta[mcp.MetaFit])
		if !strings.Contains(string(meta), stub.Offloaded.Ref) {
			t.Errorf("_meta[%q] = %s, want the ref %s", mcp.MetaFit, meta, stub.Offloaded.Ref)
		}
		back, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: offload.ToolName, Arguments: map[string]any{"ref": stub.Offloaded.Ref, "range": "1-1"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := back.Content[0].(*sdk.TextContent).Text; !strings.Contains(got, "A long line") {
			t.Errorf("read_result gave %.200q", got)
		}
	})
	t.Run("resources pass through", func(t *testing.T) {
		rs, err := cs.ListResources(t.Context(), nil)
		if err != nil || len(rs.Resources) == 0 {
			t.Fatalf("resources/list: %v, %d resources", err, len(rs.Resources))
		}
		r, err := cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: rs.Resources[0].URI})
		if err != nil || len(r.Contents) == 0 {
			t.Fatalf("resources/read %s: %v", rs.Resources[0].URI, err)
		}
	})
	t.Run("prompts pass through", func(t *testing.T) {
		p, err := cs.GetPrompt(t.Context(), &sdk.GetPromptParams{Name: "args-prompt", Arguments: map[string]string{"city": "Oslo"}})
		if err != nil || len(p.Messages) == 0 {
			t.Fatalf("prompts/get: %v", err)
		}
		if b, _ := json.Marshal(p.Messages); !strings.Contains(string(b), "Oslo") {
			t.Errorf("prompt %s does not carry the argument", b)
		}
	})
	t.Run("structured content passes through", func(t *testing.T) {
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "get-structured-content", Arguments: map[string]any{"location": "New York"}})
		if err != nil {
			t.Fatal(err)
		}
		if res.StructuredContent == nil {
			t.Errorf("structuredContent was lost: %+v", res)
		}
	})
	t.Run("logging passes through", func(t *testing.T) {
		if err := cs.SetLoggingLevel(t.Context(), &sdk.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "toggle-simulated-logging", Arguments: map[string]any{}}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-logs:
		case <-time.After(30 * time.Second):
			t.Errorf("no log message reached the client")
		}
	})

	// Ending the session tears the box down: nothing started for it is
	// left running.
	procs := descendants(cmd.Process.Pid)
	if len(procs) == 0 {
		t.Fatalf("no processes under airlock (pid %d) while serving", cmd.Process.Pid)
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for len(alive(procs)) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if left := alive(procs); len(left) > 0 {
		t.Errorf("processes %v of the session still run after it ended", left)
	}
}

func TestWrapPinnedDefinitionChanged(t *testing.T) {
	ev := peer(t, "mcp-server-everything")
	requireTier1(t)
	u := newUser(t, everythingPolicy(npmDir()))
	argv := []string{"node", ev, "stdio"}
	// A pin of echo as it was before: a different description.
	pins, err := gateway.OpenPins(gateway.PinsFile(filepath.Join(u.root, "state", "airlock", "mcp-pins"), argv))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pins.Check(gateway.Definition{Name: "echo", Description: "Echoes back the input string, politely",
		InputSchema: json.RawMessage(`{"type":"object"}`)}); err != nil {
		t.Fatal(err)
	}
	cs, _ := u.connect(t.Context(), nil, nil, argv...)
	defer cs.Close()
	if names := listNames(t, cs); has(names, "echo") {
		t.Errorf("tools/list = %v, want the changed echo left out", names)
	}
	_, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}})
	d := denialOf(t, err)
	if d.Code != errs.CodeEscalationTimeout || !strings.Contains(d.Reason, "definition") {
		t.Errorf("got %+v, want a timed-out approval of the changed definition", d)
	}
	if _, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "get-structured-content", Arguments: map[string]any{"location": "New York"}}); err != nil {
		t.Errorf("an unchanged tool was refused: %v", err)
	}
}

func TestWrapFilesystem(t *testing.T) {
	fsrv := peer(t, "mcp-server-filesystem")
	requireTier1(t)
	u := newUser(t, fmt.Sprintf(`fs:
  read: [%q]
shell:
  allow: [node]
tools:
  write_file: false
  edit_file: false
  "*": true
`, npmDir()))
	if err := os.WriteFile(filepath.Join(u.work, "notes.md"), []byte("# Notes\nhello from the workdir\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cs, _ := u.connect(t.Context(), nil, nil, "node", fsrv, u.work)
	defer cs.Close()
	names := listNames(t, cs)
	if has(names, "write_file") || !has(names, "read_text_file") {
		t.Errorf("tools/list = %v, want read_text_file and no write_file", names)
	}
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": filepath.Join(u.work, "notes.md")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*sdk.TextContent).Text; !strings.Contains(got, "hello from the workdir") {
		t.Errorf("read_text_file gave %q", got)
	}
	_, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": filepath.Join(u.work, "x"), "content": "x"}})
	if d := denialOf(t, err); d.Code != errs.CodePolicyDenied {
		t.Errorf("got %+v, want POLICY_DENIED", d)
	}
	if _, err := os.Stat(filepath.Join(u.work, "x")); err == nil {
		t.Errorf("the denied write happened")
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitListening(t *testing.T, port int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("nothing listens on 127.0.0.1:%d", port)
}

// stamp is the time the conformance suite appends to a result directory.
var stamp = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T[0-9TZ-]+$`)

// conformance runs the MCP conformance suite against url and returns each
// check's status by "scenario/check".
func conformance(bin, url string) (map[string]string, error) {
	out, err := os.MkdirTemp("", "airlock-conformance-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(out)
	b, err := exec.Command(bin, "server", "--url", url, "-o", out).CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return nil, fmt.Errorf("conformance: %v\n%s", err, b)
	}
	got := map[string]string{}
	dirs, _ := filepath.Glob(filepath.Join(out, "*", "checks.json"))
	for _, f := range dirs {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var checks []struct{ ID, Status string }
		if err := json.Unmarshal(data, &checks); err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
		scenario := filepath.Base(filepath.Dir(f))
		scenario = strings.TrimPrefix(stamp.ReplaceAllString(scenario, ""), "server-")
		for _, c := range checks {
			got[scenario+"/"+c.ID] = c.Status
		}
	}
	if len(got) == 0 {
		return nil, fmt.Errorf("conformance produced no results:\n%s", b)
	}
	return got, nil
}

// TestConformance runs the conformance suite against server-everything
// served directly over streamable HTTP and against `airlock mcp wrap --http`
// in front of it: the gateway must pass every check the server passes.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("the conformance suite takes minutes; not in -short")
	}
	ev := peer(t, "mcp-server-everything")
	suite := peer(t, "conformance")
	requireTier1(t)

	port := freePort(t)
	direct := exec.Command("node", ev, "streamableHttp")
	direct.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	if err := direct.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { direct.Process.Kill(); direct.Wait() }()
	waitListening(t, port)

	u := newUser(t, fmt.Sprintf("fs:\n  read: [%q]\nshell:\n  allow: [node]\ntools:\n  \"*\": true\n", npmDir()))
	gport := freePort(t)
	// The suite sends no token and opens a session per scenario.
	gw := u.wrapCmd([]string{"--http", fmt.Sprintf("127.0.0.1:%d", gport), "--no-auth",
		"--max-sessions", "100", "--max-client-sessions", "100", "--max-boxes", "100", "--max-client-boxes", "100"}, "node", ev, "stdio")
	var stderr strings.Builder
	gw.Stderr = &stderr
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	defer gw.Process.Kill()
	waitListening(t, gport)

	// Both runs at once: they share nothing but the machine.
	var want, got map[string]string
	var werr, gerr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); want, werr = conformance(suite, fmt.Sprintf("http://127.0.0.1:%d/mcp", port)) }()
	go func() { defer wg.Done(); got, gerr = conformance(suite, fmt.Sprintf("http://127.0.0.1:%d/mcp", gport)) }()
	wg.Wait()
	if werr != nil || gerr != nil {
		t.Fatalf("direct: %v; gateway: %v", werr, gerr)
	}
	// Stopping the gateway ends every session's box.
	procs := descendants(gw.Process.Pid)
	gw.Process.Signal(os.Interrupt)
	gw.Wait()
	deadline := time.Now().Add(15 * time.Second)
	for len(alive(procs)) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if left := alive(procs); len(left) > 0 {
		t.Errorf("processes %v of the gateway's sessions still run after it stopped", left)
	}

	var table strings.Builder
	fmt.Fprintf(&table, "%-60s %-8s %s\n", "scenario/check", "direct", "gateway")
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sortStrings(keys)
	// Checks the gateway fails by design. server-everything lists neither
	// test_simple_text nor test_error_handling; it answers a call of a tool
	// it does not have with a failed result, which the suite takes for a
	// pass, and the gateway refuses a tool the server never listed (a
	// server that matches names loosely would run another).
	byDesign := map[string]bool{
		"tools-call-simple-text/tools-call-simple-text": true,
		"tools-call-error/tools-call-error":             true,
	}
	for _, k := range keys {
		fmt.Fprintf(&table, "%-60s %-8s %s\n", k, want[k], got[k])
		if want[k] == "SUCCESS" && got[k] != "SUCCESS" && !byDesign[k] {
			t.Errorf("%s: the server passes it directly, the gateway gives %q", k, got[k])
		}
	}
	t.Logf("conformance, direct vs through the gateway:\n%s", table.String())
	if t.Failed() {
		t.Logf("gateway stderr:\n%s", stderr.String())
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// TestWrapServerCrashes: a wrapped server that dies mid-request leaves the
// client with a JSON-RPC error for it, and airlock exits with 125 without
// leaving anything running.
func TestWrapServerCrashes(t *testing.T) {
	peer(t, "mcp-server-everything") // the same setup provides node
	requireTier1(t)
	u := newUser(t, "shell:\n  allow: [node]\n")
	cmd := u.wrapCmd(nil, "node", "-e", "process.stdin.once('data', () => process.exit(3))")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	time.Sleep(500 * time.Millisecond) // let the box come up before counting
	procs := descendants(cmd.Process.Pid)
	io := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"
	if _, err := stdin.Write([]byte(io)); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 4096)
	n, _ := stdout.Read(line)
	if got := string(line[:n]); !strings.Contains(got, `"id":1`) || !strings.Contains(got, `"error"`) {
		t.Errorf("got %q, want an error answering request 1", got)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != errs.ExitCannotRun {
			t.Errorf("airlock exited with %v, want %d\n%s", err, errs.ExitCannotRun, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("airlock did not exit after its server died\n%s", stderr.String())
	}
	if left := alive(procs); len(left) > 0 {
		t.Errorf("processes %v still run after airlock exited", left)
	}
}

// TestWrapDecidesWhatNodeRuns: server-everything (Node, JSON.parse: exact
// keys, the last of two wins) behind `airlock mcp wrap`. A tools/call with
// {"name":"get-sum","Name":"echo"} was decided as echo by Go's decoder and
// forwarded as it came, and Node ran the denied get-sum; a call of
// "GET-SUM" or "get-sum " reached no tool only because this server matches
// exactly. Each is now refused before the server sees it.
func TestWrapDecidesWhatNodeRuns(t *testing.T) {
	ev := peer(t, "mcp-server-everything")
	requireTier1(t)
	u := newUser(t, everythingPolicy(npmDir()))
	cmd := u.wrapCmd(nil, "node", ev, "stdio")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	lines := bufio.NewScanner(out)
	lines.Buffer(make([]byte, 1<<20), 64<<20)
	// answer sends line and reads until the answer with id.
	answer := func(line string, id int) string {
		t.Helper()
		if _, err := io.WriteString(in, line+"\n"); err != nil {
			t.Fatal(err)
		}
		for lines.Scan() {
			if strings.Contains(lines.Text(), fmt.Sprintf(`"id":%d`, id)) {
				return lines.Text()
			}
		}
		t.Fatalf("no answer to %d: %v\n%s", id, lines.Err(), stderr.String())
		return ""
	}
	answer(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, 1)
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	answer(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`, 2)
	tests := []struct{ name, params, want string }{
		{"Name beside name", `{"name":"get-sum","Name":"echo","arguments":{"a":1,"b":2,"message":"x"}}`, "duplicate key"},
		{"NAME beside name", `{"name":"get-sum","NAME":"echo","arguments":{"a":1,"b":2,"message":"x"}}`, "duplicate key"},
		{"upper case", `{"name":"GET-SUM","arguments":{"a":1,"b":2}}`, "did not list"},
		{"trailing space", `{"name":"get-sum ","arguments":{"a":1,"b":2}}`, "did not list"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := answer(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, 10+i, tt.params), 10+i)
			if strings.Contains(got, "The sum of") || !strings.Contains(got, `"error"`) || !strings.Contains(got, tt.want) {
				t.Errorf("got %s, want an error saying %q", got, tt.want)
			}
		})
	}
	if got := answer(`{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`, 30); !strings.Contains(got, "Echo: hi") {
		t.Errorf("an allowed call: got %s", got)
	}
}
