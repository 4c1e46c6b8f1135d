package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunExitCodes checks every exit status airlock run promises, with a
// marker file showing whether the command ran at all.
func TestRunExitCodes(t *testing.T) {
	requireBwrap(t)
	h := newHome(t)
	h.write("airlock.yaml", `
shell:
  allow: [sh, "true", "false", cat, touch, sleep, kill, rm]
  args:
    sh:
      deny: ["-c *forbidden*"]
limits:
  wall: 2s
escalation:
  timeout: 1s
`)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string // in stderr
	}{
		{"own status zero", []string{"run", "--", "true"}, 0, ""},
		{"own status non-zero", []string{"run", "--", "sh", "-c", "exit 7"}, 7, ""},
		{"program refused", []string{"run", "--", "curl", "http://127.0.0.1:9/"}, 126, `"code":"POLICY_DENIED"`},
		{"argument refused", []string{"run", "--", "sh", "-c", "echo forbidden"}, 126, `"category":"shell"`},
		{"catastrophic escalates and times out closed", []string{"run", "--", "rm", "-rf", "/"}, 126, `"code":"ESCALATION_TIMEOUT"`},
		{"wall clock", []string{"run", "--", "sleep", "30"}, 124, "wall-clock"},
		{"killed by a signal", []string{"run", "--", "sh", "-c", "kill -TERM $$"}, 128 + 15, ""},
		{"no command", []string{"run"}, 2, "no command"},
		{"bad sandbox flag", []string{"run", "--sandbox", "7", "--", "true"}, 2, "--sandbox"},
		{"tier 2 not on this host", []string{"run", "--sandbox", "2", "--", "true"}, 125, "tier 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.run(tt.args...)
			if r.Code != tt.wantCode {
				t.Errorf("got exit %d, want %d\nstderr: %s", r.Code, tt.wantCode, r.Stderr)
			}
			if !strings.Contains(r.Stderr, tt.wantErr) {
				t.Errorf("stderr %q does not contain %q", r.Stderr, tt.wantErr)
			}
		})
	}
	// A program the policy lets run (no shell.allow: any program) that
	// does not exist inside the box. (A listed program that does not
	// exist fails every run: see TestExecWallEndToEnd.)
	t.Run("program missing in the box", func(t *testing.T) {
		h := newHome(t)
		h.write("airlock.yaml", "fs: {read: [.]}\n")
		if r := h.run("run", "--", "nosuchprog"); r.Code != 125 || !strings.Contains(r.Stderr, "nosuchprog") {
			t.Errorf("got exit %d, %q; want 125 naming nosuchprog", r.Code, r.Stderr)
		}
	})
}

// TestRefusedRunsNothing proves a refusal happens before anything runs: the
// same command that leaves a marker when allowed leaves none when refused.
func TestRefusedRunsNothing(t *testing.T) {
	requireBwrap(t)
	h := newHome(t)
	marker := filepath.Join(h.Work, "marker")
	h.write("airlock.yaml", "shell:\n  allow: [touch]\nfs:\n  write: [.]\n")
	if r := h.run("run", "--mode", "fix", "--", "touch", marker); r.Code != 0 {
		t.Fatalf("allowed touch: exit %d: %s", r.Code, r.Stderr)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the allowed command did not run: %v", err)
	}
	os.Remove(marker)
	h.write("airlock.yaml", "shell:\n  allow: [ls]\nfs:\n  write: [.]\n")
	if r := h.run("run", "--mode", "fix", "--", "touch", marker); r.Code != 126 {
		t.Fatalf("refused touch: got exit %d, want 126: %s", r.Code, r.Stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the refused command ran")
	}
}

// TestInvalidPolicyRunsNothing checks a policy that does not validate stops
// everything with a one-line error naming the place.
func TestInvalidPolicyRunsNothing(t *testing.T) {
	h := newHome(t)
	marker := filepath.Join(h.Work, "marker")
	h.write("airlock.yaml", "shell:\n  allow: [touch]\n  alow: [x]\n")
	r := h.run("run", "--sandbox", "off", "--", "touch", marker)
	if r.Code != 125 {
		t.Errorf("got exit %d, want 125", r.Code)
	}
	if !strings.Contains(r.Stderr, "airlock.yaml:3:") || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
		t.Errorf("stderr %q: want one line naming airlock.yaml:3", r.Stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a command ran under a policy that did not validate")
	}
}

// TestUnconfinedIsAnnounced checks tier 0 is printed every time it is used.
func TestUnconfinedIsAnnounced(t *testing.T) {
	h := newHome(t)
	r := h.run("run", "--sandbox", "off", "--", "true")
	if r.Code != 0 || !strings.Contains(r.Stderr, "UNCONFINED") {
		t.Errorf("--sandbox off: exit %d, stderr %q; want 0 and a warning", r.Code, r.Stderr)
	}
	h.write("airlock.yaml", "isolation: none\n")
	r = h.run("run", "--", "true")
	if r.Code != 0 || !strings.Contains(r.Stderr, "UNCONFINED") {
		t.Errorf("isolation: none: exit %d, stderr %q; want 0 and a warning", r.Code, r.Stderr)
	}
}

// TestReportAndAudit checks a run leaves its evidence: the --report file
// says where and how it ran, and the audit log verifies.
func TestReportAndAudit(t *testing.T) {
	requireBwrap(t)
	h := newHome(t)
	report := filepath.Join(h.State, "report.json")
	if r := h.run("run", "--report", report, "--", "true"); r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Verdict string
		Result  struct {
			Description struct {
				Tier      int
				Mechanism string
				Seccomp   bool
			} `json:"description"`
		}
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, b)
	}
	if rep.Verdict != "allow" || rep.Result.Description.Tier != 1 || rep.Result.Description.Mechanism != "bubblewrap" || !rep.Result.Description.Seccomp {
		t.Errorf("report = %s; want allow at tier 1 under bubblewrap with seccomp", b)
	}
	h.run("run", "--", "curl", "x") // a refusal is recorded too
	log := filepath.Join(h.State, "state", "airlock", "audit.jsonl")
	if r := h.run("audit", "verify", log); r.Code != 0 {
		t.Errorf("audit verify: exit %d: %s%s", r.Code, r.Stdout, r.Stderr)
	}
	data, _ := os.ReadFile(log)
	if n := strings.Count(string(data), "\n"); n < 3 {
		t.Errorf("audit log has %d records, want a decision and a run for the first call and a decision for the refusal", n)
	}
}

// TestTraceFile checks that with an exporter configured every audit record
// also leaves an OpenTelemetry span.
func TestTraceFile(t *testing.T) {
	h := newHome(t)
	trace := filepath.Join(h.State, "trace.json")
	h.environ = append(h.environ, "AIRLOCK_TRACE_FILE="+trace)
	if r := h.run("run", "--sandbox", "off", "--", "true"); r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatalf("no trace file: %v", err)
	}
	for _, span := range []string{`"Name":"airlock.decision"`, `"Name":"airlock.run"`} {
		if !strings.Contains(string(b), span) {
			t.Errorf("trace file lacks a span %s", span)
		}
	}
}
