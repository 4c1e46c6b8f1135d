package wiring

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-run/airlock/audit"
	"github.com/airlock-run/airlock/mediator"
	"github.com/airlock-run/airlock/sandbox"
)

// TestExecRecordsBeforeReturning: Kernel.Exec, which lets the allowed
// decision's fsync run beside the start, returns with the decision and the
// run both in the chain, and a refused command's decision recorded too.
func TestExecRecordsBeforeReturning(t *testing.T) {
	state := t.TempDir()
	env := map[string]string{"HOME": filepath.Join(state, "home"), "XDG_STATE_HOME": filepath.Join(state, "state"),
		"XDG_CONFIG_HOME": filepath.Join(state, "config"), "XDG_RUNTIME_DIR": filepath.Join(state, "run")}
	os.MkdirAll(env["XDG_RUNTIME_DIR"], 0o700)
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "airlock.yaml"), []byte("shell: {allow: [\"true\"]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	k, err := Build(Config{Dir: work, Getenv: func(k string) string { return env[k] }, Tier: sandbox.Tier0, Warn: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	records := func() audit.Report {
		b, err := os.ReadFile(k.Audit.Path())
		if err != nil {
			t.Fatal(err)
		}
		rep, _ := audit.Verify(bytes.NewReader(b))
		return rep
	}
	res, err := k.Exec(context.Background(), mediator.Call{Kind: mediator.KindExec, Argv: []string{"true"}}, mediator.ExecOptions{})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("true: exit %d, %v", res.ExitCode, err)
	}
	if rep := records(); !rep.OK || rep.Records != 2 {
		t.Fatalf("after an allowed run: %+v, want an OK chain of the decision and the run", rep)
	}
	if _, err := k.Exec(context.Background(), mediator.Call{Kind: mediator.KindExec, Argv: []string{"ls"}}, mediator.ExecOptions{}); err == nil {
		t.Fatal("ls under a policy allowing only true: allowed, want refused")
	}
	if rep := records(); !rep.OK || rep.Records != 3 {
		t.Fatalf("after a refusal: %+v, want its decision in the chain", rep)
	}
}
