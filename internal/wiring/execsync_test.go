package wiring

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-run/airlock/audit"
	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/mediator"
	"github.com/airlock-run/airlock/policy"
	"github.com/airlock-run/airlock/sandbox"
)

// TestExecRecordsBeforeReturning: Kernel.Exec, which lets the allowed
// decision's fsync run beside the start, returns with the decision and the
// run both in the chain, and a refused command's decision recorded too.
func TestExecRecordsBeforeReturning(t *testing.T) {
	k := tier0Kernel(t, "shell: {allow: [\"true\"]}\n")
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

// helperEnv runs this test binary as a helper (TestMain): "exec" builds a
// kernel in the state and work directories the variables name and runs
// one allowed command that says "started" and sleeps.
const helperEnv = "AIRLOCK_WIRING_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "exec" {
		os.Exit(execHelper())
	}
	os.Exit(m.Run())
}

// tier0Kernel is a kernel at tier 0 under the policy text, with airlock's
// state in a directory of the test's own; it is closed with the test.
func tier0Kernel(t *testing.T, policy string) *Kernel {
	t.Helper()
	env := stateEnv(t.TempDir())
	os.MkdirAll(env["XDG_RUNTIME_DIR"], 0o700)
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "airlock.yaml"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	k, err := Build(Config{Dir: work, Getenv: func(k string) string { return env[k] }, Tier: sandbox.Tier0, Warn: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

func stateEnv(state string) map[string]string {
	return map[string]string{"HOME": filepath.Join(state, "home"), "XDG_STATE_HOME": filepath.Join(state, "state"),
		"XDG_CONFIG_HOME": filepath.Join(state, "config"), "XDG_RUNTIME_DIR": filepath.Join(state, "run")}
}

func execHelper() int {
	env := stateEnv(os.Getenv("AIRLOCK_TEST_STATE"))
	k, err := Build(Config{Dir: os.Getenv("AIRLOCK_TEST_WORK"), Getenv: func(k string) string { return env[k] }, Tier: sandbox.Tier0, Warn: func(string) {}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_, err = k.Exec(context.Background(), mediator.Call{Kind: mediator.KindShell, Command: "echo started; sleep 30"},
		mediator.ExecOptions{Stdout: os.Stdout})
	fmt.Fprintln(os.Stderr, "the command ended:", err)
	return 1
}

// TestExecKilledMidRunKeepsDecision: airlock killed (SIGKILL) while the
// command it allowed runs leaves that decision in the log, whole and in
// the chain: the box starts only once the record, written beside the
// plan, is in the file.
func TestExecKilledMidRunKeepsDecision(t *testing.T) {
	state, work := t.TempDir(), t.TempDir()
	os.MkdirAll(stateEnv(state)["XDG_RUNTIME_DIR"], 0o700)
	if err := os.WriteFile(filepath.Join(work, "airlock.yaml"), []byte("shell: {allow: [echo, sleep]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=exec", "AIRLOCK_TEST_STATE="+state, "AIRLOCK_TEST_WORK="+work)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if s != "started\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the helper said %q, want started: %s", s, stderr.Bytes())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the command never started: %s", stderr.Bytes())
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	env := stateEnv(state)
	path, err := audit.DefaultPath(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := audit.Verify(bytes.NewReader(b))
	if err != nil || !rep.OK || rep.Records != 1 {
		t.Fatalf("after SIGKILL mid-run: %+v, %v; want an OK chain holding the decision", rep, err)
	}
	var got audit.Record
	audit.Read(bytes.NewReader(b), func(r audit.Record) error { got = r; return nil })
	if got.Kind != "decision" || got.Verdict != "allow" {
		t.Errorf("the record left: kind %q verdict %q, want the allowed decision", got.Kind, got.Verdict)
	}
}

// TestExecAuditFailureRunsNothing: when the allowed decision cannot be
// recorded, Exec fails with the audit's error and the command never
// starts: no result goes by without its record.
func TestExecAuditFailureRunsNothing(t *testing.T) {
	k := tier0Kernel(t, "shell: {allow: [echo]}\n")
	k.Audit.Close() // every write fails from now on
	var stdout bytes.Buffer
	res, err := k.Exec(context.Background(), mediator.Call{Kind: mediator.KindShell, Command: "echo ran"}, mediator.ExecOptions{Stdout: &stdout})
	if err == nil {
		t.Fatalf("Exec with a log that cannot be written: exit %d, nil error; want the audit's error", res.ExitCode)
	}
	if !strings.Contains(err.Error(), "audit") || errs.ClassOf(err) != errs.Unavailable {
		t.Errorf("error: got %v (class %v), want the audit's, unavailable", err, errs.ClassOf(err))
	}
	if stdout.Len() != 0 {
		t.Errorf("the command ran (it wrote %q): want it never started", stdout.String())
	}
}

// TestBuildRefusesBrokenLog: a log whose last record cannot be chained
// onto fails Build, though its tail is read beside the rest of the
// wiring: nothing is decided, nothing runs.
func TestBuildRefusesBrokenLog(t *testing.T) {
	state, work := t.TempDir(), t.TempDir()
	env := stateEnv(state)
	os.MkdirAll(env["XDG_RUNTIME_DIR"], 0o700)
	path, err := audit.DefaultPath(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(path), 0o700)
	if err := os.WriteFile(path, []byte(`{"seq":1,"time":"2026-01-01T00:00:00.000000000Z","kind":"decision"`), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := Build(Config{Dir: work, Getenv: func(k string) string { return env[k] }, Tier: sandbox.Tier0, Warn: func(string) {}})
	if err == nil {
		k.Close()
		t.Fatal("Build with a log whose last record is incomplete: got a kernel, want a refusal")
	}
	if !strings.Contains(err.Error(), "incomplete") {
		t.Errorf("Build: got %v, want the log's incomplete last record named", err)
	}
}

// closingWriter closes the log at the command's first output: the
// decision is in the file by then, the run's record cannot be.
type closingWriter struct {
	log  *audit.Log
	once sync.Once
}

func (w *closingWriter) Write(b []byte) (int, error) {
	w.once.Do(func() { w.log.Close() })
	return len(b), nil
}

// TestExecRunRecordFailureFailsCall: a run whose record cannot be written
// is reported as the audit's failure, not as the command's result.
func TestExecRunRecordFailureFailsCall(t *testing.T) {
	k := tier0Kernel(t, "shell: {allow: [echo]}\n")
	res, err := k.Exec(context.Background(), mediator.Call{Kind: mediator.KindShell, Command: "echo ran"},
		mediator.ExecOptions{Stdout: &closingWriter{log: k.Audit}})
	if err == nil {
		t.Fatalf("Exec whose run could not be recorded: exit %d, nil error; want the audit's error", res.ExitCode)
	}
	if !strings.Contains(err.Error(), "audit") || errs.ClassOf(err) != errs.Unavailable {
		t.Errorf("error: got %v (class %v), want the audit's, unavailable", err, errs.ClassOf(err))
	}
}

// TestOutputWaitsForDurability: a command's output, streamed while it
// runs, passes only once sync (the log's Sync) returned; after a failed
// sync none of it passes and the write says why.
func TestOutputWaitsForDurability(t *testing.T) {
	release := make(chan error)
	g := &durableGate{sync: func() error { return <-release }}
	var mu sync.Mutex
	var got bytes.Buffer
	w := g.writer(writerFunc(func(b []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return got.Write(b)
	}))
	done := make(chan error, 1)
	go func() {
		_, err := w.Write([]byte("out"))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	early := got.String()
	mu.Unlock()
	if early != "" {
		t.Fatalf("output %q passed before the records were durable", early)
	}
	release <- nil
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := g.writer(&got).Write([]byte(" and more")); err != nil {
		t.Fatal(err)
	}
	if got.String() != "out and more" {
		t.Fatalf("got %q, want all of the output once durable", got.String())
	}

	failed := &durableGate{sync: func() error { return errs.Unavailablef("audit: sync: input/output error") }}
	var none bytes.Buffer
	if _, err := failed.writer(&none).Write([]byte("secret")); err == nil || none.Len() > 0 {
		t.Fatalf("after a failed sync: wrote %q, error %v; want nothing written and the error", none.String(), err)
	}
	if failed.writer(nil) != nil {
		t.Fatal("a nil writer must stay nil (the output is discarded)")
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// TestDecisionAfterStartWritten: an allowed decision recorded once the box
// may be running (a connection a person let through) is in the file when
// Record returns, not left to the background with nothing waiting for it.
func TestDecisionAfterStartWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := &pendingRecords{}
	ctx := context.WithValue(context.Background(), syncAfter{}, p)
	rec := auditRecorder{l: l, log: l}
	if err := rec.Record(ctx, mediator.Record{Kind: "decision", Verdict: policy.Allow, Rule: "before"}); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(); err != nil { // the box starts
		t.Fatal(err)
	}
	// Another writer holds the log's lock for a while: the record cannot
	// be written until it lets go, so Record may not return before then.
	other, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	recorded := make(chan error, 1)
	go func() {
		recorded <- rec.Record(ctx, mediator.Record{Kind: "decision", Verdict: policy.Allow, Rule: "after"})
	}()
	select {
	case err := <-recorded:
		t.Fatalf("Record returned (%v) while its record could not be written yet", err)
	case <-time.After(100 * time.Millisecond):
	}
	syscall.Flock(int(other.Fd()), syscall.LOCK_UN)
	if err := <-recorded; err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"rule":"after"`) {
		t.Fatalf("the decision made after the start is not in the file when Record returned:\n%s", b)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
}
