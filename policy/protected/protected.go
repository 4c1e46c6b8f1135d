// Package protected is the one list of the files and directories that a
// person's tools execute or load after a run: shell start-up files, git's
// repository files, editor and agent configuration, package-manager and
// environment loaders. The sandbox holds every entry read-only inside each
// writable directory (sandbox.Plan); the policy's reader asks a person
// before a command writes one (policy.Checker). docs/policy.md lists the
// entries with the tool each is for.
//
// It is a pure leaf: policy and sandbox import it; it imports nothing of
// airlock's.
package protected

import (
	"fmt"
	"strings"
)

// Kind says how an entry is held.
type Kind int

const (
	// Name entries are held by name inside every writable directory and
	// at the top of each repository found in one.
	Name Kind = iota
	// Home entries matter in a home directory: held by name inside every
	// writable directory only.
	Home
	// Git is held per repository from what git itself reads (the sandbox
	// plans each repository's files; the reader keeps its own git rule).
	Git
	// Build entries are run by build tools; they are held only when the
	// policy says the repository is built unattended.
	Build
	// Own entries are airlock's: held like Home in the box; the reader has
	// its own rule for the policy file (builtin.policy-file).
	Own
)

// Entry is one protected path, relative to a writable directory,
// slash-separated; a trailing "/" marks a directory (everything in it).
type Entry struct {
	Path string
	Kind Kind
	// Tool names what executes or loads it, for the documentation and for
	// refusals.
	Tool string
}

// Dir reports whether the entry is a directory.
func (e Entry) Dir() bool { return strings.HasSuffix(e.Path, "/") }

// Name returns the path without the directory mark.
func (e Entry) Name() string { return strings.TrimSuffix(e.Path, "/") }

// entries is the list. Keep docs/policy.md's table in step (a test checks).
var entries = []Entry{
	// git: planned per repository (hooks, config, includes, commondir, ...).
	{".git/", Git, "git: hooks, config, commondir, info, remotes and every file its config names (planned per repository)"},
	{".gitmodules", Name, "git submodule: URLs and update commands"},
	// airlock's own.
	{".airlock/", Own, "airlock: its own state in the directory"},
	{"airlock.yaml", Own, "airlock: the policy the next run here reads by default"},
	{"airlock.yml", Own, "airlock: the policy the next run here reads by default"},
	{"airlock.json", Own, "airlock: the policy the next run here reads by default"},
	// Shells.
	{".bashrc", Home, "bash"}, {".bash_profile", Home, "bash"}, {".bash_login", Home, "bash"},
	{".bash_logout", Home, "bash"}, {".profile", Home, "sh, dash, bash"},
	{".zshrc", Home, "zsh"}, {".zshenv", Home, "zsh"}, {".zprofile", Home, "zsh"},
	{".zlogin", Home, "zsh"}, {".zlogout", Home, "zsh"},
	{".cshrc", Home, "csh, tcsh"}, {".tcshrc", Home, "tcsh"}, {".login", Home, "csh, tcsh"},
	{".config/fish/", Home, "fish"},
	{".bash_aliases", Home, "bash (Debian's and Ubuntu's .bashrc source it)"},
	// Home tools that run what their start-up files name.
	{".gitconfig", Home, "git: the global config (core.fsmonitor, core.pager, aliases, hooks path)"},
	{".config/git/", Home, "git: the XDG global config and attributes"},
	{".config/go/", Home, "go: the env file (GOFLAGS=-toolexec runs on every build)"},
	{".ssh/", Home, "ssh: ProxyCommand and LocalCommand in its config, authorized_keys"},
	{".vimrc", Home, "vim"}, {".vim/", Home, "vim: plugins loaded at start"},
	{".config/nvim/", Home, "neovim"},
	{".emacs", Home, "emacs"}, {".emacs.d/", Home, "emacs"},
	{".config/systemd/", Home, "systemd: user units started at login"},
	{".config/autostart/", Home, "desktop sessions: programs started at login"},
	{".local/bin/", Home, "the login shell: ~/.profile puts it first on the PATH"},
	{".inputrc", Home, "readline: key bindings that type commands"},
	{".config/starship.toml", Home, "starship: custom commands run at each prompt"},
	{".kube/", Home, "kubectl: exec credential plugins"},
	{".aws/", Home, "aws CLI and SDKs: credential_process"},
	{".docker/config.json", Home, "docker: credential helpers it runs"},
	{".docker/cli-plugins/", Home, "docker: CLI plugins"},
	{".gradle/init.d/", Home, "gradle: init scripts run by every build"},
	{".gradle/init.gradle", Home, "gradle: the init script run by every build"},
	{".terraformrc", Home, "terraform: provider overrides"},
	{".envrc", Name, "direnv"},
	{".tool-versions", Name, "asdf, mise"},
	{".mise.toml", Name, "mise"}, {"mise.toml", Name, "mise"},
	{".mise.local.toml", Name, "mise"}, {"mise.local.toml", Name, "mise"},
	{".mise/", Name, "mise"}, {".config/mise/", Name, "mise"}, {".config/mise.toml", Name, "mise"},
	// Editors and agents.
	{".vscode/", Name, "VS Code: tasks, launch configurations, settings"},
	{".idea/", Name, "JetBrains IDEs: run configurations"},
	{".zed/", Name, "Zed: settings and tasks"},
	{".devcontainer/", Name, "Dev Containers: the container command and features"},
	{".mcp.json", Name, "Claude Code and other MCP clients: servers to start"},
	{".claude/", Name, "Claude Code: settings, hooks, commands"},
	{".cursor/", Name, "Cursor: MCP servers, rules"},
	{".gemini/", Name, "Gemini CLI: settings, MCP servers"},
	{".continue/", Name, "Continue: configuration, MCP servers"},
	{".roo/", Name, "Roo Code: MCP servers, rules"},
	{".amazonq/", Name, "Amazon Q: MCP servers"},
	{".codex/", Name, "Codex CLI: configuration"},
	{".windsurf/", Name, "Windsurf: rules, workflows"},
	{".agents/", Name, "agent configuration shared by several tools"},
	{".aider.conf.yml", Name, "aider: configuration"},
	{".aider.model.settings.yml", Name, "aider: model settings"},
	{".aider.model.metadata.json", Name, "aider: model metadata"},
	// Hooks and package managers.
	{".pre-commit-config.yaml", Name, "pre-commit: the hooks it installs and runs"},
	{".npmrc", Name, "npm: registry, scripts' shell, credentials"},
	{".yarnrc", Name, "yarn 1"}, {".yarnrc.yml", Name, "yarn 2 and later: plugins, paths"},
	{".pnpmfile.cjs", Name, "pnpm: hooks run on every install"},
	{".cargo/config.toml", Name, "cargo: build.rustc-wrapper, target runners, aliases"},
	{".cargo/config", Name, "cargo: the old name of .cargo/config.toml"},
	{".husky/", Name, "husky: the hook scripts its git hooks run"},
	{"lefthook.yml", Name, "lefthook: the commands its git hooks run"},
	{".lefthook.yml", Name, "lefthook: the commands its git hooks run"},
	{"lefthook-local.yml", Name, "lefthook: the commands its git hooks run"},
	{".lefthook-local.yml", Name, "lefthook: the commands its git hooks run"},
	{".pypirc", Home, "twine, setuptools: upload credentials"},
	{"pip.conf", Home, "pip (in a virtual environment or ~/.config/pip)"},
	{".config/pip/", Home, "pip"},
	// Build files: run by a build tool the person starts unattended.
	{"Makefile", Build, "make"}, {"makefile", Build, "make"}, {"GNUmakefile", Build, "make"},
	{"justfile", Build, "just"}, {"Taskfile.yml", Build, "task"},
}

