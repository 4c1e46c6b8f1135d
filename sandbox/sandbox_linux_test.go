package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/testsupport"
)

func TestParseTier(t *testing.T) {
	tests := []struct {
		in   string
		want Tier
		bad  bool
	}{
		{"auto", TierAuto, false}, {"", TierAuto, false}, {"off", Tier0, false}, {"0", Tier0, false},
		{"1", Tier1, false}, {"2", Tier2, false}, {"3", 0, true}, {"yes", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTier(tt.in)
			if (err != nil) != tt.bad {
				t.Fatalf("ParseTier(%q) error = %v, want error %v", tt.in, err, tt.bad)
			}
			if !tt.bad && got != tt.want {
				t.Errorf("ParseTier(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestVersionLess(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"0.8.0", "0.12.0", true}, {"0.12.0", "0.12.0", false}, {"0.12.1", "0.12.0", false},
		{"1.0.0", "0.12.0", false}, {"0.11.9", "0.12.0", true}, {"", "0.12.0", true}, {"x.y", "0.12.0", true},
	}
	for _, tt := range tests {
		if got := versionLess(tt.a, tt.b); got != tt.want {
			t.Errorf("versionLess(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// tree makes a directory layout for the resolver tests:
//
//	root/outside/secret          a file outside every writable directory
//	root/work/                   the writable directory
//	root/work/ok/                a plain directory in it
//	root/work/link -> ../outside a link inside the writable directory
//	root/elsewhere/into -> ../work/ok  a link outside that reaches inside
//	root/elsewhere/plain -> ../outside a link outside that stays outside
func tree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "outside"), 0o755))
	must(os.WriteFile(filepath.Join(root, "outside", "secret"), []byte("s"), 0o644))
	must(os.MkdirAll(filepath.Join(root, "work", "ok"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "elsewhere"), 0o755))
	must(os.Symlink("../outside", filepath.Join(root, "work", "link")))
	must(os.Symlink("../work/ok", filepath.Join(root, "elsewhere", "into")))
	must(os.Symlink("../outside", filepath.Join(root, "elsewhere", "plain")))
	return root
}

func TestPin(t *testing.T) {
	root := tree(t)
	work := filepath.Join(root, "work")
	tests := []struct {
		name     string
		path     string
		wantReal string
		refuse   string // substring of the refusal, "" when it must pin
	}{
		{"plain path outside", filepath.Join(root, "outside", "secret"), filepath.Join(root, "outside", "secret"), ""},
		{"plain dir inside writable", filepath.Join(work, "ok"), filepath.Join(work, "ok"), ""},
		{"link inside writable", filepath.Join(work, "link", "secret"), "", "symbolic link"},
		{"link outside reaching inside", filepath.Join(root, "elsewhere", "into"), "", "inside the writable directory"},
		{"link outside staying outside", filepath.Join(root, "elsewhere", "plain", "secret"), filepath.Join(root, "outside", "secret"), ""},
		{"dotdot climbing out", filepath.Join(work, "ok") + "/../../outside/secret", filepath.Join(root, "outside", "secret"), ""},
		{"missing", filepath.Join(root, "nope"), "", "no such file"},
		{"relative", "outside/secret", "", "not an absolute path"},
	}
	// Each path is pinned by a walk from the root, and by one from a pin
	// of the tree above it (pinFrom), which must answer alike.
	from, err := pin(root, []string{work})
	if err != nil {
		t.Fatal(err)
	}
	defer from.f.Close()
	for _, tt := range tests {
		for _, via := range []struct {
			name string
			pin  func(path string, writable []string) (*pinned, error)
		}{
			{"from the root", pin},
			{"from a pinned parent", func(path string, writable []string) (*pinned, error) { return pinFrom(from, path, writable) }},
		} {
			t.Run(tt.name+"/"+via.name, func(t *testing.T) {
				testPin(t, via.pin, tt.path, []string{work}, tt.wantReal, tt.refuse)
			})
		}
	}
}

// TestPinFromKeepsItsParent: pinFrom walks from the parent's own
// descriptor, so no answer, pinned or refused, may close it or hand it
// out: a walk that ends where it began (a link to ".") gets a descriptor
// of its own.
func TestPinFromKeepsItsParent(t *testing.T) {
	root := tree(t)
	outside := filepath.Join(root, "outside")
	if err := os.Symlink(".", filepath.Join(outside, "self")); err != nil {
		t.Fatal(err)
	}
	from, err := pin(outside, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer from.f.Close()
	want := mustStatFD(t, from.f)
	for _, path := range []string{filepath.Join(outside, "self"), filepath.Join(outside, "secret"), filepath.Join(outside, "nope"), filepath.Join(outside, "secret", "x"), outside + "/self/../outside"} {
		pn, err := pinFrom(from, path, nil)
		if err == nil {
			if pn.f.Fd() == from.f.Fd() {
				t.Fatalf("pinFrom(%s) handed out the parent's descriptor", path)
			}
			pn.f.Close()
		}
		if !os.SameFile(want, mustStatFD(t, from.f)) {
			t.Fatalf("after pinFrom(%s) (%v) the parent's descriptor is gone", path, err)
		}
	}
	pn, err := pinFrom(from, filepath.Join(outside, "self"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pn.f.Close()
	if pn.real != outside || !os.SameFile(want, mustStatFD(t, pn.f)) {
		t.Fatalf("pinFrom(self) = %s, want %s", pn.real, outside)
	}
}

// testPin checks what pinning path gives: a refusal containing refuse, or
// (refuse "") a descriptor of wantReal.
func testPin(t *testing.T, pin func(string, []string) (*pinned, error), path string, writable []string, wantReal, refuse string) {
	t.Helper()
	pn, err := pin(path, writable)
	if refuse != "" {
		if err == nil {
			pn.f.Close()
			t.Fatalf("pin(%s) = %s, want refusal containing %q", path, pn.real, refuse)
		}
		if !strings.Contains(err.Error(), refuse) {
			t.Fatalf("pin(%s) error = %q, want it to contain %q", path, err, refuse)
		}
		return
	}
	if err != nil {
		t.Fatalf("pin(%s): %v", path, err)
	}
	defer pn.f.Close()
	if pn.real != wantReal {
		t.Errorf("pin(%s).real = %s, want %s", path, pn.real, wantReal)
	}
	st, err := os.Stat(wantReal)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(st, mustStatFD(t, pn.f)) {
		t.Errorf("pin(%s) holds a different file than %s", path, wantReal)
	}
}

func mustStatFD(t *testing.T, f *os.File) os.FileInfo {
	t.Helper()
	st, err := os.Stat("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestPlanRefuses(t *testing.T) {
	testsupport.Require(t, testsupport.Bwrap)
	root := tree(t)
	work := filepath.Join(root, "work")
	exe, _ := os.Executable()
	base := func() Spec {
		return Spec{Workdir: work, Write: []string{work}, Writable: true, Env: []string{"PATH=/usr/bin"}}
	}
	tests := []struct {
		name  string
		spec  func() Spec
		tier  Tier
		class errs.Class
		want  string
	}{
		{"write grant into /etc", func() Spec { s := base(); s.Write = append(s.Write, "/etc"); return s }, Tier1, errs.Unavailable, "may not reach /etc"},
		{"write grant of /", func() Spec { s := base(); s.Write = []string{"/"}; return s }, Tier1, errs.Unavailable, "may not reach"},
		{"write grant through a link into /etc", func() Spec {
			l := filepath.Join(root, "etclink")
			os.Symlink("/etc", l)
			s := base()
			s.Write = append(s.Write, l)
			return s
		}, Tier1, errs.Unavailable, "resolves to /etc"},
		{"write grant through a link in another write grant", func() Spec {
			os.Symlink(filepath.Join(root, "outside"), filepath.Join(work, "out"))
			s := base()
			s.Write = append(s.Write, filepath.Join(work, "out"))
			return s
		}, Tier1, errs.Unavailable, "symbolic link"},
		{"workdir through a link in a write grant", func() Spec {
			s := base()
			s.Workdir = filepath.Join(work, "link")
			return s
		}, Tier1, errs.Unavailable, "symbolic link"},
		{"read through a link in the writable dir", func() Spec { s := base(); s.Read = []string{filepath.Join(work, "link")}; return s }, Tier1, errs.Unavailable, "symbolic link"},
		{"read of /proc", func() Spec { s := base(); s.Read = []string{"/proc/1"}; return s }, Tier1, errs.Unavailable, "kernel's interfaces"},
		{"workdir /", func() Spec { s := base(); s.Workdir = "/"; s.Write = nil; return s }, Tier1, errs.Unavailable, "whole file system"},
		{"workdir in /proc", func() Spec { s := base(); s.Workdir = "/proc/self"; s.Write = nil; return s }, Tier1, errs.Unavailable, "kernel's interfaces"},
		{"missing workdir", func() Spec { s := base(); s.Workdir = filepath.Join(root, "gone"); return s }, Tier1, errs.Invalid, "working directory"},
		{"relative workdir", func() Spec { s := base(); s.Workdir = "work"; return s }, Tier1, errs.Invalid, "not absolute"},
		{"bad env entry", func() Spec { s := base(); s.Env = []string{"NOEQUALS"}; return s }, Tier1, errs.Invalid, "KEY=VALUE"},
		{"negative limit", func() Spec { s := base(); s.Limits.Pids = -1; return s }, Tier1, errs.Invalid, "negative"},
		{"tier 2 with network and no proxy socket", func() Spec {
			s := base()
			s.Net = &NetSpec{ProxySocket: "/nonexistent.sock", Token: "t"}
			return s
		}, Tier2, errs.Unavailable, "egress proxy socket"},
		{"unknown tier", base, Tier(7), errs.Invalid, "want 0, 1 or 2"},
	}
	if probeRunsc(os.Getenv("PATH"), nil).Usable {
		// The tier-2 planner refuses what the tier-1 one does.
		for _, tt := range tests {
			if tt.tier == Tier1 {
				tt.name += " at tier 2"
				tt.tier = Tier2
				tests = append(tests, tt)
			}
		}
	}
	if probeGVisor(os.Getenv("PATH"), nil) == "" {
		tests = append(tests, struct {
			name  string
			spec  func() Spec
			tier  Tier
			class errs.Class
			want  string
		}{"tier 2 names gVisor", base, Tier2, errs.Unavailable, "gVisor (runsc) is not installed"})
	}
	if !probeYama().Present {
		tests = append(tests, struct {
			name  string
			spec  func() Spec
			tier  Tier
			class errs.Class
			want  string
		}{"ptrace without Yama", func() Spec { s := base(); s.Ptrace = true; return s }, Tier1, errs.Unavailable, "no Yama"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			box, err := Plan(tt.spec(), tt.tier, exe)
			if err == nil {
				box.Close()
				t.Fatalf("Plan succeeded, want a refusal containing %q", tt.want)
			}
			if got := errs.ClassOf(err); got != tt.class {
				t.Errorf("class = %v, want %v (%v)", got, tt.class, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestPlanLeavesNoStubsAfterClose(t *testing.T) {
	testsupport.Require(t, testsupport.Bwrap)
	work := t.TempDir()
	exe, _ := os.Executable()
	box, err := Plan(Spec{Workdir: work, Write: []string{work}, Writable: true}, Tier1, exe)
	if err != nil {
		t.Fatal(err)
	}
	if len(box.Stubs) == 0 {
		t.Fatal("Plan made no stubs for missing protected paths")
	}
	if !box.Protected {
		t.Error("Box.Protected = false in fix mode")
	}
	if err := box.Close(); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(work)
	if len(ents) != 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("left in the working directory after Close: %v", names)
	}
}

func TestRemoveStubsLeavesChangedFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, ".vscode")
	if err := os.WriteFile(p, nil, 0); err != nil {
		t.Fatal(err)
	}
	sys := statOf(t, p)
	// Someone wrote into it: it is no longer airlock's placeholder.
	os.WriteFile(p, []byte("user data"), 0o644)
	err := RemoveStubs([]Stub{{Path: p, Dev: sys.dev, Ino: sys.ino}})
	if err == nil || !strings.Contains(err.Error(), "no longer empty") {
		t.Errorf("RemoveStubs error = %v, want it to refuse a non-empty file", err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Errorf("the changed file was removed: %v", err)
	}
	if err := RemoveStubs([]Stub{{Path: filepath.Join(dir, "gone")}}); err != nil {
		t.Error("a stub already gone must not be an error")
	}
}

type devIno struct{ dev, ino uint64 }

func statOf(t *testing.T, p string) devIno {
	t.Helper()
	pn, err := pin(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	pn.f.Close()
	return devIno{pn.dev, pn.ino}
}

func TestProbe(t *testing.T) {
	r := Probe()
	if r.OS != "linux" {
		t.Errorf("OS = %q, want linux", r.OS)
	}
	for _, f := range r.Findings {
		if f.Text == "" || f.Fix == "" {
			t.Errorf("finding %+v lacks its text or its fix", f)
		}
	}
	if r.Bubblewrap.Path != "" && r.UserNS.Available && r.Seccomp.Available {
		if r.Tier() != Tier1 {
			t.Errorf("Tier() = %v with bubblewrap, user namespaces and seccomp, want 1 (%s)", r.Tier(), r.Why)
		}
		if !r.Protected {
			t.Error("Protected = false at tier 1")
		}
	}
	if r.Bubblewrap.Version != "" && versionLess(r.Bubblewrap.Version, fixedBwrap) {
		found := false
		for _, f := range r.Findings {
			if f.Topic == "bubblewrap advisory" && strings.Contains(f.Text, "mitigates") {
				found = true
			}
		}
		if !found {
			t.Errorf("bubblewrap %s is older than %s but there is no advisory finding saying how it is mitigated", r.Bubblewrap.Version, fixedBwrap)
		}
	}
}

func TestLookPath(t *testing.T) {
	tests := []struct {
		name, prog, path, want string
		notFound               bool
	}{
		{"on PATH", "sh", "/nonexistent:/bin", "/bin/sh", false},
		{"absolute", "/bin/sh", "", "/bin/sh", false},
		{"missing", "no-such-prog-airlock", "/bin:/usr/bin", "", true},
		{"directory", "/bin", "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LookPath(tt.prog, tt.path, "/")
			if (err != nil) != tt.notFound {
				t.Fatalf("LookPath(%q) error %v, want not found %v", tt.prog, err, tt.notFound)
			}
			if err != nil && errs.ClassOf(err) != errs.NotFound {
				t.Errorf("LookPath(%q) error class %v, want not found", tt.prog, errs.ClassOf(err))
			}
			if got != tt.want {
				t.Errorf("LookPath(%q) = %q, want %q", tt.prog, got, tt.want)
			}
		})
	}
}

func TestUserNSFrom(t *testing.T) {
	sysctls := func(m map[string]int) func(string) (int, bool) {
		return func(p string) (int, bool) { v, ok := m[p]; return v, ok }
	}
	ubuntu := map[string]int{"/proc/sys/user/max_user_namespaces": 1000, "/proc/sys/kernel/apparmor_restrict_unprivileged_userns": 1}
	tests := []struct {
		name       string
		m          map[string]int
		hasNS      bool
		privileged bool
		available  bool
		fix        string
	}{
		{"ubuntu 24.04 unprivileged", ubuntu, true, false, false, "apparmor_parser -r /etc/apparmor.d/bwrap-userns-restrict"},
		{"ubuntu 24.04 as root", ubuntu, true, true, true, ""},
		{"switched off", map[string]int{"/proc/sys/user/max_user_namespaces": 0}, true, true, false, "user.max_user_namespaces=15000"},
		{"debian clone sysctl", map[string]int{"/proc/sys/user/max_user_namespaces": 10, "/proc/sys/kernel/unprivileged_userns_clone": 0}, true, false, false, "kernel.unprivileged_userns_clone=1"},
		{"no kernel support", map[string]int{}, false, true, false, "CONFIG_USER_NS"},
		{"plain", map[string]int{"/proc/sys/user/max_user_namespaces": 10}, true, false, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := userNSFrom(sysctls(tt.m), tt.hasNS, tt.privileged)
			if u.Available != tt.available {
				t.Fatalf("Available = %v, want %v (%s)", u.Available, tt.available, u.Why)
			}
			if !strings.Contains(u.Fix, tt.fix) {
				t.Errorf("Fix = %q, want it to contain %q", u.Fix, tt.fix)
			}
			if !u.Available && u.Why == "" {
				t.Error("unavailable without a reason")
			}
		})
	}
}
