package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/errs"
)

func realOf(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Skipf("%s: %v", p, err)
	}
	return r
}

func TestPlanExecList(t *testing.T) {
	wd := t.TempDir()
	script := filepath.Join(wd, "build.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho built\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	envScript := filepath.Join(wd, "envtool")
	if err := os.WriteFile(envScript, []byte("#!/usr/bin/env cat\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sh, ls, ld := realOf(t, "/bin/sh"), realOf(t, "/usr/bin/ls"), realOf(t, "/lib64/ld-linux-x86-64.so.2")
	tests := []struct {
		name     string
		programs []string
		want     []string // must be in the list
		not      []string // must not
	}{
		{"only the shell", nil, []string{sh, ld}, []string{ls}},
		{"a bare name, its real file and loader", []string{"ls"}, []string{sh, ld, ls}, []string{realOf(t, "/usr/bin/cat")}},
		{"a script and its interpreter", []string{"./build.sh"}, []string{script, sh}, nil},
		{"env in a #! line names a program", []string{"./envtool"}, []string{envScript, realOf(t, "/usr/bin/env"), realOf(t, "/usr/bin/cat")}, nil},
		{"git's helper directory", []string{"git"}, []string{realOf(t, "/usr/bin/git"), realOf(t, "/usr/lib/git-core")}, nil},
		{"gcc's helpers", []string{"gcc"}, []string{realOf(t, "/usr/lib/gcc"), realOf(t, "/usr/bin/as"), realOf(t, "/usr/bin/ld")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := planExecList(&ExecSpec{Programs: tt.programs}, defaultBoxPATH, wd)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("got %v, want it to hold %s", got, w)
				}
			}
			for _, n := range tt.not {
				if slices.Contains(got, n) {
					t.Errorf("got %v, want it without %s", got, n)
				}
			}
		})
	}
}

func TestPlanExecListMissing(t *testing.T) {
	wd := t.TempDir()
	tests := []struct{ prog, want string }{
		{"no-such-program-airlock", `program "no-such-program-airlock" not found on the box's PATH ` + defaultBoxPATH},
		{"./gradlew", `program "./gradlew" not found at ` + filepath.Join(wd, "gradlew")},
		{"/opt/none/tool", `program "/opt/none/tool" not found at /opt/none/tool`},
	}
	for _, tt := range tests {
		t.Run(tt.prog, func(t *testing.T) {
			_, err := planExecList(&ExecSpec{Programs: []string{"ls", tt.prog}}, defaultBoxPATH, wd)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			if errs.ClassOf(err) != errs.NotFound {
				t.Errorf("class %v, want NotFound", errs.ClassOf(err))
			}
		})
	}
}

func TestShebang(t *testing.T) {
	tests := []struct{ in, interp, arg string }{
		{"#!/bin/sh\n", "/bin/sh", ""},
		{"#! /usr/bin/env  python3 -u\n", "/usr/bin/env", "python3"},
		{"#!\n", "", ""},
		{"#!/bin/bash -e", "/bin/bash", "-e"},
	}
	for _, tt := range tests {
		if i, a := shebang([]byte(tt.in)); i != tt.interp || a != tt.arg {
			t.Errorf("shebang(%q) = %q, %q; want %q, %q", tt.in, i, a, tt.interp, tt.arg)
		}
	}
}

// TestLandlockFinding: a host without Landlock is told so, with the fix.
func TestLandlockFinding(t *testing.T) {
	for _, tt := range []struct {
		l    LandlockReport
		want string
	}{
		{LandlockReport{ABI: 0}, "this kernel has no Landlock"},
		{LandlockReport{Err: "EPERM"}, "could not be queried"},
		{LandlockReport{ABI: 7}, ""},
	} {
		r := Report{Landlock: tt.l}
		r.landlockFindings()
		switch {
		case tt.want == "" && len(r.Findings) != 0:
			t.Errorf("%+v: got %v, want no finding", tt.l, r.Findings)
		case tt.want != "" && (len(r.Findings) != 1 || !strings.Contains(r.Findings[0].Text, tt.want) || r.Findings[0].Fix == ""):
			t.Errorf("%+v: got %v, want one finding with a fix saying %q", tt.l, r.Findings, tt.want)
		}
	}
}

// TestProgramTrees: the program directories beyond the PATH are hidden
// where they exist, once each, and a directory the PATH already hides is
// not named again.
func TestProgramTrees(t *testing.T) {
	if !isDir("/usr/lib/git-core") {
		t.Skip("no /usr/lib/git-core on this host")
	}
	got := programTrees([]string{"/usr/bin"})
	if !slices.Contains(got, "/usr/lib/git-core") {
		t.Errorf("programTrees = %q, want /usr/lib/git-core among them", got)
	}
	seen := map[string]bool{}
	for _, d := range got {
		if seen[d] || !isDir(d) {
			t.Errorf("programTrees: %s repeated or not a directory", d)
		}
		seen[d] = true
	}
	for _, d := range programTrees([]string{"/usr/lib"}) {
		if withinAny(d, []string{"/usr/lib"}) != "" {
			t.Errorf("programTrees with /usr/lib hidden names %s beneath it", d)
		}
	}
}
