package testsupport

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Requirement is one thing a test needs from the host. Its check runs once
// per test binary.
type Requirement struct {
	name  string
	check func() string // "" when the host has it, else what is missing and how to get it
}

// String is the requirement's name.
func (r Requirement) String() string { return r.name }

// need makes a requirement whose check runs at most once.
func need(name string, check func() string) Requirement {
	return Requirement{name: name, check: sync.OnceValue(check)}
}

var (
	// Root is uid 0: mounts, cgroups, network namespaces, other uids.
	Root = need("root", func() string {
		if uid := os.Geteuid(); uid != 0 {
			return fmt.Sprintf("needs root (running as uid %d); CI runs the tests as root", uid)
		}
		return ""
	})

	// Bwrap is bubblewrap at /usr/bin/bwrap, where the distribution's
	// package (and scripts/setup.sh) puts it and where the tests that run it
	// directly look.
	Bwrap = need("bubblewrap", func() string {
		const path = "/usr/bin/bwrap"
		st, err := os.Stat(path)
		if err != nil || !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
			return fmt.Sprintf("needs bubblewrap at %s (bash scripts/setup.sh installs it)", path)
		}
		return ""
	})

	// NetNS is a network namespace this process can create: root, the ip
	// command (iproute2) that the tests wire namespaces with, and a kernel
	// that grants unshare(CLONE_NEWNET).
	NetNS = need("network namespaces", func() string {
		if os.Geteuid() != 0 {
			return "needs root to create a network namespace"
		}
		if _, err := exec.LookPath("ip"); err != nil {
			return "needs the ip command (iproute2) to create a network namespace (bash scripts/setup.sh installs it)"
		}
		return probeNetNS()
	})

	// CgroupV1orV2 is a cgroup hierarchy this process can make groups in:
	// v2 (unified), or v1 with the memory, cpu and pids controllers. Tests
	// of one version in particular check the version themselves and skip on
	// a host of the other; this says the host has at least one.
	CgroupV1orV2 = need("cgroups", probeCgroup)

	// Proc is a mounted /proc showing this process's status.
	Proc = need("/proc", func() string {
		if _, err := os.Stat("/proc/self/status"); err != nil {
			return "needs /proc mounted (reading /proc/self/status: " + err.Error() + ")"
		}
		return ""
	})
)

// Program is the named program on PATH.
func Program(name string) Requirement {
	return need(name, func() string {
		if _, err := exec.LookPath(name); err != nil {
			return fmt.Sprintf("needs %s on PATH (bash scripts/setup.sh installs what the tests use)", name)
		}
		return ""
	})
}

// Require stops the test unless the host has every requirement: it fails
// the test under CI=true and skips it elsewhere, naming everything missing.
func Require(t testing.TB, reqs ...Requirement) {
	t.Helper()
	var missing []string
	for _, r := range reqs {
		if why := r.check(); why != "" {
			missing = append(missing, why)
		}
	}
	if len(missing) > 0 {
		Missing(t, "%s", strings.Join(missing, "; "))
	}
}

// Missing stops a test that found for itself that the host lacks something
// it needs (a tier-1 box, a pseudo-terminal, a tmpfs mount): under CI=true it
// fails the test, elsewhere it skips it, with the reason either way. It is
// not for skips of other kinds (-short, a feature of another platform, an
// attack that did not work unconfined).
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	why := fmt.Sprintf(format, args...)
	if CI() {
		t.Fatal("CI=true and the host lacks what this test needs: " + why)
		return
	}
	t.Skip("the host lacks what this test needs: " + why)
}

// MissingPart is Missing for a test that can still do the rest of its work
// without what the host lacks (the escape matrix without a tier-1 box still
// runs unconfined and on tier 0): under CI=true it fails the test, elsewhere
// it logs the reason and lets the test go on.
func MissingPart(t testing.TB, format string, args ...any) {
	t.Helper()
	why := fmt.Sprintf(format, args...)
	if CI() {
		t.Fatal("CI=true and the host lacks what part of this test needs: " + why)
		return
	}
	t.Log("the host lacks what part of this test needs, which goes untested here: " + why)
}

// CI reports whether the tests run in CI (CI=true), where every host
// requirement must be met.
func CI() bool { return os.Getenv("CI") == "true" }

// probeCgroup makes and removes a group under this process's own cgroup,
// where airlock's cgroup package makes its groups: in the unified hierarchy
// when /sys/fs/cgroup is one, else in each of the v1 memory, cpu and pids
// hierarchies.
func probeCgroup() string {
	const root = "/sys/fs/cgroup"
	own, err := ownCgroups()
	if err != nil {
		return "cannot read this process's cgroups (" + err.Error() + ")"
	}
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		if err := tryGroup(filepath.Join(root, own[""])); err != nil {
			return "cgroup v2 is not writable here (" + err.Error() + "); run as root, or in a delegated cgroup"
		}
		return ""
	}
	for _, c := range []string{"memory", "cpu", "pids"} {
		path, ok := own[c]
		if !ok {
			return "no cgroup v2 hierarchy at " + root + ", and no cgroup v1 " + c + " controller"
		}
		if err := tryGroup(filepath.Join(root, c, path)); err != nil {
			return "no cgroup v2 hierarchy at " + root + ", and cgroup v1 " + c + " is not writable (" + err.Error() + "); run as root"
		}
	}
	return ""
}

// ownCgroups reads /proc/self/cgroup: the process's group per v1
// controller, and under "" its unified (v2) group.
func ownCgroups() (map[string]string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	own := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			own[""] = parts[2]
		}
		for _, c := range strings.Split(parts[1], ",") {
			own[c] = parts[2]
		}
	}
	return own, nil
}

// tryGroup makes a group under parent and removes it again.
func tryGroup(parent string) error {
	if _, err := os.Stat(filepath.Join(parent, "cgroup.procs")); err != nil {
		return err
	}
	dir := filepath.Join(parent, fmt.Sprintf("airlock-test-probe-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	return os.Remove(dir)
}
