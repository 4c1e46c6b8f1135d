package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/mcp"
	"github.com/airlock-run/airlock/mcp/httpfront"
	"github.com/airlock-run/airlock/offload"
	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

var update = flag.Bool("update", false, "rewrite testdata/conformance.golden from this run")

// cliHome is a user's world for the airlock binary: a working directory
// and XDG directories of its own.
func cliHome(t *testing.T) (work string, environ []string) {
	root := t.TempDir()
	work = filepath.Join(root, "work")
	for _, d := range []string{work, filepath.Join(root, "run")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return work, []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + filepath.Join(root, "home"),
		"XDG_STATE_HOME=" + filepath.Join(root, "state"),
		"XDG_CONFIG_HOME=" + filepath.Join(root, "config"),
		"XDG_DATA_HOME=" + filepath.Join(root, "data"),
		"XDG_RUNTIME_DIR=" + filepath.Join(root, "run"),
	}
}

// TestServeStdio runs `airlock mcp serve` as an MCP client starts it: a
// child process speaking on its standard input and output.
func TestServeStdio(t *testing.T) {
	requireBox(t)
	bin := airlockBin(t)
	work, environ := cliHome(t)
	os.WriteFile(filepath.Join(work, "airlock.yaml"), []byte(testPolicy), 0o644)
	os.WriteFile(filepath.Join(work, "notes.md"), []byte(bigDoc()), 0o644)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.Command(bin, "mcp", "serve", "--workdir", work)
	cmd.Env = environ
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		schema, _ := json.Marshal(tl.InputSchema)
		if !mcp.FitConvention(schema) {
			t.Errorf("tool %s: schema %s does not follow the fit convention", tl.Name, schema)
		}
	}
	sort.Strings(names)
	if diff := cmp.Diff([]string{"exec", "list_dir", "read_file", "read_result", "search", "write_file"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}

	call := func(name string, args map[string]any) (string, *sdk.CallToolResult, error) {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			return "", nil, err
		}
		return resultText(res), res, nil
	}
	if text, _, err := call("exec", map[string]any{"argv": []string{"echo", "from", "the", "box"}}); err != nil || !strings.Contains(text, "from the box\n") {
		t.Errorf("exec: got %q, %v", text, err)
	}
	if _, _, err := call("exec", map[string]any{"argv": []string{"curl", "http://127.0.0.1:9/"}}); !isDenial(err, errs.CodePolicyDenied) {
		t.Errorf("exec curl: got %v, want POLICY_DENIED", err)
	}
	if _, _, err := call("exec", map[string]any{"argv": []string{"echo", "please-ask", "first"}}); !isDenial(err, errs.CodeEscalationTimeout) {
		t.Errorf("exec echo please-ask: got %v, want ESCALATION_TIMEOUT (nobody answers the approvals broker)", err)
	}
	if _, _, err := call("write_file", map[string]any{"path": "x", "content": "x"}); !isDenial(err, errs.CodePolicyDenied) {
		t.Errorf("write_file in observe mode: got %v, want POLICY_DENIED", err)
	}
	if _, _, err := call("no_such_tool", nil); err == nil || isDenial(err, errs.CodePolicyDenied) {
		t.Errorf("unknown tool: got %v, want an unknown-tool error, not a denial", err)
	}

	// An offloaded result is in the user's store: `airlock read-result`
	// reads it back from a shell as read_result does.
	text, _, err := call("read_file", map[string]any{"path": "notes.md"})
	var stub offload.Stub
	if err != nil || json.Unmarshal([]byte(text), &stub) != nil || stub.Offloaded.Ref == "" {
		t.Fatalf("read_file notes.md: got %.200q, %v; want a stub", text, err)
	}
	rr := exec.Command(bin, "read-result", stub.Offloaded.Ref, "--section", "Part 5")
	rr.Env, rr.Dir = environ, work
	out, err := rr.Output()
	if err != nil || !strings.Contains(string(out), "widget 589") {
		t.Errorf("airlock read-result: got %.200q, %v", out, err)
	}
}

func isDenial(err error, code string) bool {
	d, ok := denialOf(err)
	return ok && d.Code == code
}

// TestHandlerRefusesRebinding: over HTTP, a request whose Host or Origin
// names another machine never reaches MCP (DNS rebinding); one naming
// loopback does.
func TestHandlerRefusesRebinding(t *testing.T) {
	f := newFixture(t, testPolicy, "observe", nil, nil)
	h := f.srv.Handler(t.Context(), httpfront.Options{NoAuth: true})
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	tests := []struct {
		name, host, origin string
		want               int
	}{
		{"loopback", "127.0.0.1:8931", "", http.StatusOK},
		{"localhost with a local page", "localhost:8931", "http://localhost:3000", http.StatusOK},
		{"rebound name", "evil.example:8931", "", http.StatusForbidden},
		{"foreign page", "127.0.0.1:8931", "http://evil.example", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(initialize))
			r.Host = tt.host
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", "application/json, text/event-stream")
			if tt.origin != "" {
				r.Header.Set("Origin", tt.origin)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.want {
				t.Errorf("got %d (%.200s), want %d", w.Code, w.Body.String(), tt.want)
			}
		})
	}
}

// conformanceTool finds the MCP conformance suite installed by
// scripts/setup.sh. Absent, the test skips, except in CI, where it fails.
func conformanceTool(t *testing.T) string {
	t.Helper()
	missing := func(why string) {
		testsupport.Missing(t, "MCP conformance suite: %s (run bash scripts/setup.sh)", why)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("node is not on PATH")
	}
	bin := os.Getenv("AIRLOCK_CONFORMANCE")
	if bin == "" {
		bin, _ = filepath.Abs("../../.airlock-ci/npm/node_modules/.bin/conformance")
	}
	if _, err := os.Stat(bin); err != nil {
		missing(bin + " is not installed")
	}
	return bin
}

