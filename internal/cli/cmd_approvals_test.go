package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/approvals"
	"github.com/airlock-run/airlock/audit"
	"github.com/airlock-run/airlock/policy"
)

// TestApprovalsListAndDecide answers a waiting escalation from "another
// terminal" through the CLI, and checks the audit log it leaves.
func TestApprovalsListAndDecide(t *testing.T) {
	base, err := os.MkdirTemp("", "alk")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	dir := filepath.Join(base, "s")
	grants := filepath.Join(base, "grants.yaml")
	b, err := approvals.New(approvals.Options{SocketDir: dir, GrantsFile: grants, Person: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	g, err := policy.GrantFor(policy.Call{Argv: []string{"git", "push"}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan approvals.Outcome)
	go func() {
		done <- b.Ask(context.Background(), approvals.Request{Kind: "argv", Argv: []string{"git", "push"}, Category: "shell", Reason: "git push needs approval", Grant: &g}, time.Hour)
	}()
	run := func(args ...string) (string, int) {
		var out, errb bytes.Buffer
		env := &Env{Stdout: &out, Stderr: &errb, Environ: []string{"HOME=" + base}}
		code := Main(context.Background(), append(args, "--socket-dir", dir), env)
		return out.String() + errb.String(), code
	}
	var out string
	for i := 0; i < 1000 && !strings.Contains(out, "git push"); i++ {
		time.Sleep(5 * time.Millisecond)
		out, _ = run("approvals", "list")
	}
	id, _, _ := strings.Cut(out, " ")
	if !strings.Contains(out, "always saves: ") {
		t.Fatalf("list: got %q, want the grant shown", out)
	}
	out, code := run("approvals", "decide", id, "allow-always")
	if code != 0 || !strings.Contains(out, "saving grant: ") || !strings.Contains(out, "grant saved to") {
		t.Fatalf("decide: got %d %q", code, out)
	}
	if o := <-done; o.Answer != approvals.AllowAlways {
		t.Fatalf("outcome: got %v", o.Answer)
	}
	if out, code := run("approvals", "decide", id, "deny"); code == 0 {
		t.Errorf("second decide: got exit 0 (%q), want a failure", out)
	}
	if out, code := run("approvals", "decide", id, "sure"); code != 2 {
		t.Errorf("bad answer: got exit %d (%q), want 2", code, out)
	}
}

func TestAuditVerifyCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		l.Append(audit.Record{Kind: "decision", Verdict: "allow", Decider: "policy", Reason: "fine"})
	}
	l.Close()
	run := func(args ...string) (string, int) {
		var out bytes.Buffer
		code := Main(context.Background(), args, &Env{Stdout: &out, Stderr: &out})
		return out.String(), code
	}
	if out, code := run("audit", "verify", path); code != 0 || !strings.Contains(out, "ok: 3 records") {
		t.Fatalf("sound log: got %d %q", code, out)
	}
	data, _ := os.ReadFile(path)
	os.WriteFile(path, bytes.Replace(data, []byte(`"allow"`), []byte(`"deny!"`), 1), 0o600)
	if out, code := run("audit", "verify", path); code != 1 || !strings.Contains(out, ":1: edited") {
		t.Fatalf("edited log: got %d %q", code, out)
	}
	if out, code := run("audit", "verify", "--json", path); code != 1 || !strings.Contains(out, `"ok":false`) {
		t.Fatalf("--json: got %d %q", code, out)
	}
	if out, code := run("audit", "verify", filepath.Join(t.TempDir(), "none")); code != 125 {
		t.Fatalf("missing file: got %d %q", code, out)
	}
}
