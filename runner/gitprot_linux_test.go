package runner

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/sandbox"
)

// hostGit runs the person's git on the host, after the run, with an
// environment of its own (no global or system config).
func hostGit(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=p", "GIT_AUTHOR_EMAIL=p@example.invalid", "GIT_COMMITTER_NAME=p", "GIT_COMMITTER_EMAIL=p@example.invalid"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	if out, err := hostGit(t, dir, args...); err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
}

// newRepo makes a repository with one commit in dir.
func newRepo(t *testing.T, dir string) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	mustGit(t, dir, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(dir, "README"), []byte("x\n"), 0o644)
	mustGit(t, dir, "add", "README")
	mustGit(t, dir, "commit", "-q", "-m", "first")
}

// evilConfig is a config that runs code on the person's next `git status`.
func evilConfig(marker string) string {
	return "[core]\n\tfsmonitor = \"touch " + marker + "; false\"\n"
}

// gitAttack is one way a box makes the host's git run its code.
type gitAttack struct {
	name string
	// setup makes the host layout; it returns the spec, the box's script
	// and the host command that must not run the box's code.
	setup func(t *testing.T, marker string) (spec sandbox.Spec, script string, host func() (string, error))
}

func gitAttacks() []gitAttack {
	status := func(t *testing.T, dir string) func() (string, error) {
		return func() (string, error) { return hostGit(t, dir, "status") }
	}
	return []gitAttack{
		{"commondir to a box-made repository", func(t *testing.T, m string) (sandbox.Spec, string, func() (string, error)) {
			wd := t.TempDir()
			newRepo(t, wd)
			script := "mkdir -p evil/objects evil/refs && echo 'ref: refs/heads/main' > evil/HEAD && " +
				"printf '" + strings.ReplaceAll(evilConfig(m), "\n", `\n`) + "' > evil/config && printf ../evil > .git/commondir"
			return fixSpec(t, wd), script, status(t, wd)
		}},
		{"a submodule's config under .git/modules", func(t *testing.T, m string) (sandbox.Spec, string, func() (string, error)) {
			wd := t.TempDir()
			newRepo(t, wd)
			sub := filepath.Join(t.TempDir(), "sub")
			newRepo(t, sub)
			mustGit(t, wd, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "sub")
			script := "printf '" + strings.ReplaceAll(evilConfig(m), "\n", `\n`) + "' >> .git/modules/sub/config"
			return fixSpec(t, wd), script, status(t, filepath.Join(wd, "sub"))
		}},
		{"a git directory made for a submodule not yet initialised", func(t *testing.T, m string) (sandbox.Spec, string, func() (string, error)) {
			wd := t.TempDir()
			newRepo(t, wd)
			up := filepath.Join(t.TempDir(), "up")
			newRepo(t, up)
			mustGit(t, wd, "-c", "protocol.file.allow=always", "submodule", "add", "-q", up, "lib")
			mustGit(t, wd, "commit", "-q", "-m", "lib")
			mustGit(t, wd, "submodule", "deinit", "-q", "-f", "lib")
			os.RemoveAll(filepath.Join(wd, ".git", "modules", "lib"))
			// The box makes the git directory the host's next
			// `git submodule update --init` takes as the submodule's.
			script := "git init -q --bare .git/modules/lib && git -C .git/modules/lib config remote.origin.url " + up + " && " +
				"git -C .git/modules/lib config core.bare false && " +
				"git -C .git/modules/lib config core.worktree ../../../lib && " +
				"printf '#!/bin/sh\\ntouch " + m + "\\n' > .git/modules/lib/hooks/post-checkout && chmod +x .git/modules/lib/hooks/post-checkout"
			return fixSpec(t, wd), script, func() (string, error) {
				return hostGit(t, wd, "-c", "protocol.file.allow=always", "submodule", "update", "--init", "-q")
			}
		}},
		{"an interactive rebase left stopped with an exec line to come", func(t *testing.T, m string) (sandbox.Spec, string, func() (string, error)) {
			wd := t.TempDir()
			newRepo(t, wd)
			os.WriteFile(filepath.Join(wd, "README"), []byte("y\n"), 0o644)
			mustGit(t, wd, "commit", "-q", "-am", "second")
			script := "GIT_SEQUENCE_EDITOR=\"sed -i -e '1i break' -e '1a exec touch " + m + "'\" git rebase -q -i HEAD~1"
			return fixSpec(t, wd), script, func() (string, error) { return hostGit(t, wd, "rebase", "--continue") }
		}},
		{"a linked worktree's commondir", func(t *testing.T, m string) (sandbox.Spec, string, func() (string, error)) {
			wd := t.TempDir()
			newRepo(t, filepath.Join(wd, "main"))
			mustGit(t, filepath.Join(wd, "main"), "worktree", "add", "-q", "../wt")
			script := "mkdir -p evil/objects evil/refs && echo 'ref: refs/heads/main' > evil/HEAD && " +
				"printf '" + strings.ReplaceAll(evilConfig(m), "\n", `\n`) + "' > evil/config && printf " + filepath.Join(wd, "evil") + " > main/.git/worktrees/wt/commondir"
			return fixSpec(t, wd), script, status(t, filepath.Join(wd, "wt"))
		}},
		{"hooks under core.hooksPath in the tree", func(t *testing.T, m string) (sandbox.Spec, string, func() (string, error)) {
			wd := t.TempDir()
			newRepo(t, wd)
			mustGit(t, wd, "config", "core.hooksPath", ".husky")
			script := "mkdir -p .husky && printf '#!/bin/sh\\ntouch " + m + "\\n' > .husky/pre-commit && chmod +x .husky/pre-commit"
			return fixSpec(t, wd), script, func() (string, error) { return hostGit(t, wd, "commit", "-q", "--allow-empty", "-m", "x") }
		}},
		{"a config included from the tree", func(t *testing.T, m string) (sandbox.Spec, string, func() (string, error)) {
			wd := t.TempDir()
			newRepo(t, wd)
			mustGit(t, wd, "config", "include.path", "../.gitconfig")
			script := "printf '" + strings.ReplaceAll(evilConfig(m), "\n", `\n`) + "' > .gitconfig"
			return fixSpec(t, wd), script, status(t, wd)
		}},
		{"a nested repository's config", func(t *testing.T, m string) (sandbox.Spec, string, func() (string, error)) {
			wd := t.TempDir()
			newRepo(t, filepath.Join(wd, "pkg"))
			script := "printf '" + strings.ReplaceAll(evilConfig(m), "\n", `\n`) + "' >> pkg/.git/config"
			return fixSpec(t, wd), script, status(t, filepath.Join(wd, "pkg"))
		}},
		{"a repository made during the run", func(t *testing.T, m string) (sandbox.Spec, string, func() (string, error)) {
			wd := t.TempDir()
			script := "git init -q fresh && printf '" + strings.ReplaceAll(evilConfig(m), "\n", `\n`) + "' >> fresh/.git/config"
			return fixSpec(t, wd), script, status(t, filepath.Join(wd, "fresh"))
		}},
		{"a .git file made during the run", func(t *testing.T, m string) (sandbox.Spec, string, func() (string, error)) {
			wd := t.TempDir()
			script := "mkdir -p d evil/objects evil/refs && echo 'ref: refs/heads/main' > evil/HEAD && " +
				"printf '" + strings.ReplaceAll(evilConfig(m), "\n", `\n`) + "' > evil/config && echo 'gitdir: ../evil' > d/.git"
			return fixSpec(t, wd), script, status(t, filepath.Join(wd, "d"))
		}},
		{"the main repository's hooks from a linked worktree granted commits", func(t *testing.T, m string) (sandbox.Spec, string, func() (string, error)) {
			base := t.TempDir()
			main := filepath.Join(base, "main")
			newRepo(t, main)
			mustGit(t, main, "worktree", "add", "-q", "../wt")
			wt := filepath.Join(base, "wt")
			spec := fixSpec(t, wt)
			spec.Write = append(spec.Write, filepath.Join(main, ".git"))
			script := "printf '#!/bin/sh\\ntouch " + m + "\\n' > " + filepath.Join(main, ".git/hooks/pre-commit") + " && chmod +x " + filepath.Join(main, ".git/hooks/pre-commit")
			return spec, script, func() (string, error) { return hostGit(t, wt, "commit", "-q", "--allow-empty", "-m", "x") }
		}},
	}
}

