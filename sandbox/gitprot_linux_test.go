package sandbox

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/testsupport"
)

// fakeRepo lays out the files git looks for in a git directory, without
// running git: HEAD, objects, refs and a config.
func fakeRepo(t *testing.T, gitDir, config string) {
	t.Helper()
	for _, d := range []string{"objects", "refs/heads", "hooks", "info"} {
		if err := os.MkdirAll(filepath.Join(gitDir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(gitDir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.WriteFile(filepath.Join(gitDir, "config"), []byte(config), 0o644)
}

// listing is every path under dir, for a before/after comparison.
func listing(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			out = append(out, strings.TrimPrefix(p, dir)+" "+fi.Mode().String())
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// TestGitPlanRefuses: a repository layout airlock cannot hold refuses the
// box with the path and the reason, and leaves the tree as it was.
func TestGitPlanRefuses(t *testing.T) {
	testsupport.Require(t, testsupport.Bwrap)
	exe, _ := os.Executable()
	tests := []struct {
		name   string
		layout func(t *testing.T, work string)
		want   string
	}{
		{"a chain of commondir files", func(t *testing.T, work string) {
			fakeRepo(t, filepath.Join(work, ".git"), "[core]\n")
			fakeRepo(t, filepath.Join(work, "c"), "[core]\n")
			os.WriteFile(filepath.Join(work, ".git", "commondir"), []byte("../c\n"), 0o644)
			os.WriteFile(filepath.Join(work, "c", "commondir"), []byte("../.git\n"), 0o644)
		}, "commondir of its own"},
		{"an empty commondir", func(t *testing.T, work string) {
			fakeRepo(t, filepath.Join(work, ".git"), "[core]\n")
			os.WriteFile(filepath.Join(work, ".git", "commondir"), nil, 0o644)
		}, "empty commondir"},
		{"a .git link in the writable directory", func(t *testing.T, work string) {
			other := t.TempDir()
			fakeRepo(t, other, "[core]\n")
			os.Symlink(other, filepath.Join(work, ".git"))
		}, "symbolic link"},
		{"an include reached through a link into the writable directory", func(t *testing.T, work string) {
			outside := t.TempDir()
			os.WriteFile(filepath.Join(work, "inc"), []byte("[core]\n"), 0o644)
			os.Symlink(filepath.Join(work, "inc"), filepath.Join(outside, "inc"))
			fakeRepo(t, filepath.Join(work, ".git"), "[include]\n\tpath = "+filepath.Join(outside, "inc")+"\n")
		}, "include.path"},
		{"a config airlock cannot read exactly", func(t *testing.T, work string) {
			fakeRepo(t, filepath.Join(work, ".git"), "[core\n\tfsmonitor = x\n")
		}, "cannot read exactly"},
		{"a gitdir: file git cannot read", func(t *testing.T, work string) {
			os.WriteFile(filepath.Join(work, ".git"), []byte("nonsense\n"), 0o644)
		}, "gitdir"},
	}
	tests = append(tests, struct {
		name   string
		layout func(t *testing.T, work string)
		want   string
	}{"a write grant of a repository's hooks", func(t *testing.T, work string) {
		fakeRepo(t, filepath.Join(work, ".git"), "[core]\n")
	}, "which git on the host reads or runs"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			work := t.TempDir()
			tt.layout(t, work)
			before := listing(t, work)
			spec := Spec{Workdir: work, Write: []string{work}, Writable: true}
			if strings.Contains(tt.name, "hooks") {
				spec.Write = append(spec.Write, filepath.Join(work, ".git", "hooks"))
			}
			box, err := Plan(spec, Tier1, exe)
			if err == nil {
				box.Close()
				t.Fatalf("Plan succeeded, want a refusal containing %q", tt.want)
			}
			if errs.ClassOf(err) != errs.Unavailable || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), work) {
				t.Errorf("error = %v (%v), want Unavailable naming the path and %q", err, errs.ClassOf(err), tt.want)
			}
			if after := listing(t, work); strings.Join(after, "\n") != strings.Join(before, "\n") {
				t.Errorf("the refused plan changed the tree:\nbefore %q\nafter  %q", before, after)
			}
		})
	}
}

// TestGitPlanHolds checks what a plan holds for one repository: what its
// config names, placeholders where files are missing (a commondir naming
// the directory itself), and nothing of git's state.
func TestGitPlanHolds(t *testing.T) {
	testsupport.Require(t, testsupport.Bwrap)
	exe, _ := os.Executable()
	work := t.TempDir()
	fakeRepo(t, filepath.Join(work, ".git"), "[core]\n\thooksPath = .husky\n\tfsmonitor = scripts/fsmon.sh --x\n"+
		"[include]\n\tpath = ../.gitconfig\n[includeIf \"onbranch:main\"]\n\tpath = ../conf/extra\n[alias]\n\tx = !tools/x.sh\n")
	os.MkdirAll(filepath.Join(work, "scripts"), 0o755)
	os.WriteFile(filepath.Join(work, "scripts", "fsmon.sh"), []byte("#!/bin/sh\n"), 0o755)
	box, err := Plan(Spec{Workdir: work, Write: []string{work}, Writable: true}, Tier1, exe)
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	held := map[string]string{} // path -> "stub" or "bound"
	for _, s := range box.Stubs {
		held[s.Path] = "stub:" + s.Content
	}
	for _, pn := range box.config.Pins {
		if _, ok := held[pn.Path]; !ok {
			held[pn.Path] = "bound"
		}
	}
	want := map[string]string{
		".git/config": "bound", ".git/hooks": "bound", ".git/info": "bound", ".git/commondir": "stub:.",
		".git/remotes": "stub:", ".git/modules": "stub:", ".git/worktrees": "stub:", ".git/config.worktree": "stub:",
		".husky": "stub:", "scripts/fsmon.sh": "bound", ".gitconfig": "stub:", "conf": "stub:", "conf/extra": "stub:",
		"tools": "stub:", "tools/x.sh": "stub:", ".bashrc": "stub:", ".cursor": "stub:",
	}
	for rel, how := range want {
		if got := held[filepath.Join(work, rel)]; got != how {
			t.Errorf("%s: held %q, want %q", rel, got, how)
		}
	}
	for _, state := range []string{".git", ".git/objects", ".git/refs", ".git/HEAD", ".git/index"} {
		if got := held[filepath.Join(work, state)]; got != "" && got != "bound" {
			t.Errorf("%s is held as %q; git's state must stay writable", state, got)
		}
	}
}

func TestUnprotectAndBuildFiles(t *testing.T) {
	testsupport.Require(t, testsupport.Bwrap)
	exe, _ := os.Executable()
	stubs := func(s Spec) map[string]bool {
		t.Helper()
		box, err := Plan(s, Tier1, exe)
		if err != nil {
			t.Fatal(err)
		}
		defer box.Close()
		out := map[string]bool{}
		for _, st := range box.Stubs {
			out[filepath.Base(st.Path)] = true
		}
		return out
	}
	work := t.TempDir()
	base := Spec{Workdir: work, Write: []string{work}, Writable: true}
	if got := stubs(base); !got[".vscode"] || got["Makefile"] {
		t.Errorf("default: .vscode held %v, Makefile held %v; want true, false", got[".vscode"], got["Makefile"])
	}
	s := base
	s.Unprotect, s.UnattendedBuild = []string{".vscode/"}, true
	if got := stubs(s); got[".vscode"] || !got["Makefile"] || !got[".cursor"] {
		t.Errorf("unprotect .vscode, unattended build: .vscode %v, Makefile %v, .cursor %v; want false, true, true", got[".vscode"], got["Makefile"], got[".cursor"])
	}
	s.Unprotect = []string{".git/"}
	if box, err := Plan(s, Tier1, exe); err == nil {
		box.Close()
		t.Errorf("Plan took git's files off the list")
	} else if errs.ClassOf(err) != errs.Invalid {
		t.Errorf("error %v, want Invalid", err)
	}
}

// TestGitPlanSubmodule: a submodule's git directory is planned from the
// superproject's modules/, with its work tree from core.worktree, so a
// relative core.hooksPath is held where git runs the hooks.
func TestGitPlanSubmodule(t *testing.T) {
	testsupport.Require(t, testsupport.Bwrap)
	exe, _ := os.Executable()
	work := t.TempDir()
	fakeRepo(t, filepath.Join(work, ".git"), "[core]\n")
	fakeRepo(t, filepath.Join(work, ".git", "modules", "sub"), "[core]\n\tworktree = ../../../sub\n\thooksPath = .hooks\n")
	os.MkdirAll(filepath.Join(work, "sub"), 0o755)
	os.WriteFile(filepath.Join(work, "sub", ".git"), []byte("gitdir: ../.git/modules/sub\n"), 0o644)
	box, err := Plan(Spec{Workdir: work, Write: []string{work}, Writable: true}, Tier1, exe)
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	held := map[string]bool{}
	for _, s := range box.Stubs {
		held[s.Path] = true
	}
	for _, pn := range box.config.Pins {
		held[pn.Path] = true
	}
	for _, rel := range []string{"sub/.hooks", "sub/.git", ".git/modules/sub/config", ".git/modules/sub/hooks", ".git/modules/sub/commondir", "sub/.vscode"} {
		if !held[filepath.Join(work, rel)] {
			t.Errorf("%s is not held", rel)
		}
	}
	if held[filepath.Join(work, ".git/modules/sub/.hooks")] {
		t.Errorf("core.hooksPath was taken from the git directory, not the work tree")
	}
}

// TestGitPlanOutsideConfigs: the person's global config and the config of
// the repository a write grant lies in are read too; what they name inside
// the grant is held.
func TestGitPlanOutsideConfigs(t *testing.T) {
	testsupport.Require(t, testsupport.Bwrap)
	exe, _ := os.Executable()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	repo := t.TempDir()
	build := filepath.Join(repo, "build")
	os.MkdirAll(build, 0o755)
	fakeRepo(t, filepath.Join(repo, ".git"), "[include]\n\tpath = ../build/gitconfig\n")
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[core]\n\thooksPath = "+filepath.Join(build, "hooks")+"\n"), 0o644)
	box, err := Plan(Spec{Workdir: repo, Write: []string{build}, Writable: true}, Tier1, exe)
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	held := map[string]bool{}
	for _, s := range box.Stubs {
		held[s.Path] = true
	}
	for _, want := range []string{filepath.Join(build, "gitconfig"), filepath.Join(build, "hooks")} {
		if !held[want] {
			t.Errorf("%s is not held", want)
		}
	}
}
