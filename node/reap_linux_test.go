package node

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// TestReapLost: a run a dead node process marked is reaped at the next
// start (its processes killed, the mark turned into lost), and a job
// directory without a mark is left alone.
func TestReapLost(t *testing.T) {
	state := t.TempDir()
	job := func(id string) string {
		dir := filepath.Join(state, "jobs", id)
		if err := os.MkdirAll(filepath.Join(dir, "work"), 0o700); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	sleep := func(dir string) *exec.Cmd {
		cmd := exec.Command("sleep", "3600")
		cmd.Dir = filepath.Join(dir, "work")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	// A pid that is gone: a process that ran and was reaped.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	lost, kept := job("j-lost"), job("j-kept")
	b, _ := json.Marshal(runMark{Pid: gone.Process.Pid})
	os.WriteFile(filepath.Join(lost, runningFile), b, 0o600)
	left, other := sleep(lost), sleep(kept)

	reaped, err := reapLost(state, slog.New(slog.DiscardHandler))
	if err != nil || len(reaped) != 1 || reaped[0] != "j-lost" {
		t.Fatalf("reapLost: %v, %v; want j-lost reaped", reaped, err)
	}
	done := make(chan error, 1)
	go func() { done <- left.Wait() }()
	select {
	case err := <-done:
		if ws, ok := left.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Errorf("the lost run's process ended with %v, want SIGKILL", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the lost run's process still runs after the reap")
	}
	if _, err := os.Stat(filepath.Join(lost, lostFile)); err != nil {
		t.Errorf("the reaped run is not marked lost: %v", err)
	}
	if _, err := os.Stat(filepath.Join(lost, runningFile)); err == nil {
		t.Error("the reaped run is still marked running")
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("a job without a mark had its process killed: %v", err)
	}
	// Again: nothing is marked any more.
	if reaped, err := reapLost(state, slog.New(slog.DiscardHandler)); err != nil || len(reaped) != 0 {
		t.Errorf("a second reap: %v, %v; want nothing", reaped, err)
	}
}

// TestReapRefusesALiveNode: a mark of a live node process of this same
// program is another node on the same state directory, refused; a live
// stranger that got a dead node's pid is not.
func TestReapRefusesALiveNode(t *testing.T) {
	state := t.TempDir()
	dir := filepath.Join(state, "jobs", "j-1")
	os.MkdirAll(dir, 0o700)
	// This test binary is the same program as itself: run it again, idle.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	twin := exec.Command(self, "-test.run=^TestIdleTwin$", "-test.timeout=1h")
	twin.Env = append(os.Environ(), "AIRLOCK_NODE_TEST_IDLE=1")
	stdin, _ := twin.StdinPipe()
	if err := twin.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); twin.Process.Kill(); twin.Wait() }()
	os.WriteFile(filepath.Join(dir, runningFile), []byte(`{"pid":`+strconv.Itoa(twin.Process.Pid)+`}`), 0o600)
	_, err = reapLost(state, slog.New(slog.DiscardHandler))
	if !processAlive(twin.Process.Pid) {
		t.Fatal("the twin process ended: the test proves nothing")
	}
	if err == nil || !strings.Contains(err.Error(), "is in use by process "+strconv.Itoa(twin.Process.Pid)) {
		t.Fatalf("got %v, want a refusal naming the live node process", err)
	}
	if _, err := os.Stat(filepath.Join(dir, runningFile)); err != nil {
		t.Errorf("the live node's mark was touched: %v", err)
	}
}

// TestIdleTwin is the live twin above: it waits until its stdin closes.
func TestIdleTwin(t *testing.T) {
	if os.Getenv("AIRLOCK_NODE_TEST_IDLE") != "1" {
		t.Skip("the idle twin of TestReapRefusesALiveNode")
	}
	io.ReadAll(os.Stdin)
}

// TestReapThawsAFrozenBox: a node killed while its box's group was frozen
// (the v1 freezer holds a box while it starts or is killed) leaves a
// process no signal reaches until the group thaws. The reap thaws it,
// kills the process and removes the group.
func TestReapThawsAFrozenBox(t *testing.T) {
	testsupport.Require(t, testsupport.Root, testsupport.CgroupV1orV2)
	var freezer string
	for _, m := range cgroupMounts() {
		if slices.Contains(m.controllers, "freezer") || (m.v2 && freezer == "") {
			freezer = m.point
		}
	}
	if freezer == "" {
		testsupport.Missing(t, "a cgroup hierarchy with a freezer")
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	group := filepath.Join(freezer, "airlock-"+strconv.Itoa(gone.Process.Pid)+"-reaptest")
	if err := os.Mkdir(group, 0o755); err != nil {
		testsupport.Missing(t, "a cgroup of our own under %s: %v", freezer, err)
	}
	t.Cleanup(func() { thaw(group); os.Remove(group) })
	state := t.TempDir()
	dir := filepath.Join(state, "jobs", "j-frozen")
	os.MkdirAll(dir, 0o700)
	cmd := exec.Command("sleep", "3600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); thaw(group); cmd.Wait() })
	if err := os.WriteFile(filepath.Join(group, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	freeze := func() error {
		if _, err := os.Stat(filepath.Join(group, "freezer.state")); err == nil {
			return os.WriteFile(filepath.Join(group, "freezer.state"), []byte("FROZEN"), 0)
		}
		return os.WriteFile(filepath.Join(group, "cgroup.freeze"), []byte("1"), 0)
	}
	if err := freeze(); err != nil {
		t.Fatal(err)
	}
	// The attack's mechanics: frozen, the process outlives a SIGKILL.
	cmd.Process.Signal(syscall.SIGKILL)
	time.Sleep(200 * time.Millisecond)
	if !processAlive(cmd.Process.Pid) {
		t.Fatal("a process in a frozen group died of SIGKILL: the freezer does not hold it here")
	}
	b, _ := json.Marshal(runMark{Pid: gone.Process.Pid})
	os.WriteFile(filepath.Join(dir, runningFile), b, 0o600)
	if reaped, err := reapLost(state, slog.New(slog.DiscardHandler)); err != nil || len(reaped) != 1 {
		t.Fatalf("reapLost: %v, %v", reaped, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the frozen box's process still runs after the reap")
	}
	if _, err := os.Stat(group); err == nil {
		t.Errorf("the lost box's group %s is still there", group)
	}
}
