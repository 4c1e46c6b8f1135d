package serve

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/files"
	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/internal/wiring"
	"github.com/airlock-run/airlock/mcp"
	"github.com/airlock-run/airlock/offload"
	"github.com/airlock-run/airlock/sandbox"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// airlockBin is the airlock binary: $AIRLOCK_BIN, or one built from this
// checkout once per test run (testsupport.AirlockBin). The box's init is
// this binary.
func airlockBin(t testing.TB) string {
	return testsupport.AirlockBin(t)
}

// requireBox skips (fails under CI) when the host gives no tier-1 box.
func requireBox(t testing.TB) {
	t.Helper()
	if tier := sandbox.Probe().Tier(); tier < sandbox.Tier1 {
		testsupport.Missing(t, "no tier-1 sandbox on this host (tier %d): run `airlock sandbox check`", tier)
	}
}

// fixture is one server with its own working directory, state and store,
// connected to a real SDK client over in-memory transports.
type fixture struct {
	t       testing.TB
	root    string
	Work    string
	Outside string // a directory the policy does not grant
	srv     *Server
	cs      *sdk.ClientSession
}

// fixtureConfig is what a fixture builds its kernel and server from.
type fixtureConfig struct {
	kernel wiring.Config
	serve  Options
}

// newFixture starts a server under policyYAML (written as airlock.yaml in
// the working directory) in mode; setup, when set, prepares the working
// directory first; tweak adjusts the kernel's and the server's
// configuration before they are built.
func newFixture(t testing.TB, policyYAML, mode string, setup func(work string), tweak func(*fixtureConfig), copts ...*sdk.ClientOptions) *fixture {
	t.Helper()
	requireBox(t)
	root := t.TempDir()
	f := &fixture{t: t, root: root, Work: filepath.Join(root, "work"), Outside: filepath.Join(root, "outside")}
	for _, d := range []string{f.Work, f.Outside, filepath.Join(root, "run"), filepath.Join(root, "home")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if policyYAML != "" {
		f.write("airlock.yaml", policyYAML)
	}
	if setup != nil {
		setup(f.Work)
	}
	env := map[string]string{
		"HOME":            filepath.Join(root, "home"),
		"XDG_STATE_HOME":  filepath.Join(root, "state"),
		"XDG_CONFIG_HOME": filepath.Join(root, "config"),
		"XDG_RUNTIME_DIR": filepath.Join(root, "run"),
	}
	st, err := files.Open(filepath.Join(root, "files"), files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := fixtureConfig{kernel: wiring.Config{Workdir: f.Work, Dir: f.Work, Mode: mode,
		Getenv: func(k string) string { return env[k] }, AuditFile: filepath.Join(root, "audit.jsonl"),
		GrantsFile: filepath.Join(root, "grants.json"), Tier: sandbox.Tier1, Exe: airlockBin(t),
		Offloader: &offload.Offloader{Store: st, Threshold: offload.DefaultThreshold},
		Scope:     files.Scope{Tenant: "local", Tree: "test"}}}
	if tweak != nil {
		tweak(&cfg)
	}
	k, err := wiring.Build(cfg.kernel)
	if err != nil {
		t.Fatalf("build the kernel: %v", err)
	}
	t.Cleanup(func() { k.Close() })
	cfg.serve.Kernel = k.Kernel
	srv, err := New(cfg.serve)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	ctx, cancel := context.WithCancel(context.Background())
	st1, ct := sdk.NewInMemoryTransports()
	done := make(chan struct{})
	go func() { defer close(done); srv.Run(ctx, st1) }()
	var co *sdk.ClientOptions
	if len(copts) > 0 {
		co = copts[0]
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, co).Connect(ctx, ct, nil)
	if err != nil {
		cancel()
		t.Fatalf("connect: %v", err)
	}
	f.cs = cs
	t.Cleanup(func() { cs.Close(); cancel(); <-done })
	return f
}

func (f *fixture) write(name, content string) string {
	f.t.Helper()
	p := filepath.Join(f.Work, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// call calls a tool and returns the result's text, the result and the
// protocol error.
func (f *fixture) call(name string, args map[string]any) (string, *sdk.CallToolResult, error) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := f.cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", nil, err
	}
	return resultText(res), res, nil
}

func resultText(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// denialOf reads the structured denial out of a call's error.
func denialOf(err error) (errs.Denial, bool) {
	var je *jsonrpc.Error
	if !errors.As(err, &je) {
		return errs.Denial{}, false
	}
	return mcp.Denial(je)
}

// fitMeta reads `_meta["airlock/fit"]` of a result.
func fitMeta(t *testing.T, res *sdk.CallToolResult) (m struct {
	Fit *struct {
		View                 string
		Budget, Size, Tokens int
	} `json:"fit"`
	Offloaded *offload.Offloaded `json:"offloaded"`
}, ok bool) {
	t.Helper()
	v, ok := res.Meta[mcp.MetaFit]
	if !ok {
		return m, false
	}
	b, _ := json.Marshal(v)
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("_meta %s: %v", mcp.MetaFit, err)
	}
	return m, true
}
