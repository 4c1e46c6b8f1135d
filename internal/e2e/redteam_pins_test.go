package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWrapPinsArePrivate: the pins of `airlock mcp wrap` are airlock's own
// file, which decides whether a changed tool definition needs a person.
// Under a policy whose fs.write reaches the pins directory, the wrapped
// server (in its box) could write the pins of the definitions it is about
// to change to, and no person would ever be asked: such a policy is
// refused, as for the audit log and the grants.
func TestWrapPinsArePrivate(t *testing.T) {
	requireRoot(t)
	requireBwrap(t)
	h := newHome(t)
	h.write("airlock.yaml", "fs: {read: [.], write: [.]}\n")
	planted := filepath.Join(h.Work, "pins", "planted")
	r := h.run("mcp", "wrap", "--mode", "fix", "--pins", "pins", "--",
		"sh", "-c", "mkdir -p pins && echo '{\"tools\":{}}' > pins/planted; sleep 1")
	// The server may have been started after airlock read its input's end.
	deadline := time.Now().Add(3 * time.Second)
	for !exists(planted) && time.Now().Before(deadline) && r.Code == 0 {
		time.Sleep(100 * time.Millisecond)
	}
	if exists(planted) {
		t.Fatalf("the wrapped server wrote into the pins directory: %+v", r)
	}
	if r.Code != 125 || !strings.Contains(r.Stderr, "airlock's own") {
		t.Errorf("got %+v; want exit 125 naming airlock's own pins", r)
	}
	os.RemoveAll(filepath.Join(h.Work, "pins"))

	// In observe mode the wrapped server writes nothing, but another run
	// of the same policy in fix mode does not know where these pins are
	// and may write them: the pins may not lie where the policy lets any
	// box write, in any mode.
	if r := h.run("run", "--mode", "fix", "--", "sh", "-c", "mkdir -p pins && echo x > pins/planted"); r.Code != 0 || !exists(planted) {
		t.Fatalf("a fix-mode run could not write the pins directory (so this case shows nothing): %+v", r)
	}
	r = h.run("mcp", "wrap", "--pins", "pins", "--", "sh", "-c", "true")
	if r.Code != 125 || !strings.Contains(r.Stderr, "airlock's own") {
		t.Errorf("observe mode: got %+v; want exit 125 naming airlock's own pins", r)
	}
}
