package cli

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/internal/warmrun"
)

// TestWarmColdAnswerWritesNothing: the server reads a call's policy beside
// its checks of the caller, before it answers; a call answered cold (here
// the test's own binary, another than the server's) still leaves nothing
// written: no audit record, no approvals socket, no file anywhere under
// the home. The policy is a FIFO, so the test sees the early read open it.
// The same run from the server's own binary then runs warm and writes its
// audit record where the test looked.
func TestWarmColdAnswerWritesNothing(t *testing.T) {
	f := startWarm(t)
	dir := t.TempDir()
	fifo := filepath.Join(t.TempDir(), "policy.yaml")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	before := treeOf(t, f.home)
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	fd := int(null.Fd())
	args := []string{"--policy", fifo, "--", "/bin/true"}
	r := warmrun.HandOver(context.Background(), f.sockDir, warmrun.Request{Args: args, Env: f.env, Dir: dir}, []int{fd, fd, fd})
	if r.Outcome != warmrun.Cold || !strings.Contains(r.Reason, "another airlock binary") {
		t.Fatalf("got %+v, want a cold answer for another binary", r)
	}
	// A writer opens without blocking only once a reader holds the FIFO:
	// the server's early read of the policy.
	w := openWriter(t, fifo)
	w.WriteString("shell:\n  allow: [\"true\"]\n")
	w.Close()
	time.Sleep(200 * time.Millisecond) // what a wrongly kept read would go on to write
	if after := treeOf(t, f.home); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatalf("a cold answer left files behind:\nbefore %q\nafter  %q", before, after)
	}
	audit := filepath.Join(f.home, "state", "airlock", "audit.jsonl")
	if _, err := os.Lstat(audit); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("audit log after a cold answer: %v, want none", err)
	}

	// The control: a warm run of the server's own binary writes there.
	policy := filepath.Join(dir, "airlock.yaml")
	writeFile(t, dir, "airlock.yaml", "shell:\n  allow: [\"true\"]\n")
	if res := f.run(t, "verbose", dir, "", []string{"run", "--policy", policy, "--", "/bin/true"}); res.code != 0 || strings.Contains(res.stderr, "running cold") {
		t.Fatalf("the control run: %+v, want a warm exit 0", res)
	}
	if _, err := os.Lstat(audit); err != nil {
		t.Fatalf("the warm run wrote no audit record at %s: %v", audit, err)
	}
}

// openWriter opens fifo for writing once a reader has it, failing after
// 10 s without one.
func openWriter(t *testing.T, fifo string) *os.File {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err == nil {
			return os.NewFile(uintptr(fd), fifo)
		}
		if err != unix.ENXIO || time.Now().After(deadline) {
			t.Fatalf("the server never read the policy ahead (open %s for writing: %v)", fifo, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// treeOf is every path under root with its type, sorted.
func treeOf(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		out = append(out, p+" "+d.Type().String())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}