// gitFiles are the files of a git directory that git reads as
// instructions, and gitDirs its directories that hold them: the sandbox
// holds them read-only in every repository it plans (with includes,
// core.hooksPath and the rest that the config names), the reader asks
// before a write to them.
var (
	gitFiles = []string{"config", "config.worktree", "commondir", "gitdir"}
	gitDirs  = []struct {
		name string
		runs bool // what it holds runs as code (the reader asks only about those)
	}{{"hooks", true}, {"info", false}, {"remotes", false}, {"branches", false}}
)

// GitFiles returns the files of a git directory git reads as instructions.
func GitFiles() []string { return append([]string(nil), gitFiles...) }

// GitDirs returns the directories of a git directory that hold them; with
// runs, only those whose files git runs (hooks): info/exclude and the old
// remotes/ files steer git but run nothing, so the reader lets a command
// write them while the box holds them read-only.
func GitDirs(runs bool) []string {
	var out []string
	for _, d := range gitDirs {
		if d.runs || !runs {
			out = append(out, d.name)
		}
	}
	return out
}

// Entries returns the list.
func Entries() []Entry { return append([]Entry(nil), entries...) }

// Names returns the paths held by name: in a writable directory (nested
// false) every Name, Home and Own entry, at the top of a repository found
// in one (nested true) the Name entries; the Build entries too when build
// is set; less those in unprotect (already validated).
func Names(build bool, unprotect []string, nested bool) []string {
	drop := map[string]bool{}
	for _, u := range unprotect {
		drop[strings.TrimSuffix(u, "/")] = true
	}
	var out []string
	for _, e := range entries {
		held := e.Kind == Name || build && e.Kind == Build || !nested && (e.Kind == Home || e.Kind == Own)
		if held && !drop[e.Name()] {
			out = append(out, e.Name())
		}
	}
	return out
}

// CheckUnprotect validates a policy's list of entries it takes off: each
// must name an entry exactly (a directory with or without its "/"); git's
// and airlock's own cannot be taken off.
func CheckUnprotect(list []string) error {
	for _, u := range list {
		name := strings.TrimSuffix(u, "/")
		var found *Entry
		for i := range entries {
			if entries[i].Name() == name {
				found = &entries[i]
			}
		}
		switch {
		case found == nil:
			return fmt.Errorf("%q is not a protected path (see docs/policy.md, protected paths)", u)
		case found.Kind == Git || found.Kind == Own:
			return fmt.Errorf("%q cannot be unprotected: %s", u, found.Tool)
		}
	}
	return nil
}

// Match reports the entry a slash-separated path (absolute or relative)
// falls under, wherever it lies: its segments end with a file entry's or
// contain a directory entry's. Git entries are left to the caller's git
// rule. The reader does not know which directory is writable, so it looks
// at every position; a match only asks a person.
func Match(p string, build bool) (Entry, bool) {
	segs := strings.Split(strings.Trim(p, "/"), "/")
	for _, e := range entries {
		if e.Kind == Git || e.Kind == Own || e.Kind == Build && !build {
			continue
		}
		es := strings.Split(e.Name(), "/")
		for i := 0; i+len(es) <= len(segs); i++ {
			if !equalSegs(segs[i:i+len(es)], es) {
				continue
			}
			if e.Dir() || i+len(es) == len(segs) {
				return e, true
			}
		}
	}
	return Entry{}, false
}

func equalSegs(a, b []string) bool {
	for i := range b {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
