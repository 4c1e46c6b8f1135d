package serve

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/mediator"
)

const secret = "TOP-SECRET-8d1f\n"

// TestSymlinkEscape: a link in the working directory pointing at a file the
// policy does not grant. A naive server (join the path, read it) hands the
// secret over; airlock decides on the resolved path and refuses.
func TestSymlinkEscape(t *testing.T) {
	f := newFixture(t, testPolicy, "fix", nil, nil)
	secretFile := filepath.Join(f.Outside, "secret")
	os.WriteFile(secretFile, []byte(secret), 0o600)
	os.Symlink(secretFile, filepath.Join(f.Work, "link"))
	os.Symlink(f.Outside, filepath.Join(f.Work, "linkdir"))

	// The attack works against a naive implementation.
	if b, err := os.ReadFile(filepath.Join(f.Work, "link")); err != nil || string(b) != secret {
		t.Fatalf("naive read: got %q, %v; the attack should work unconfined", b, err)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"read_file", map[string]any{"path": "link"}},
		{"read_file", map[string]any{"path": "linkdir/secret"}},
		{"list_dir", map[string]any{"path": "linkdir"}},
		{"search", map[string]any{"pattern": "SECRET", "path": "linkdir"}},
		{"write_file", map[string]any{"path": "linkdir/planted", "content": "x"}},
		{"write_file", map[string]any{"path": "link", "content": "overwritten"}},
	} {
		t.Run(c.tool+" "+c.args["path"].(string), func(t *testing.T) {
			text, _, err := f.call(c.tool, c.args)
			if d, ok := denialOf(err); !ok || d.Code != errs.CodePolicyDenied || d.Category != "fs" {
				t.Errorf("got %q, %v; want a POLICY_DENIED fs denial", text, err)
			}
		})
	}
	// Searching the working directory does not follow the link out.
	if text, _, err := f.call("search", map[string]any{"pattern": "SECRET"}); err != nil || strings.Contains(text, "TOP-SECRET") {
		t.Errorf("search of the working directory: got %q, %v; want no secret", text, err)
	}
	if b, _ := os.ReadFile(secretFile); string(b) != secret {
		t.Errorf("the secret was changed to %q", b)
	}
	if _, err := os.Lstat(filepath.Join(f.Outside, "planted")); err == nil {
		t.Error("a file was planted outside the working directory")
	}
}

// TestSymlinkRace swaps a decided path for a link between the decision and
// the access (what a command running at the same time could do). A naive
// server that decides and then opens in its own, unconfined process follows
// the link; airlock's file tools run in the box, where the link's target
// does not exist.
func TestSymlinkRace(t *testing.T) {
	var f *fixture
	swap := map[string]func(){}
	f = newFixture(t, testPolicy, "fix", func(work string) {
		os.WriteFile(filepath.Join(work, "x"), []byte("harmless\n"), 0o644)
		os.MkdirAll(filepath.Join(work, "d"), 0o755)
	}, func(c *fixtureConfig) {
		c.kernel.AfterDecide = func(call mediator.Call) {
			if fn := swap[call.Path]; fn != nil {
				fn()
			}
		}
	})
	secretFile := filepath.Join(f.Outside, "secret")
	os.WriteFile(secretFile, []byte(secret), 0o600)
	x, d := filepath.Join(f.Work, "x"), filepath.Join(f.Work, "d")
	swapX := func() { os.Remove(x); os.Symlink(secretFile, x) }
	swapD := func() { os.RemoveAll(d); os.Symlink(f.Outside, d) }
	restore := func() {
		os.Remove(x)
		os.WriteFile(x, []byte("harmless\n"), 0o644)
		os.Remove(d)
		os.MkdirAll(d, 0o755)
	}

	// The attack works against a naive decide-then-open server.
	ctx := context.Background()
	if _, err := f.srv.o.Kernel.Decide(ctx, mediator.Call{Kind: mediator.KindRead, Path: x}); err != nil {
		t.Fatalf("decide %s: %v", x, err)
	}
	swapX()
	if b, err := os.ReadFile(x); err != nil || string(b) != secret {
		t.Fatalf("naive read after the swap: got %q, %v; the attack should work unconfined", b, err)
	}
	planted := filepath.Join(d, "planted")
	restore()
	if _, err := f.srv.o.Kernel.Decide(ctx, mediator.Call{Kind: mediator.KindWrite, Path: planted}); err != nil {
		t.Fatalf("decide %s: %v", planted, err)
	}
	swapD()
	if err := os.WriteFile(planted, []byte("x"), 0o644); err != nil {
		t.Fatalf("naive write after the swap: %v; the attack should work unconfined", err)
	}
	if _, err := os.Stat(filepath.Join(f.Outside, "planted")); err != nil {
		t.Fatalf("naive write did not land outside: %v", err)
	}
	os.Remove(filepath.Join(f.Outside, "planted"))

	// The same swaps against airlock.
	restore()
	swap[x] = swapX
	text, _, err := f.call("read_file", map[string]any{"path": "x"})
	if err != nil || strings.Contains(text, "TOP-SECRET") {
		t.Errorf("read_file after the swap: got %q, %v; want no secret", text, err)
	}
	restore()
	swap[planted] = swapD
	text, _, err = f.call("write_file", map[string]any{"path": "d/planted", "content": "x"})
	if _, serr := os.Lstat(filepath.Join(f.Outside, "planted")); serr == nil {
		t.Errorf("write_file after the swap planted a file outside (%q, %v)", text, err)
	}
	restore()
	swap[d] = swapD
	text, _, err = f.call("list_dir", map[string]any{"path": "d"})
	if err != nil || strings.Contains(text, "secret") {
		t.Errorf("list_dir after the swap: got %q, %v; want the outside directory unseen", text, err)
	}
}
