package mediator

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/policy"
	"github.com/airlock-run/airlock/sandbox"
)

// TestSessionWorkdirScratch: an `mcp serve` session whose working
// directory is one of a warm box's scratch directories (/var/tmp, the
// host's tree bound over the box's tmpfs) runs its calls warm in one box:
// each sees the host's directory as a box of its own would, including a
// file the host made after the box began, which the box's reset leaves
// alone; what a call left in the box's own scratch (/tmp, HOME) is gone
// for the next.
func TestSessionWorkdirScratch(t *testing.T) {
	testsupport.Require(t, testsupport.Root)
	if r := sandbox.Probe(); r.Tier() < sandbox.Tier1 {
		testsupport.Missing(t, "tier 1 unavailable here: %s", r.Why)
	}
	p, err := policy.Parse("test.yaml", []byte("shell: {allow: [sh, ls, test, echo, mktemp]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	w := policy.World{Workdir: "/var/tmp", Home: "/home/someone", PATH: strings.Split(BoxPATH, ":"), LookPath: exec.LookPath}
	k, err := New(p, w, Options{Tier: sandbox.Tier1, Exe: testsupport.AirlockBin(t), Environ: []string{"PATH=" + BoxPATH}})
	if err != nil {
		t.Fatal(err)
	}
	s := k.NewSession(time.Minute)
	t.Cleanup(s.Close)
	ctx := s.Bind(context.Background())
	exec := func(command string) (string, []string) {
		t.Helper()
		var b strings.Builder
		res, err := k.Exec(ctx, Call{Kind: KindShell, Command: command}, ExecOptions{Stdout: &b, Stderr: &b})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%q: exit %d, %v, output %q", command, res.ExitCode, err, b.String())
		}
		return b.String(), res.Description.Notes
	}
	// mktemp writes on its own: the shell reader sees no write to refuse
	// in observe mode, and the box's /tmp and HOME are its own tmpfs.
	first, _ := exec("mktemp; mktemp -p $HOME")
	left := strings.Fields(first)
	if len(left) != 2 {
		t.Fatalf("the first call left %q, want two files, so this test shows nothing", first)
	}
	host, err := os.CreateTemp("/var/tmp", "airlock-session-host-")
	if err != nil {
		t.Fatal(err)
	}
	host.Close()
	t.Cleanup(func() { os.Remove(host.Name()) })
	for call := 2; call <= 3; call++ {
		out, notes := exec("ls -A /tmp $HOME; test -e " + host.Name() + " && echo host-file")
		seen := false
		for _, f := range left {
			seen = seen || strings.Contains(out, filepath.Base(f))
		}
		if !strings.Contains(out, "host-file") || seen {
			t.Errorf("call %d: saw %q, want the host's file and nothing the first call left", call, out)
		}
		if want := fmt.Sprintf("warm box: call %d of this box", call); notes[len(notes)-1] != want {
			t.Errorf("call %d: notes end %q, want %q", call, notes[len(notes)-1], want)
		}
	}
	s.Close()
	if _, err := os.Stat(host.Name()); err != nil {
		t.Errorf("the box's reset touched the host's file: %v", err)
	}
}
