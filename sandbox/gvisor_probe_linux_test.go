package sandbox

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// copyAs copies the file src to dir/runsc, with extra appended (an ELF
// file stays one with data after its segments), and returns the copy's
// path.
func copyAs(t *testing.T, src, extra string) string {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		testsupport.Missing(t, "no %s to copy: %v", src, err)
	}
	defer in.Close()
	dst := filepath.Join(t.TempDir(), "runsc")
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(out, extra); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestProbeRunscFiles: the probe reads real binaries named runsc found on
// PATH. A dynamically linked one (a copy of /bin/ls), one without a build
// date, one built before the floor, and a file that is not a program are
// refused, each with the reason and the fix; a static one of a release
// after the floor is accepted, and systrap is the platform every time.
func TestProbeRunscFiles(t *testing.T) {
	dynamic, static := "/bin/ls", "/sbin/ldconfig" // Debian's ldconfig is static-pie
	rows := []struct {
		name   string
		file   func(t *testing.T) string
		usable bool
		why    string
		fix    string
	}{
		{"a dynamic binary renamed runsc", func(t *testing.T) string { return copyAs(t, dynamic, "") }, false, "is dynamically linked", "CGO_ENABLED=0"},
		{"a static binary without a build date", func(t *testing.T) string { return copyAs(t, static, "") }, false, "carries no build date", "scripts/setup.sh"},
		{"a static build of 2022", func(t *testing.T) string { return copyAs(t, static, "\x00release-20220228.0\x00") }, false, "was built on 20220228, older than " + gvisorFloor, "scripts/setup.sh"},
		{"a static build after the floor", func(t *testing.T) string { return copyAs(t, static, "\x00release-20270105.0\x00") }, true, "", ""},
		{"a script named runsc", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "runsc")
			if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			return p
		}, false, "is not a readable ELF binary", "scripts/setup.sh"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			path := r.file(t)
			got := probeRunsc(filepath.Dir(path), nil)
			if got.Path != path {
				t.Fatalf("found %q on PATH %s, want %q", got.Path, filepath.Dir(path), path)
			}
			if got.Usable != r.usable || !strings.Contains(got.Why, r.why) || !strings.Contains(got.Fix, r.fix) {
				t.Errorf("got usable %v, why %q, fix %q; want usable %v, a reason with %q and a fix with %q", got.Usable, got.Why, got.Fix, r.usable, r.why, r.fix)
			}
			if got.Platform != "systrap" {
				t.Errorf("platform %q, want systrap", got.Platform)
			}
		})
	}
	t.Run("the runsc scripts/setup.sh installs", func(t *testing.T) {
		path, err := exec.LookPath("runsc")
		if err != nil {
			testsupport.Missing(t, "no runsc on PATH: %v", err)
		}
		got := probeRunsc(filepath.Dir(path), nil)
		if !got.Usable || !got.Static || got.Date < gvisorFloor {
			t.Errorf("the installed runsc is refused: %+v", got)
		}
	})
}

// TestGVisorNeverKVM: the runsc command line of a planned box names
// systrap, and no flag anywhere in it asks for KVM.
func TestGVisorNeverKVM(t *testing.T) {
	testsupport.Require(t, testsupport.Root)
	if _, err := Resolve(Tier2, ProbeHost()); err != nil {
		testsupport.Missing(t, "tier 2 unavailable here: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := Plan(Spec{Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}}, Tier2, exe)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	argv, err := b.GVisorCommand([]string{"true"})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.Index(argv, "--platform")
	if i < 0 || i+1 >= len(argv) || argv[i+1] != "systrap" {
		t.Errorf("runsc's command line %q does not pick systrap", argv)
	}
	for _, a := range argv {
		if strings.Contains(strings.ToLower(a), "kvm") {
			t.Errorf("runsc's command line %q mentions KVM", argv)
		}
	}
}
