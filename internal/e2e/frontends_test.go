package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// The front-end conformance table: the same calls, attacks included, run
// through every front end of the one kernel — `airlock run`, `airlock mcp
// serve` over stdio and over HTTP, and `airlock mcp wrap` — with the same
// outcome expected of each. A front end that cannot express a call (a
// command line carries no JSON) has no spelling for it in that row.

// outcome classes of a call, whatever the front end.
const (
	ran     = "ran"     // the kernel allowed it and it ran
	refused = "refused" // the policy (or a person's absence) refused it; nothing ran
	invalid = "invalid" // the call itself was malformed; nothing ran
	failed  = "failed"  // airlock could not run it as the policy asks; nothing ran
)

// feCall is one call as each kind of front end spells it: argv for `airlock
// run`, a tools/call params object (raw JSON, so duplicate keys survive)
// for airlock's own tools (serve) and for the wrapped server's (wrap). An
// empty spelling means the front end cannot express the call.
type feCall struct {
	argv  []string
	serve string
	wrap  string
}

type feRow struct {
	name   string
	policy string // extra policy text after the base
	mode   string
	call   feCall
	want   string
	// text must be in the output of a call that ran.
	text string
	// after checks the machine once the call is done.
	after func(t *testing.T, h *home)
}

// feBase lets the box run node and the MCP peers, so every front end can
// serve under the same policy.
func feBase(npm string) string {
	return fmt.Sprintf(`shell:
  allow: [echo, sh, cat, node, "true"]
  args:
    echo:
      escalate: ["please-ask*"]
tools:
  echo: true
  get-sum: false
  exec: true
  read_file: true
  write_file: true
  "*": escalate
escalation:
  timeout: 1s
fs:
  read: [".", %q]
`, npm)
}

func frontEndRows() []feRow {
	victimKept := func(t *testing.T, h *home) {
		t.Helper()
		if _, err := os.Stat(filepath.Join(h.Work, "victim")); err != nil {
			t.Errorf("the victim is gone: %v", err)
		}
	}
	grantsKept := func(t *testing.T, h *home) {
		t.Helper()
		if b, err := os.ReadFile(h.grants()); err != nil || string(b) != "grants: []\n" {
			t.Errorf("the grants file is %q, %v; want it untouched", b, err)
		}
	}
	return []feRow{
		{name: "allowed", call: feCall{argv: []string{"echo", "hello"},
			serve: `{"name":"exec","arguments":{"argv":["echo","hello"]}}`,
			wrap:  `{"name":"echo","arguments":{"message":"hello"}}`}, want: ran, text: "hello"},
		{name: "denied program", call: feCall{argv: []string{"rm", "-f", "victim"},
			serve: `{"name":"exec","arguments":{"argv":["rm","-f","victim"]}}`,
			wrap:  `{"name":"get-sum","arguments":{"a":1,"b":2}}`}, want: refused, after: victimKept},
		{name: "denied program in a shell string", call: feCall{argv: []string{"sh", "-c", "echo hi; rm -f victim"},
			serve: `{"name":"exec","arguments":{"command":"echo hi; rm -f victim"}}`}, want: refused, after: victimKept},
		{name: "escalation with nobody to ask", call: feCall{argv: []string{"echo", "please-ask"},
			serve: `{"name":"exec","arguments":{"argv":["echo","please-ask"]}}`,
			wrap:  `{"name":"get-tiny-image","arguments":{}}`}, want: refused},
		{name: "duplicate keys under case folding", call: feCall{
			serve: `{"name":"exec","arguments":{"argv":["echo","hi"],"Argv":["rm","-f","victim"]}}`,
			wrap:  `{"name":"echo","Name":"get-sum","arguments":{"message":"hi"}}`}, want: invalid, after: victimKept},
		{name: "duplicate tool name key", call: feCall{
			serve: `{"name":"exec","arguments":{"argv":["echo","hi"]},"NAME":"write_file"}`,
			wrap:  `{"name":"get-sum","NAME":"echo","arguments":{"a":1,"b":2}}`}, want: invalid},
		{name: "a tool name never listed", call: feCall{
			serve: `{"name":"EXEC","arguments":{"argv":["rm","-f","victim"]}}`,
			wrap:  `{"name":"GET-SUM","arguments":{"a":1,"b":2}}`}, want: invalid, after: victimKept},
		{name: "a listed name with a trailing space", call: feCall{
			serve: `{"name":"exec ","arguments":{"argv":["rm","-f","victim"]}}`,
			wrap:  `{"name":"get-sum ","arguments":{"a":1,"b":2}}`}, want: invalid, after: victimKept},
		{name: "write reaching airlock's grants file", mode: "fix", policy: "  write: [\".\", \"~\"]\n",
			call: feCall{argv: []string{"sh", "-c", "echo '- argv: [rm]' > GRANTS"},
				serve: `{"name":"write_file","arguments":{"path":"GRANTS","content":"- argv: [rm]\n"}}`,
				wrap:  `{"name":"echo","arguments":{"message":"hello"}}`}, want: failed, after: grantsKept},
	}
}

