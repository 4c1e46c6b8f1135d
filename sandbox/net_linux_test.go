package sandbox

import (
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/sandbox/boxconf"
)

// connectScript runs what a box without an init finds at the proxy
// command's name, prints the file it names, and tries to put another in
// its place: writing through it, removing it, linking another program
// there, renaming something over it.
const connectScript = `
F=` + boxConnPath + `
"$F" 2>&1 </dev/null; echo "exit=$?"
stat -L -c %D:%i "$F"
( echo x > "$F" ) 2>/dev/null && echo WROTE
rm -f "$F" 2>/dev/null && echo REMOVED
ln -sf /bin/sh "$F" 2>/dev/null && echo RELINKED
ln -s /bin/sh /tmp/x 2>/dev/null && mv -f /tmp/x "$F" 2>/dev/null && echo RENAMED
stat -L -c %D:%i "$F"
echo done
`

// TestConnectName: in a box with network and no init, the name git runs
// as its proxy command is the in-box code (a link to the pinned binary at
// InitPath, no second bind of it), which answers as airlock-connect, also
// under an exec wall that lists git (the wall lets the name run), and the
// box can neither change that file through the name nor put another file
// there: the write wall leaves /run out.
func TestConnectName(t *testing.T) {
	needTier1(t)
	if !netDirect() {
		t.Skip("no Landlock: a box with network has an init here")
	}
	if _, err := exec.LookPath("git"); err != nil {
		testsupport.MissingPart(t, "git, whose proxy command this is: %v", err)
	}
	sock := filepath.Join(t.TempDir(), "egress.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	exe := airlockIn(t, t.TempDir())
	tests := []struct {
		name string
		exec *ExecSpec
	}{
		{"no exec wall", nil},
		{"exec wall listing git", &ExecSpec{Programs: []string{"sh", "stat", "rm", "ln", "mv", "git"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := Spec{Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}, Exec: tc.exec,
				Net: &NetSpec{ProxySocket: sock, Token: "t"}}
			connectNameHolds(t, spec, exe)
		})
	}
}

// connectNameHolds runs connectScript in a box of spec and checks what it
// found at the proxy command's name.
func connectNameHolds(t *testing.T, spec Spec, exe string) {
	t.Helper()
	box, err := Plan(spec, Tier1, exe)
	if err != nil {
		t.Fatal(err)
	}
	if !box.Direct() || box.NetHost() == nil {
		box.Close()
		t.Fatalf("the box has an init (%q); the test wants the exec step's", box.Notes)
	}
	if n := strings.Count(strings.Join(box.options, "\x00"), "\x00"+boxConnPath); n != 1 {
		t.Errorf("the options name %s %d times, want once (its link)", boxConnPath, n)
	}
	// The host's word, written before bubblewrap starts, as the runner's.
	if _, err := box.NetHost().Write([]byte{boxconf.ListenPlain}); err != nil {
		t.Fatal(err)
	}
	o := runBox(t, box, []string{"/bin/sh", "-c", connectScript})
	id := fileID(t, box.initBin)
	lines := strings.Split(strings.TrimSpace(o.out), "\n")
	if o.code != 0 || len(lines) < 4 || lines[len(lines)-1] != "done" {
		t.Fatalf("got exit %d and %q", o.code, o.out)
	}
	for _, w := range []string{"WROTE", "REMOVED", "RELINKED", "RENAMED"} {
		if strings.Contains(o.out, w) {
			t.Errorf("the box changed its proxy command (%s): %q", w, o.out)
		}
	}
	if got := lines[len(lines)-2]; got != id {
		t.Errorf("the name leads to %s after the box's tries, want the in-box code %s: %q", got, id, o.out)
	}
	if !strings.Contains(o.out, "\n"+id+"\n") {
		t.Errorf("the name does not lead to the in-box code %s: %q", id, o.out)
	}
	// Run with no HOST PORT, the connect mode says how it is used (exit
	// 2): the in-box code answered to the name.
	if !strings.Contains(o.out, "exit=2") {
		t.Errorf("the name did not run the connect mode: %q", o.out)
	}
}