// TestGitHostTrust runs each attack unconfined first, where the person's
// next git command on the host must run the box's code, then in a tier-1
// box, where it must not.
func TestGitHostTrust(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		testsupport.Missing(t, "git is not installed")
	}
	for _, a := range gitAttacks() {
		t.Run(a.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "ran")
			spec, script, host := a.setup(t, marker)
			o := runIn(t, sandbox.Tier0, spec, "", "/bin/sh", "-c", script)
			if o.err != nil || o.res.ExitCode != 0 {
				t.Fatalf("unconfined, the attack did not run: %v %d %s", o.err, o.res.ExitCode, o.stderr)
			}
			host()
			if _, err := os.Stat(marker); err != nil {
				t.Fatalf("unconfined, the host's git did not run the box's code: the test shows nothing")
			}
			if tc := tiers()[1]; tc.skip != "" {
				tc.gate(t)
			}
			marker = filepath.Join(t.TempDir(), "ran")
			spec, script, host = a.setup(t, marker)
			o = runIn(t, sandbox.Tier1, spec, "", "/bin/sh", "-c", script)
			if o.err != nil {
				t.Logf("the box refused: %v", o.err)
			} else {
				t.Logf("in the box: exit %d: %s", o.res.ExitCode, strings.TrimSpace(o.stderr))
			}
			out, _ := host()
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("the host's git ran the box's code after a tier-1 run (%s)", out)
			}
		})
	}
}

