package runner

import (
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