// TestConformance runs the MCP conformance suite's server scenarios against
// `airlock mcp serve --http`. Scenarios about what airlock's server does not
// offer (the suite's own test tools, resources, prompts, completions) fail;
// testdata/conformance.golden says which and why, and any other outcome
// fails the test.
func TestConformance(t *testing.T) {
	suite := conformanceTool(t)
	bin := airlockBin(t)
	work, environ := cliHome(t)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The suite sends no token and opens a session per scenario.
	url, _ := startHTTP(t, ctx, bin, work, environ, "--no-auth",
		"--max-sessions", "100", "--max-client-sessions", "100", "--max-boxes", "100", "--max-client-boxes", "100")

	out := t.TempDir()
	run := exec.CommandContext(ctx, suite, "server", "--url", url, "-o", out)
	run.Env = append(os.Environ(), "NO_COLOR=1")
	log, _ := run.CombinedOutput() // it exits non-zero when any scenario fails
	got, err := readOutcomes(out)
	if err != nil || len(got) == 0 {
		t.Fatalf("no scenario outcomes in %s (%v); suite output:\n%s", out, err, log)
	}

	golden := filepath.Join("testdata", "conformance.golden")
	want, why := readGolden(t, golden)
	if *update {
		writeGolden(t, golden, got, why)
		return
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("conformance outcomes (-golden +got); a scenario that should pass failed, or the golden is stale (-update):\n%s\nsuite output:\n%s", diff, log)
	}
}

// startHTTP starts `airlock mcp serve --http 127.0.0.1:0` with flags and
// returns the URL it says it serves and the token it printed ("" when it
// printed none); the server ends with the test.
func startHTTP(t *testing.T, ctx context.Context, bin, work string, environ []string, flags ...string) (url, token string) {
	t.Helper()
	srv := exec.CommandContext(ctx, bin, append([]string{"mcp", "serve", "--workdir", work, "--http", "127.0.0.1:0"}, flags...)...)
	srv.Env = environ
	stderr, err := srv.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Signal(os.Interrupt); srv.Wait() })
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := regexp.MustCompile(`^airlock: mcp serve: token: ([0-9a-f]+)$`).FindStringSubmatch(sc.Text()); m != nil {
			token = m[1]
		}
		if m := regexp.MustCompile(`serving MCP on (http://127\.0\.0\.1:\d+/mcp)`).FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
			break
		}
		t.Logf("airlock: %s", sc.Text())
	}
	if url == "" {
		t.Fatal("airlock mcp serve --http did not say where it serves")
	}
	go func() {
		for sc.Scan() {
		}
	}()
	return url, token
}

// bearer is an HTTP client that sends token with every request.
func bearer(token string) *http.Client {
	return &http.Client{Transport: bearerTransport(token)}
}

type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// TestServeHTTP: the Go SDK's client over streamable HTTP against
// `airlock mcp serve --http`.
func TestServeHTTP(t *testing.T) {
	requireBox(t)
	bin := airlockBin(t)
	work, environ := cliHome(t)
	os.WriteFile(filepath.Join(work, "airlock.yaml"), []byte(testPolicy), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url, token := startHTTP(t, ctx, bin, work, environ)
	if token == "" {
		t.Fatal("airlock mcp serve --http printed no token")
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: url, HTTPClient: bearer(token)}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "exec", Arguments: map[string]any{"argv": []string{"echo", "over", "http"}}})
	if err != nil || !strings.Contains(resultText(res), "over http\n") {
		t.Errorf("exec over HTTP: got %v, %v", res, err)
	}
	_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "/root/.bash_history"}})
	if !isDenial(err, errs.CodePolicyDenied) {
		t.Errorf("read_file outside over HTTP: got %v, want POLICY_DENIED", err)
	}
}

// readOutcomes reads each scenario's checks.json under dir: a scenario
// passes when none of its checks failed.
func readOutcomes(dir string) (map[string]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	stamp := regexp.MustCompile(`-\d{4}-\d\d-\d\dT[\d-]+Z$`)
	got := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			return nil, err
		}
		var checks []struct{ Status string }
		if err := json.Unmarshal(b, &checks); err != nil {
			return nil, err
		}
		name := stamp.ReplaceAllString(strings.TrimPrefix(e.Name(), "server-"), "")
		got[name] = "pass"
		for _, c := range checks {
			if c.Status == "FAILURE" {
				got[name] = "fail"
			}
		}
		if len(checks) == 0 {
			got[name] = "fail"
		}
	}
	return got, nil
}

// The golden file: one scenario a line, "name<TAB>pass|fail<TAB>why".
func readGolden(t *testing.T, path string) (map[string]string, map[string]string) {
	b, err := os.ReadFile(path)
	if err != nil && !*update {
		t.Fatal(err)
	}
	want, why := map[string]string{}, map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.SplitN(line, "\t", 3)
		if len(f) < 2 {
			t.Fatalf("%s: bad line %q", path, line)
		}
		want[f[0]] = f[1]
		if len(f) == 3 {
			why[f[0]] = f[2]
		}
	}
	return want, why
}

func writeGolden(t *testing.T, path string, got, why map[string]string) {
	names := make([]string, 0, len(got))
	for n := range got {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("# MCP conformance suite 0.1.12, server scenarios, against `airlock mcp serve --http`.\n")
	b.WriteString("# scenario<TAB>pass|fail<TAB>why. Rewrite with: go test ./mcp/serve -run TestConformance -update\n")
	for _, n := range names {
		w := why[n]
		if w == "" {
			w = "?"
		}
		b.WriteString(n + "\t" + got[n] + "\t" + w + "\n")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
