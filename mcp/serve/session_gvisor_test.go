package serve

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/sandbox"
	"github.com/airlock-run/airlock/sandbox/boxconf"
)

// TestSessionWarmBoxesTier2: `mcp serve --sandbox 2` runs the exec calls
// of one MCP session in one warm gVisor box, with no process of one call
// there for the next (what else a call leaves is the runner's
// TestWarmGVisorIsolation), and the box ends with the session.
func TestSessionWarmBoxesTier2(t *testing.T) {
	testsupport.Require(t, testsupport.Root)
	if _, err := sandbox.Resolve(sandbox.Tier2, sandbox.ProbeHost()); err != nil {
		testsupport.Missing(t, "tier 2 unavailable here: %v", err)
	}
	f := newFixture(t, testPolicy, "observe", setupWork, func(c *fixtureConfig) { c.kernel.Tier = sandbox.Tier2 })
	text, res, err := f.call("exec", map[string]any{"command": "sleep 1000 & echo started"})
	if err != nil || res.IsError || !strings.Contains(text, "started") {
		t.Fatalf("first call: %q %v", text, err)
	}
	boxes := warmGVisorBoxes()
	if len(boxes) != 1 {
		t.Fatalf("got warm tier-2 boxes %v, want one for the MCP session", boxes)
	}
	text, _, err = f.call("exec", map[string]any{"command": "cat /proc/[0-9]*/comm"})
	if err != nil || strings.Contains(text, "sleep") || !strings.Contains(text, "sh\n") {
		t.Errorf("the second call saw what the first left: %q %v", text, err)
	}
	if again := warmGVisorBoxes(); len(again) != 1 || again[0] != boxes[0] {
		t.Errorf("the second call did not run in the session's box (boxes %v, then %v)", boxes, again)
	}
	f.cs.Close()
	for end := time.Now().Add(30 * time.Second); len(warmGVisorBoxes()) > 0 && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	if left := warmGVisorBoxes(); len(left) > 0 {
		t.Errorf("the session's box outlived the session: %v", left)
	}
}

// TestServeStdioTier2: `airlock mcp serve --sandbox 2`, started as an MCP
// client starts it, runs its exec calls in one warm gVisor box.
func TestServeStdioTier2(t *testing.T) {
	testsupport.Require(t, testsupport.Root)
	if _, err := sandbox.Resolve(sandbox.Tier2, sandbox.ProbeHost()); err != nil {
		testsupport.Missing(t, "tier 2 unavailable here: %v", err)
	}
	bin := airlockBin(t)
	work, environ := cliHome(t)
	os.WriteFile(filepath.Join(work, "airlock.yaml"), []byte(testPolicy), 0o644)
	var runDir string
	for _, e := range environ {
		if v, ok := strings.CutPrefix(e, "XDG_RUNTIME_DIR="); ok {
			runDir = v
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.Command(bin, "mcp", "serve", "--sandbox", "2", "--workdir", work)
	cmd.Env = append(environ, "PATH="+os.Getenv("PATH")) // runsc is found on it
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	var boxes [][]string
	for i, command := range []string{"sleep 1000 & echo started", "cat /proc/[0-9]*/comm"} {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "exec", Arguments: map[string]any{"command": command}})
		if err != nil || res.IsError {
			t.Fatalf("call %d: %v %q", i+1, err, resultText(res))
		}
		if text := resultText(res); i == 1 && (strings.Contains(text, "sleep") || !strings.Contains(text, "sh\n")) {
			t.Errorf("the second call saw the first call's process: %q", text)
		}
		boxes = append(boxes, warmGVisorBoxesIn(filepath.Join(runDir, "airlock", "gvisor"), cmd.Process.Pid))
	}
	if len(boxes[0]) != 1 || len(boxes[1]) != 1 || boxes[0][0] != boxes[1][0] {
		t.Errorf("the calls did not share one warm tier-2 box: %v", boxes)
	}
}

// warmGVisorBoxes are the directories of this process's running tier-2
// boxes whose init serves calls (a warm box's bundle names --serve-fd).
func warmGVisorBoxes() []string { return warmGVisorBoxesIn(sandbox.GVisorBoxesDir(), os.Getpid()) }

// warmGVisorBoxesIn are those in base that the airlock process pid
// started.
func warmGVisorBoxesIn(base string, pid int) []string {
	ents, _ := os.ReadDir(base)
	var out []string
	for _, e := range ents {
		dir := filepath.Join(base, e.Name())
		r, err := sandbox.ReadGVisorRecord(dir)
		if err != nil || r.Pid != pid {
			continue
		}
		if cfg, _ := os.ReadFile(filepath.Join(dir, "bundle", "config.json")); strings.Contains(string(cfg), boxconf.FlagServe) {
			out = append(out, dir)
		}
	}
	return out
}
