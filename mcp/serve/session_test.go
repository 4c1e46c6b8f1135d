package serve

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/sandbox"
)

// TestSessionWarmBoxes: the exec calls of one MCP session share the
// session's warm box, and no process of one call is there for the next;
// the box ends with the session. (What else a call leaves is the runner's
// TestWarmIsolation.)
func TestSessionWarmBoxes(t *testing.T) {
	f := newFixture(t, testPolicy, "observe", setupWork, nil)
	text, res, err := f.call("exec", map[string]any{"command": "sleep 1000 & echo started"})
	if err != nil || res.IsError || !strings.Contains(text, "started") {
		t.Fatalf("first call: %q %v", text, err)
	}
	if n := f.srv.openSessions(); n != 1 {
		t.Fatalf("got %d kernel sessions, want 1 for the MCP session", n)
	}
	inits := serveInits()
	if len(inits) != 1 {
		t.Fatalf("got warm box inits %v, want one", inits)
	}
	// The call's answer comes once every process of it has ended.
	if left := sleepers(); len(left) > 0 {
		t.Errorf("the first call's background process outlived it: %v", left)
	}
	text, _, err = f.call("exec", map[string]any{"command": "cat /proc/[0-9]*/comm"})
	if err != nil || strings.Contains(text, "sleep") || !strings.Contains(text, "sh") {
		t.Errorf("the second call saw the first call's process: %q %v", text, err)
	}
	if again := serveInits(); len(again) != 1 || again[0] != inits[0] {
		t.Errorf("the second call did not run in the session's box (inits %v, then %v)", inits, again)
	}
	f.cs.Close()
	for end := time.Now().Add(30 * time.Second); len(serveInits()) > 0 && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	if left := serveInits(); len(left) > 0 {
		t.Errorf("the session's box outlived the session: %v", left)
	}
	if n := f.srv.openSessions(); n != 0 {
		t.Errorf("got %d kernel sessions after the MCP session ended, want 0", n)
	}
}

// TestFreshBoxes: with FreshBoxes set no call runs in a warm box.
func TestFreshBoxes(t *testing.T) {
	f := newFixture(t, testPolicy, "observe", setupWork, func(c *fixtureConfig) { c.serve.FreshBoxes = true })
	if _, _, err := f.call("exec", map[string]any{"argv": []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	if n, inits := f.srv.openSessions(), serveInits(); n != 0 || len(inits) != 0 {
		t.Errorf("got %d sessions and warm inits %v, want none", n, inits)
	}
}

// sleepers are this test process's descendants running `sleep 1000`.
func sleepers() []int {
	return descendants(func(cmdline string) bool { return cmdline == "sleep\x001000\x00" })
}

// serveInits are the warm boxes' inits this test process started.
func serveInits() []int {
	// Not bubblewrap, whose command line holds the init's.
	return descendants(func(cmdline string) bool {
		return strings.HasPrefix(cmdline, sandbox.InitPath+"\x00") && strings.Contains(cmdline, "--serve-fd")
	})
}

// descendants are the processes below this test process whose command
// line match accepts.
func descendants(match func(cmdline string) bool) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if !match(string(b)) {
			continue
		}
		for p := parentOf(pid); p > 1; p = parentOf(p) {
			if p == os.Getpid() {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

func parentOf(pid int) int {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		if f := strings.Fields(s[i+1:]); len(f) > 1 {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}
