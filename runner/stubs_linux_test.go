package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/sandbox"
)

func requireTier1(t *testing.T) {
	t.Helper()
	testsupport.Require(t, testsupport.Root)
	if r := sandbox.Probe(); r.Tier() < sandbox.Tier1 {
		testsupport.Missing(t, "tier 1 unavailable here: %s", r.Why)
	}
}

// gitRepo makes a repository with one commit and an ignored file, the
// shape `git status --porcelain --ignored` has to say everything about.
func gitRepo(t *testing.T) string {
	t.Helper()
	testsupport.Require(t, testsupport.Program("git"))
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = []string{"HOME=" + dir, "PATH=/usr/bin:/bin", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("*.log\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "build.log"), []byte("x\n"), 0o644)
	git("add", "main.go", ".gitignore")
	git("commit", "-q", "-m", "init")
	return dir
}

func gitStatus(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("git", "status", "--porcelain", "--ignored")
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git status: %v\n%s", err, out)
	}
	return string(out)
}

// TestNoStubsLeft: a fix-mode run protects paths that do not exist (which
// needs placeholders in the tree while it runs) and leaves the tree as git
// saw it.
func TestNoStubsLeft(t *testing.T) {
	requireTier1(t)
	repo := gitRepo(t)
	before := gitStatus(t, repo)
	// Inside, git must not offer the placeholders for a commit.
	o := runIn(t, sandbox.Tier1, fixSpec(t, repo), "", "sh", "-c",
		"ls -a; echo new > new.txt; rm new.txt; test -e .vscode && git status --porcelain >&2")
	if o.err != nil || o.res.ExitCode != 0 {
		t.Fatalf("run: exit %d, err %v, %s", o.res.ExitCode, o.err, o.stderr)
	}
	if strings.TrimSpace(o.stderr) != "" {
		t.Errorf("inside the box git status shows %q, want nothing (placeholders excluded)", o.stderr)
	}
	if !strings.Contains(o.stdout, ".vscode") {
		t.Errorf("inside the box .vscode was not blocked (ls -a: %q)", o.stdout)
	}
	if after := gitStatus(t, repo); after != before {
		t.Errorf("git status changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestKillAirlock kills airlock (a stand-in running runner.Run) with
// SIGKILL in the middle of a fix-mode run: no process of the box may
// survive, and the guard must remove the placeholders and the cgroups.
func TestKillAirlock(t *testing.T) {
	requireTier1(t)
	// With limits the guard empties the cgroup; without, it waits for the
	// box's PID 1.
	for _, pids := range []int{100, 0} {
		t.Run("pids="+strconv.Itoa(pids), func(t *testing.T) { killAirlock(t, pids) })
	}
}

func killAirlock(t *testing.T, pids int) {
	repo := gitRepo(t)
	before := gitStatus(t, repo)
	signal := t.TempDir()
	marker := fmt.Sprintf("%d.%d", 4000+os.Getpid()%1000, time.Now().UnixNano()%100000)
	t.Cleanup(func() { killMarked(marker) })
	spec := fixSpec(t, repo)
	spec.Write = append(spec.Write, signal)
	spec.Limits.Pids = pids
	req, _ := json.Marshal(helperReq{Spec: spec, Tier: sandbox.Tier1,
		Argv: []string{"sh", "-c", "touch " + filepath.Join(signal, "started") + "; sleep " + marker + " & setsid sleep " + marker + " & wait"}})
	cmd := exec.Command(testExe(t), helperArg, string(req))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(signal, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the box never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.Lstat(filepath.Join(repo, ".vscode")); err != nil {
		t.Fatalf("no placeholder while the box runs, so this test shows nothing: %v", err)
	}
	// Two sleeps run in the box: one in the shell's session, one that
	// left it.
	for end := time.Now().Add(5 * time.Second); countSleeps(marker) < 2 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := countSleeps(marker); n != 2 {
		t.Fatalf("%d marked sleeps run in the box, want 2", n)
	}
	cgroupsBefore := airlockCgroups(cmd.Process.Pid)
	if len(cgroupsBefore) == 0 && pids > 0 {
		t.Errorf("no cgroup of the run was found while it ran")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	// The guard, a process of its own, cleans up after airlock's death; on
	// a loaded 2-core machine that can take seconds. The waits below are
	// bounds on a wait, not a claim about speed.
	const cleanup = 30 * time.Second
	if !waitGone(marker, cleanup) {
		t.Errorf("box processes survived airlock's death: %v", marked(marker))
	}
	var after string
	for end := time.Now().Add(cleanup); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if after = gitStatus(t, repo); after == before {
			break
		}
	}
	if after != before {
		t.Errorf("the tree changed after airlock was killed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	for end := time.Now().Add(cleanup); time.Now().Before(end) && len(airlockCgroups(cmd.Process.Pid)) > 0; {
		time.Sleep(20 * time.Millisecond)
	}
	if left := airlockCgroups(cmd.Process.Pid); len(left) > 0 {
		t.Errorf("cgroups left behind: %v", left)
	}
}

// airlockCgroups lists the cgroup directories a run of process pid made.
func airlockCgroups(pid int) []string {
	var out []string
	filepath.WalkDir("/sys/fs/cgroup", func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), fmt.Sprintf("airlock-%d-", pid)) {
			out = append(out, p)
			return filepath.SkipDir
		}
		if strings.Count(p, "/") > 8 {
			return filepath.SkipDir
		}
		return nil
	})
	return out
}

// TestConcurrentRunsShareStubs: two fix-mode runs in one tree. The second
// shares the first's placeholders; when one run ends, the other's
// protection must hold until it ends too, and then nothing is left.
func TestConcurrentRunsShareStubs(t *testing.T) {
	requireTier1(t)
	repo := gitRepo(t)
	before := gitStatus(t, repo)
	sig := t.TempDir()
	long := fixSpec(t, repo)
	long.Write = append(long.Write, sig)
	script := "touch " + sig + "/started; while [ ! -e " + sig + "/go ]; do sleep 0.02; done; " +
		"mkdir .vscode 2>/dev/null && echo created; echo x > .mcp.json 2>/dev/null && echo wrote; true"
	done := make(chan outcome, 1)
	go func() { done <- runIn(t, sandbox.Tier1, long, "", "sh", "-c", script) }()
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(sig, "started")); err == nil {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the long run never started")
		}
	}
	short := runIn(t, sandbox.Tier1, fixSpec(t, repo), "", "true")
	if short.err != nil || short.res.ExitCode != 0 {
		t.Fatalf("short run: exit %d, %v", short.res.ExitCode, short.err)
	}
	os.WriteFile(filepath.Join(sig, "go"), nil, 0o644)
	o := <-done
	if o.err != nil {
		t.Fatalf("long run: %v", o.err)
	}
	if strings.Contains(o.stdout, "created") || strings.Contains(o.stdout, "wrote") {
		t.Errorf("after the other run ended, the long run could create protected paths: %q", o.stdout)
	}
	if after := gitStatus(t, repo); after != before {
		t.Errorf("git status changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// countSleeps counts the sleep processes carrying marker.
func countSleeps(marker string) int {
	n := 0
	for _, pid := range marked(marker) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if strings.HasPrefix(string(b), "sleep\x00") {
			n++
		}
	}
	return n
}

// TestManyConcurrentRunsShareStubs: 36 fix-mode runs start at once in one
// tree (parallel file tools of one MCP session). Each must find, share and
// in the end remove the same placeholders without tripping over the
// others: none may fail, each must see its protection, and the tree is as
// git saw it afterwards.
func TestManyConcurrentRunsShareStubs(t *testing.T) {
	requireTier1(t)
	repo := gitRepo(t)
	before := gitStatus(t, repo)
	const n = 36
	start := make(chan struct{})
	outs := make(chan outcome, n)
	for i := 0; i < n; i++ {
		go func() {
			<-start
			outs <- runIn(t, sandbox.Tier1, fixSpec(t, repo), "", "sh", "-c",
				"if echo x > .zshenv 2>/dev/null; then echo wrote; fi; test -e .vscode && echo blocked")
		}()
	}
	close(start)
	for i := 0; i < n; i++ {
		o := <-outs
		if o.err != nil || o.res.ExitCode != 0 {
			t.Errorf("run failed: exit %d, %v: %s", o.res.ExitCode, o.err, o.stderr)
			continue
		}
		if strings.Contains(o.stdout, "wrote") || !strings.Contains(o.stdout, "blocked") {
			t.Errorf("a run's protection did not hold: %q", o.stdout)
		}
	}
	if after := gitStatus(t, repo); after != before {
		t.Errorf("git status changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