// frontEnd starts one front end for a row and calls through it.
type frontEnd struct {
	name string
	call func(t *testing.T, h *home, r feRow) (class, text string)
}

func frontEnds(npm, everything string) []frontEnd {
	return []frontEnd{
		{"run", func(t *testing.T, h *home, r feRow) (string, string) {
			if r.call.argv == nil {
				return "", ""
			}
			argv := make([]string, len(r.call.argv))
			for i, a := range r.call.argv {
				argv[i] = strings.ReplaceAll(a, "GRANTS", h.grants())
			}
			res := h.runEnv(h.feEnviron(), append([]string{"run", "--mode", nonEmptyMode(r.mode), "--"}, argv...)...)
			switch res.Code {
			case 126:
				return refused, res.Stderr
			case 125:
				return failed, res.Stderr
			case 2:
				return invalid, res.Stderr
			}
			return ran, res.Stdout
		}},
		{"mcp serve (stdio)", func(t *testing.T, h *home, r feRow) (string, string) {
			if r.call.serve == "" {
				return "", ""
			}
			c := h.stdioClient(t, "mcp", "serve", "--mode", nonEmptyMode(r.mode))
			return c.call(t, strings.ReplaceAll(r.call.serve, "GRANTS", h.grants()))
		}},
		{"mcp serve (http)", func(t *testing.T, h *home, r feRow) (string, string) {
			if r.call.serve == "" {
				return "", ""
			}
			c := h.httpClient(t, "mcp", "serve", "--mode", nonEmptyMode(r.mode))
			return c.call(t, strings.ReplaceAll(r.call.serve, "GRANTS", h.grants()))
		}},
		{"mcp wrap", func(t *testing.T, h *home, r feRow) (string, string) {
			if r.call.wrap == "" {
				return "", ""
			}
			c := h.stdioClient(t, "mcp", "wrap", "--mode", nonEmptyMode(r.mode), "--", "node", everything)
			return c.call(t, r.call.wrap)
		}},
	}
}

func nonEmptyMode(m string) string {
	if m == "" {
		return "observe"
	}
	return m
}

func TestFrontEndConformance(t *testing.T) {
	requireRoot(t)
	requireBwrap(t)
	npm, everything := npmPeer(t, "mcp-server-everything")
	for _, fe := range frontEnds(npm, everything) {
		for _, r := range frontEndRows() {
			t.Run(fe.name+"/"+r.name, func(t *testing.T) {
				h := newShortHome(t)
				h.write("airlock.yaml", feBase(npm)+r.policy)
				h.write("victim", "keep me\n")
				os.MkdirAll(filepath.Dir(h.grants()), 0o700)
				os.WriteFile(h.grants(), []byte("grants: []\n"), 0o600)
				class, text := fe.call(t, h, r)
				if class == "" {
					t.Skip("this front end has no spelling for the call")
				}
				if class != r.want {
					t.Fatalf("got %s (%q), want %s", class, text, r.want)
				}
				if r.want == ran && !strings.Contains(text, r.text) {
					t.Errorf("output %q does not hold %q", text, r.text)
				}
				if r.after != nil {
					r.after(t, h)
				}
			})
		}
	}
}

// newShortHome is newHome under a short directory: the approvals socket's
// path must fit a Unix socket's, and subtest names are long.
func newShortHome(t *testing.T) *home {
	root, err := os.MkdirTemp("", "fe")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	h := newHome(t)
	old := filepath.Dir(h.Work)
	for i, kv := range h.environ {
		h.environ[i] = strings.Replace(kv, old, root, 1)
	}
	h.Work, h.State = filepath.Join(root, "work"), root
	for _, d := range []string{h.Work, filepath.Join(root, "run")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// grants is airlock's grants file in this home: under ~/.config, so a
// write grant of "~" reaches it.
func (h *home) grants() string {
	return filepath.Join(h.home(), ".config", "airlock", "grants.yaml")
}

func (h *home) home() string {
	for _, kv := range h.environ {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			return v
		}
	}
	h.t.Fatal("no HOME")
	return ""
}

// feEnviron is the home's environment with the XDG config directory under
// HOME (as it is by default).
func (h *home) feEnviron() []string {
	var env []string
	for _, kv := range h.environ {
		if !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			env = append(env, kv)
		}
	}
	return env
}

func npmPeer(t *testing.T, bin string) (npm, script string) {
	t.Helper()
	npm = os.Getenv("AIRLOCK_NPM_DIR")
	if npm == "" {
		npm, _ = filepath.Abs("../../.airlock-ci/npm")
	}
	script, err := filepath.EvalSymlinks(filepath.Join(npm, "node_modules", ".bin", bin))
	if err == nil {
		_, err = exec.LookPath("node")
	}
	if err != nil {
		msg := fmt.Sprintf("%s is not installed (run bash scripts/setup.sh): %v", bin, err)
		testsupport.Missing(t, "%s", msg)
	}
	return npm, script
}

