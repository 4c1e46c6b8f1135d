package runner

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/sandbox"
)

// ownGroups lists the cgroup directories this process's runs have now.
func ownGroups(t *testing.T) []string {
	t.Helper()
	prefix := fmt.Sprintf("airlock-%d-", os.Getpid())
	var out []string
	filepath.WalkDir("/sys/fs/cgroup", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), prefix) {
			out = append(out, p)
			return fs.SkipDir
		}
		return nil
	})
	return out
}

// TestGroupMadeBesidePlan: the cgroup is made while the box is planned,
// so a run whose box cannot be planned, or that is refused before it
// starts, still leaves no group behind, and a run that starts is in its
// group with its limits.
func TestGroupMadeBesidePlan(t *testing.T) {
	if os.Geteuid() != 0 {
		testsupport.Missing(t, "cgroup limits need root here (or a delegated cgroup)")
	}
	if r := sandbox.Probe(); r.Cgroup.Version == 0 || !r.Cgroup.Writable || r.Tier() < sandbox.Tier1 {
		testsupport.Missing(t, "no writable cgroup hierarchy or no tier 1 on this host")
	}
	if g := ownGroups(t); len(g) != 0 {
		t.Fatalf("groups before the test: %v", g)
	}
	lim := sandbox.Limits{MemoryBytes: 256 << 20, Pids: 64}
	exe := testExe(t)
	for _, tc := range []struct {
		name string
		spec sandbox.Spec
		argv []string
	}{
		{"plan fails", sandbox.Spec{Workdir: filepath.Join(t.TempDir(), "missing"), Limits: lim}, []string{"/bin/true"}},
		{"command refused", sandbox.Spec{Workdir: t.TempDir(), Limits: lim, Env: []string{"PATH=/usr/bin:/bin"}}, []string{"no-such-program-here"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Run(context.Background(), exe, Request{Argv: tc.argv, Spec: tc.spec, Tier: sandbox.Tier1}); err == nil {
				t.Fatal("got no error, want the run refused")
			}
			if g := ownGroups(t); len(g) != 0 {
				t.Errorf("groups left behind: %v", g)
			}
		})
	}
	res, err := Run(context.Background(), exe, Request{Argv: []string{"/bin/sh", "-c", "cat /proc/self/cgroup"},
		Spec: sandbox.Spec{Workdir: t.TempDir(), Limits: lim, Env: []string{"PATH=/usr/bin:/bin"}}, Tier: sandbox.Tier1})
	if err != nil || res.ExitCode != 0 || res.Description.Limits.Cgroup == "" {
		t.Fatalf("a run with limits: exit %d, %v, cgroup %q", res.ExitCode, err, res.Description.Limits.Cgroup)
	}
	if g := ownGroups(t); len(g) != 0 {
		t.Errorf("groups left after the run: %v", g)
	}
}
