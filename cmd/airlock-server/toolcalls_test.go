package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/api"
)

// buildPeer builds testdata/mcppeer, a real MCP server, into dir.
func buildPeer(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "mcppeer")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/mcppeer").CombinedOutput(); err != nil {
		t.Fatalf("go build mcppeer: %v\n%s", err, out)
	}
	return bin
}

// TestFleetToolCalls runs an open job's tool calls through a real
// embedded Temporal server and a tier-1 node: the job names a real MCP
// server, its policy allows one tool and denies another, each call's
// result and trace say so (the trace never the arguments); a call to a
// tool that never answers is ended by a kill of the job, whose node tears
// the server's box and the kernel down.
func TestFleetToolCalls(t *testing.T) {
	requireTier1(t)
	f := startFleet(t, 30*time.Second)
	f.node("n1", "1")
	nodeDir := filepath.Join(f.dir, "nodes")
	peerDir := filepath.Join(f.dir, "peer")
	os.MkdirAll(peerDir, 0o755)
	peer := buildPeer(t, peerDir)
	servers := filepath.Join(f.dir, "servers.json")
	b, _ := json.Marshal(map[string][]string{"t": {peer}})
	os.WriteFile(servers, b, 0o600)
	pol := filepath.Join(f.dir, "tools.yaml")
	os.WriteFile(pol, []byte("fs:\n  read: [.,"+strconv.Quote(peerDir)+"]\nshell:\n  allow: ["+strconv.Quote(peer)+"]\ntools:\n  t.echo: true\n  t.hang: true\n  t.secret: false\n"), 0o600)
	open := func(t *testing.T) string {
		t.Helper()
		code, out, stderr := f.cli(f.tokenF, "job", "start", "--pool", "ci", "--open", "--mcp", servers, "--policy", pol)
		if code != 0 {
			t.Fatalf("job start --open --mcp: exit %d, %s", code, stderr)
		}
		return strings.TrimSpace(out)
	}

	t.Run("one tool allowed, one denied, both in the trace", func(t *testing.T) {
		id := open(t)
		code, out, stderr := f.cli(f.tokenF, "job", "call", id, "--tool", "t/echo", "--args", `{"message":"hi there"}`)
		if code != 0 || strings.TrimSpace(out) != "echo: hi there" {
			t.Fatalf("allowed tool: exit %d, %q %q", code, out, stderr)
		}
		code, out, stderr = f.cli(f.tokenF, "job", "call", id, "--tool", "t/secret")
		if code == 0 || strings.Contains(out+stderr, "the secret") || !strings.Contains(stderr, "t.secret") {
			t.Fatalf("denied tool: exit %d, %q %q", code, out, stderr)
		}
		tr := f.trace(id)
		if len(tr.Calls) != 2 || tr.LowestTier != 1 {
			t.Fatalf("trace: %+v", tr)
		}
		if c := tr.Calls[0]; c.Call != "t/echo (args 22 bytes)" || c.Verdict != "allow" || c.Tier != 1 || c.Node != "n1" {
			t.Errorf("trace of the allowed call: %+v", c)
		}
		if c := tr.Calls[1]; c.Verdict != "deny" || !c.Refused || !strings.Contains(c.Rule, "t.secret") {
			t.Errorf("trace of the denied call: %+v", c)
		}
		code, out, stderr = f.cli(f.tokenF, "job", "trace", "--", id)
		t.Logf("airlock job trace %s:\n%s", id, out)
		if code != 0 || strings.Contains(out, "hi there") || !strings.Contains(out, "t/secret") {
			t.Errorf("job trace: exit %d, %q %q", code, out, stderr)
		}
		if code, _, stderr := f.cli(f.tokenF, "job", "release", "--", id); code != 0 {
			t.Fatalf("job release: exit %d, %s", code, stderr)
		}
		var v api.JobView
		f.get("/v1/jobs/"+id+"?wait=1", &v)
		if v.State != "completed" {
			t.Fatalf("released job: %+v", v)
		}
		f.noHostPath(t, nodeDir, v, f.trace(id))
	})

	t.Run("a tool that never answers is ended by a kill", func(t *testing.T) {
		id := open(t)
		var acc map[string]any
		if code := f.post("/v1/jobs/"+id+"/calls?wait=1s", `{"kind":"tool","server":"t","tool":"hang"}`, &acc); code != 202 {
			t.Fatalf("a call that hangs: %d %v, want 202", code, acc)
		}
		mark := filepath.Join(nodeDir, "n1", "jobs", id, "running")
		if _, err := os.Stat(mark); err != nil {
			t.Fatalf("the job holds no kernel on its node: %v", err)
		}
		f.killClosing(t, id, mark)
		waitFor(t, "the server's box to be gone", func() bool {
			out, _ := exec.Command("pgrep", "-f", peer).Output()
			return len(strings.TrimSpace(string(out))) == 0
		})
	})

	// A box given the pins' directory (its policy writes ~/mcp-pins) plants
	// a link where the node writes a second server's pins: the node (root)
	// must never write through it. The box does not see a directory made
	// after its kernel was built, and the pins' writer never follows a
	// link (mcp/gateway's TestPinsNeverFollowALink).
	t.Run("a box cannot point the node's pin writes at a host file", func(t *testing.T) {
		victim := filepath.Join(f.dir, "victim.txt")
		os.WriteFile(victim, []byte("the node's own\n"), 0o600)
		argvU := []string{peer, "second"}
		b, _ := json.Marshal(map[string][]string{"t": {peer}, "u": argvU})
		two := filepath.Join(f.dir, "two.json")
		os.WriteFile(two, b, 0o600)
		pinsPol := filepath.Join(f.dir, "pins.yaml")
		os.WriteFile(pinsPol, []byte("fs:\n  read: [.,"+strconv.Quote(peerDir)+"]\n  write: [., \"~/mcp-pins\"]\nshell:\n  allow: [ln, "+strconv.Quote(peer)+"]\ntools:\n  \"*\": true\n"), 0o600)
		code, out, stderr := f.cli(f.tokenF, "job", "start", "--pool", "ci", "--open", "--mcp", two, "--policy", pinsPol)
		if code != 0 {
			// Refusing a policy that lets a box write the node's pins
			// closes the attack too.
			if strings.Contains(stderr, "mcp-pins") {
				return
			}
			t.Fatalf("job start: exit %d, %s", code, stderr)
		}
		id := strings.TrimSpace(out)
		defer f.cli(f.tokenF, "job", "kill", "--", id)
		code, out, stderr = f.cli(f.tokenF, "job", "call", id, "--tool", "t/echo", "--args", `{"message":"x"}`)
		if code != 0 {
			if strings.Contains(out+stderr, "mcp-pins") {
				return
			}
			t.Fatalf("first tool call: exit %d, %q %q", code, out, stderr)
		}
		sum := sha256.Sum256([]byte(strings.Join(argvU, "\x00")))
		pins := filepath.Join(nodeDir, "n1", "jobs", id, "mcp-pins", hex.EncodeToString(sum[:12])+".json")
		code, out, stderr = f.cli(f.tokenF, "job", "call", id, "--", "ln", "-s", victim, pins+".tmp")
		t.Logf("ln in the box: exit %d, %q %q", code, out, stderr)
		code, out, stderr = f.cli(f.tokenF, "job", "call", id, "--tool", "u/echo", "--args", `{"message":"y"}`)
		t.Logf("second server's call: exit %d, %q %q", code, out, stderr)
		if b, _ := os.ReadFile(victim); string(b) != "the node's own\n" {
			t.Fatalf("the node wrote its pins through the box's link into a host file:\n%s", b)
		}
	})
}

// killClosing kills job id and waits for its node to close the job's
// kernel (its running mark gone).
func (f *fleet) killClosing(t *testing.T, id, mark string) {
	t.Helper()
	if code, _, stderr := f.cli(f.tokenF, "job", "kill", "--", id); code != 0 {
		t.Fatalf("job kill: exit %d, %s", code, stderr)
	}
	var v api.JobView
	f.get("/v1/jobs/"+id+"?wait=1", &v)
	if v.State != "canceled" {
		t.Errorf("state: got %q, want canceled", v.State)
	}
	waitFor(t, "the node to close the job's kernel", func() bool {
		_, err := os.Stat(mark)
		return os.IsNotExist(err)
	})
}