// rpcClient speaks newline-delimited or HTTP JSON-RPC, raw, so a message
// can carry what the SDK's encoder would never send.
type rpcClient struct {
	send func(t *testing.T, msg string) (resp []byte)
}

// call initializes the session on first use and sends one tools/call with
// params as given; it classifies the answer.
func (c *rpcClient) call(t *testing.T, params string) (string, string) {
	t.Helper()
	b := c.send(t, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":`+params+`}`)
	if b == nil {
		return failed, "airlock ended without an answer"
	}
	var resp struct {
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    struct {
				Code string `json:"code"`
			} `json:"data"`
		} `json:"error"`
		Result *struct {
			Meta struct {
				Error struct {
					Class string `json:"class"`
				} `json:"airlock/error"`
			} `json:"_meta"`
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		t.Fatalf("answer %q: %v", b, err)
	}
	switch {
	case resp.Error != nil && resp.Error.Code == -32001:
		return refused, resp.Error.Message
	case resp.Error != nil && (resp.Error.Code == -32700 || resp.Error.Code == -32600 || resp.Error.Code == -32602):
		// JSON-RPC's parse error, invalid request, invalid params: the
		// message itself was malformed.
		return invalid, resp.Error.Message
	case resp.Error != nil:
		return failed, resp.Error.Message
	case resp.Result == nil:
		t.Fatalf("answer %q has neither result nor error", b)
	}
	var text strings.Builder
	for _, c := range resp.Result.Content {
		text.WriteString(c.Text)
	}
	// A command that ran says its exit code; a tool error without one is
	// airlock's own failure to run the call.
	if resp.Result.IsError && resp.Result.Meta.Error.Class == "invalid" {
		return invalid, text.String()
	}
	if resp.Result.IsError && !strings.Contains(text.String(), "[exit code") {
		return failed, text.String()
	}
	return ran, text.String()
}

const feInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"conformance","version":"1"}}}`

// stdioClient starts airlock with args in the home and speaks to it on its
// standard input and output.
func (h *home) stdioClient(t *testing.T, args ...string) *rpcClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Dir, cmd.Env = h.Work, h.feEnviron()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		cancel()
		cmd.Wait()
		if t.Failed() {
			t.Logf("airlock stderr:\n%s", stderr.String())
		}
	})
	lines := bufio.NewReaderSize(out, 1<<20)
	var mu sync.Mutex
	roundTrip := func(t *testing.T, msg string, id string) []byte {
		mu.Lock()
		defer mu.Unlock()
		if _, err := io.WriteString(in, msg+"\n"); err != nil {
			return nil // airlock ended: the caller sees no answer
		}
		for {
			line, err := lines.ReadBytes('\n')
			if err != nil {
				return nil
			}
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(line, &m) == nil && string(m.ID) == id {
				return line
			}
		}
	}
	roundTrip(t, feInitialize, "1")
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	return &rpcClient{send: func(t *testing.T, msg string) []byte { return roundTrip(t, msg, "7") }}
}

// httpClient starts airlock with args and --http on a free loopback port
// and speaks MCP's streamable HTTP to it.
func (h *home) httpClient(t *testing.T, args ...string) *rpcClient {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	// A client holds the bearer token from a file only it may read, as a
	// person would set it up.
	const token = "conformance-token-0123456789abcdef0123456789abcdef"
	tokenFile := filepath.Join(h.State, "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, h.bin, append(args, "--http", addr, "--token-file", tokenFile)...)
	cmd.Dir, cmd.Env = h.Work, h.feEnviron()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cancel()
		<-exited
		if t.Failed() {
			t.Logf("airlock stderr:\n%s", stderr.String())
		}
	})
	url := "http://" + addr + "/mcp"
	var session string
	post := func(t *testing.T, msg string) []byte {
		for i := 0; ; i++ {
			req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(msg))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+token)
			if session != "" {
				req.Header.Set("Mcp-Session-Id", session)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				select {
				case <-exited:
					return nil // airlock ended: the caller sees no answer
				default:
				}
				if i < 100 && ctx.Err() == nil {
					time.Sleep(50 * time.Millisecond) // still starting
					continue
				}
				t.Fatalf("post: %v\nstderr: %s", err, stderr.String())
			}
			defer resp.Body.Close()
			if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
				session = s
			}
			body, _ := io.ReadAll(resp.Body)
			return sseData(body)
		}
	}
	if post(t, feInitialize) != nil {
		post(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	return &rpcClient{send: post}
}

// sseData is the JSON of an answer sent as a server-sent event, or the
// body itself when it is plain JSON.
func sseData(body []byte) []byte {
	for _, line := range bytes.Split(body, []byte("\n")) {
		if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok && bytes.Contains(d, []byte(`"id"`)) {
			return d
		}
	}
	return bytes.TrimSpace(body)
}