// TestGitInTheBox covers what a box must still do with the protection on,
// and what it must not leave behind.
func TestGitInTheBox(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		testsupport.Missing(t, "git is not installed")
	}
	if tc := tiers()[1]; tc.skip != "" {
		tc.gate(t)
	}
	const ident = "git -c user.name=a -c user.email=a@example.invalid "
	run := func(t *testing.T, spec sandbox.Spec, script string) outcome {
		t.Helper()
		o := runIn(t, sandbox.Tier1, spec, "", "/bin/sh", "-c", script)
		if o.err != nil {
			t.Fatalf("the box did not run: %v", o.err)
		}
		return o
	}
	t.Run("a linked worktree granted commits commits", func(t *testing.T) {
		base := t.TempDir()
		main := filepath.Join(base, "main")
		newRepo(t, main)
		mustGit(t, main, "worktree", "add", "-q", "../wt")
		wt := filepath.Join(base, "wt")
		spec := fixSpec(t, wt)
		spec.Write = append(spec.Write, filepath.Join(main, ".git"))
		o := run(t, spec, "echo y > new && git add new && "+ident+"commit -q -m box && git status --porcelain")
		if o.res.ExitCode != 0 || strings.TrimSpace(o.stdout) != "" {
			t.Fatalf("exit %d, status %q: %s", o.res.ExitCode, o.stdout, o.stderr)
		}
		if out, _ := hostGit(t, wt, "log", "--format=%s", "-1"); strings.TrimSpace(out) != "box" {
			t.Fatalf("the box's commit is not on the host: %q", out)
		}
	})
	t.Run("git init in a fresh directory", func(t *testing.T) {
		wd := t.TempDir()
		o := run(t, fixSpec(t, wd), "git init -q . && echo x > f && git add f && "+ident+"commit -q -m one && git status --porcelain && "+
			"git init -q fresh && cd fresh && echo x > f && git add f && "+ident+"commit -q -m one")
		if o.res.ExitCode != 0 || strings.TrimSpace(o.stdout) != "" {
			t.Fatalf("exit %d, status %q: %s", o.res.ExitCode, o.stdout, o.stderr)
		}
	})
	t.Run("mkdir under .config next to the fish placeholder", func(t *testing.T) {
		wd := t.TempDir()
		o := run(t, fixSpec(t, wd), "mkdir -p .config/x && echo ok > .config/x/f && ! mkdir .config/fish 2>/dev/null")
		if o.res.ExitCode != 0 {
			t.Fatalf("exit %d: %s", o.res.ExitCode, o.stderr)
		}
		if _, err := os.Stat(filepath.Join(wd, ".config", "x", "f")); err != nil {
			t.Fatalf("the box's file is gone after the run: %v", err)
		}
		if _, err := os.Lstat(filepath.Join(wd, ".config", "fish")); err == nil {
			t.Fatalf("the placeholder for .config/fish was left behind")
		}
	})
	t.Run("mkdir under .config as the checkout's owner", func(t *testing.T) {
		if os.Geteuid() != 0 {
			testsupport.Missing(t, "needs root, to run the box as another user")
		}
		parent := sharedDir(t)
		exe := filepath.Join(parent, "airlock")
		if b, err := os.ReadFile(testExe(t)); err != nil || os.WriteFile(exe, b, 0o755) != nil {
			t.Fatalf("copy the test binary: %v", err)
		}
		wd := filepath.Join(parent, "checkout")
		os.Mkdir(wd, 0o755)
		os.Chown(wd, 1000, 1000)
		var out, errOut bytes.Buffer
		res, err := Run(context.Background(), exe, Request{Spec: fixSpec(t, wd), Tier: sandbox.Tier1, Stdout: &out, Stderr: &errOut,
			Argv: []string{"sh", "-c", "mkdir -p .config/x && echo ok > .config/x/f"}})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("exit %d, err %v: %s%s", res.ExitCode, err, out.String(), errOut.String())
		}
	})
	t.Run("placeholders stay out of a commit without info/exclude", func(t *testing.T) {
		wd := t.TempDir()
		newRepo(t, wd)
		os.RemoveAll(filepath.Join(wd, ".git", "info"))
		o := run(t, fixSpec(t, wd), "echo y > mine && git add -A && "+ident+"commit -q -m box && git status --porcelain")
		if o.res.ExitCode != 0 || strings.TrimSpace(o.stdout) != "" {
			t.Fatalf("exit %d, status %q: %s", o.res.ExitCode, o.stdout, o.stderr)
		}
		out, _ := hostGit(t, wd, "show", "--name-only", "--format=", "HEAD")
		if strings.TrimSpace(out) != "mine" {
			t.Fatalf("the box's commit holds %q, want only mine", out)
		}
		if _, err := os.Lstat(filepath.Join(wd, ".git", "info")); err == nil {
			t.Fatalf("the placeholder info/ was left behind")
		}
	})
	t.Run("agent and editor configuration stays read-only", func(t *testing.T) {
		for _, f := range []string{".cursor/mcp.json", ".gemini/settings.json", ".continue/config.json", ".zed/settings.json",
			".devcontainer/devcontainer.json", ".pre-commit-config.yaml", ".amazonq/mcp.json", ".roo/mcp.json", ".envrc", ".npmrc"} {
			wd := t.TempDir()
			o := runIn(t, sandbox.Tier0, fixSpec(t, wd), "", "/bin/sh", "-c", "mkdir -p \"$(dirname "+f+")\" && echo x > "+f)
			if o.err != nil || o.res.ExitCode != 0 {
				t.Fatalf("unconfined, %s could not be written: %v %s", f, o.err, o.stderr)
			}
			wd = t.TempDir()
			o = run(t, fixSpec(t, wd), "mkdir -p \"$(dirname "+f+")\" 2>/dev/null; echo x > "+f)
			if o.res.ExitCode == 0 {
				t.Errorf("the box wrote %s", f)
			}
			if fi, err := os.Stat(filepath.Join(wd, f)); err == nil && fi.Size() > 0 {
				t.Errorf("%s was written on the host", f)
			}
		}
	})
	t.Run("a submodule's and a nested repository's status stay clean", func(t *testing.T) {
		wd := t.TempDir()
		newRepo(t, wd)
		sub := filepath.Join(t.TempDir(), "sub")
		newRepo(t, sub)
		mustGit(t, wd, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "sub")
		mustGit(t, wd, "commit", "-q", "-m", "sub")
		newRepo(t, filepath.Join(wd, "pkg"))
		o := run(t, fixSpec(t, wd), "git -C sub status --porcelain; git -C pkg status --porcelain")
		if o.res.ExitCode != 0 || strings.TrimSpace(o.stdout) != "" {
			t.Fatalf("exit %d, status %q: %s", o.res.ExitCode, o.stdout, o.stderr)
		}
	})
	t.Run("a repository made during the run is quarantined, an old one is not", func(t *testing.T) {
		wd := t.TempDir()
		newRepo(t, filepath.Join(wd, "old"))
		o := run(t, fixSpec(t, wd), "git init -q new && echo y > old/f && git -C old add f && "+ident+"-C old commit -q -m box")
		if o.res.ExitCode != 0 {
			t.Fatalf("exit %d: %s", o.res.ExitCode, o.stderr)
		}
		if _, err := os.Stat(filepath.Join(wd, "new", ".git", "config.airlock-untrusted")); err != nil {
			t.Errorf("the new repository's config was not moved aside: %v", err)
		}
		if _, err := os.Stat(filepath.Join(wd, "new", ".git", "config")); err == nil {
			t.Errorf("the new repository's config is still in place")
		}
		if _, err := os.Stat(filepath.Join(wd, "old", ".git", "config")); err != nil {
			t.Errorf("the old repository's config was moved: %v", err)
		}
		if out, err := hostGit(t, filepath.Join(wd, "new"), "status"); err != nil {
			t.Errorf("git on the host cannot read the quarantined repository: %v %s", err, out)
		}
	})
	t.Run("a repository made during the run below the plan's search depth is quarantined", func(t *testing.T) {
		wd := t.TempDir()
		marker := filepath.Join(t.TempDir(), "ran")
		deep := "a/b/c/d/e/f"
		o := run(t, fixSpec(t, wd), "git init -q "+deep+" && git -C "+deep+" config core.fsmonitor 'touch "+marker+"; false'")
		if o.res.ExitCode != 0 {
			t.Fatalf("exit %d: %s", o.res.ExitCode, o.stderr)
		}
		hostGit(t, filepath.Join(wd, deep), "status", "--porcelain")
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("git on the host ran the core.fsmonitor a box set in a repository it made at %s", deep)
		}
		if _, err := os.Stat(filepath.Join(wd, deep, ".git", "config.airlock-untrusted")); err != nil {
			t.Errorf("the deep repository's config was not moved aside: %v", err)
		}
	})
	t.Run("git config is refused", func(t *testing.T) {
		wd := t.TempDir()
		newRepo(t, wd)
		o := run(t, fixSpec(t, wd), "git config core.fsmonitor 'touch /tmp/x'")
		if o.res.ExitCode == 0 {
			t.Fatalf("the box changed .git/config")
		}
		t.Logf("git config in the box: %s", strings.TrimSpace(o.stderr))
		if out, _ := hostGit(t, wd, "config", "--get", "core.fsmonitor"); strings.TrimSpace(out) != "" {
			t.Fatalf("the host's config holds %q", out)
		}
	})
}
