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
// the home. The test sees the early read open the policy (inotify). The
// same run from the server's own binary then runs warm and writes its
// audit record where the test looked.
func TestWarmColdAnswerWritesNothing(t *testing.T) {
	f := startWarm(t)
	dir := t.TempDir()
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, filepath.Dir(policy), filepath.Base(policy), "shell:\n  allow: [\"true\"]\n")
	opened := watchOpen(t, policy)
	before := treeOf(t, f.home)
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	fd := int(null.Fd())
	args := []string{"--policy", policy, "--", "/bin/true"}
	r := warmrun.HandOver(context.Background(), f.sockDir, warmrun.Request{Args: args, Env: f.env, Dir: dir}, []int{fd, fd, fd})
	if r.Outcome != warmrun.Cold || !strings.Contains(r.Reason, "another airlock binary") {
		t.Fatalf("got %+v, want a cold answer for another binary", r)
	}
	if !opened(10 * time.Second) {
		t.Fatalf("the server never read the policy ahead")
	}
	time.Sleep(200 * time.Millisecond) // what a wrongly kept read would go on to write
	if after := treeOf(t, f.home); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatalf("a cold answer left files behind:\nbefore %q\nafter  %q", before, after)
	}
	audit := filepath.Join(f.home, "state", "airlock", "audit.jsonl")
	if _, err := os.Lstat(audit); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("audit log after a cold answer: %v, want none", err)
	}

	// The control: a warm run of the server's own binary writes there.
	policy = filepath.Join(dir, "airlock.yaml")
	writeFile(t, dir, "airlock.yaml", "shell:\n  allow: [\"true\"]\n")
	if res := f.run(t, "verbose", dir, "", []string{"run", "--policy", policy, "--", "/bin/true"}); res.code != 0 || strings.Contains(res.stderr, "running cold") {
		t.Fatalf("the control run: %+v, want a warm exit 0", res)
	}
	if _, err := os.Lstat(audit); err != nil {
		t.Fatalf("the warm run wrote no audit record at %s: %v", audit, err)
	}
}

// watchOpen watches file for an open (inotify) and returns what reports,
// within a wait, whether one came.
func watchOpen(t *testing.T, file string) func(wait time.Duration) bool {
	t.Helper()
	in, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(in) })
	if _, err := unix.InotifyAddWatch(in, file, unix.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	return func(wait time.Duration) bool {
		buf := make([]byte, 4096)
		for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if n, err := unix.Read(in, buf); err == nil && n > 0 {
				return true
			}
		}
		return false
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
