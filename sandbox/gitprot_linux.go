package sandbox

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/policy/protected"
)

// Git protection is planned from what git itself reads on the host. For
// every repository the box can write into (a writable directory's own, the
// nested ones, bare ones, submodules under modules/, linked worktrees and
// their main repository, whatever a .git file points at) the planner
// resolves the files git will read and holds each read-only, made or not:
// config and config.worktree, every include.path and includeIf target,
// commondir, gitdir, hooks/, info/, remotes/, branches/, core.hooksPath and
// the programs config names by path (core.fsmonitor, core.sshCommand, ...).
// The box keeps writing what git writes while it works: objects, refs,
// logs, index, HEAD and the other state files.

// Bounds of the search for nested repositories below a writable directory.
const (
	gitNestDepth = 4    // directory levels searched below each writable directory
	gitNestDirs  = 4096 // directories looked at per writable directory at most
	// gitQuarantineDirs bounds the search after the run for repositories
	// the run made: at every depth, a note when it stops.
	gitQuarantineDirs = 1 << 17
	gitMaxRepos       = 256 // repositories planned per box at most
	gitIncDepth       = 10  // include nesting, as git's own limit
)

// gitCommandKeys are config variables whose value is a program git (or a
// tool it starts) runs; a path in them is held read-only.
var gitCommandKeys = map[string]bool{
	"core.fsmonitor": true, "core.sshcommand": true, "core.editor": true, "core.pager": true,
	"core.askpass": true, "core.gitproxy": true, "sequence.editor": true, "gpg.program": true,
	"gpg.ssh.program": true, "gpg.x509.program": true, "credential.helper": true,
	"diff.external": true, "uploadpack.packobjectshook": true,
}

// gitCommandSubKeys are the same for variables with a subsection
// ("filter.<driver>.smudge").
var gitCommandSubKeys = map[string]bool{
	"filter.clean": true, "filter.smudge": true, "filter.process": true,
	"diff.textconv": true, "diff.command": true, "merge.driver": true,
	"credential.helper": true, "gpg.program": true,
}

// gitPath is one path git reads; content, when set, is what a placeholder
// holds where the file is missing (a commondir must name a directory).
type gitPath struct {
	path, content string
	dir           bool // a missing one is held by a placeholder directory
}

// gitRepo is one planned repository: its git directory, its common
// directory and the top of its work tree ("" when bare).
type gitRepo struct {
	gitDir, common, top string
}

// gitScan collects what git reads for the repositories reachable from one
// writable directory.
type gitScan struct {
	writable []string
	home     string
	paths    []gitPath
	repos    []gitRepo
	found    []string          // .git entries and bare repositories seen
	partial  map[string]bool   // roots whose search stopped at its bounds
	seen     map[string]string // git directory -> its common directory
	read     map[string]bool
	notes    []string
}

func newGitScan(writable []string) *gitScan {
	home, _ := os.UserHomeDir()
	return &gitScan{writable: writable, home: home, seen: map[string]string{}, read: map[string]bool{}}
}

// refusal is a repository layout airlock cannot hold safely.
type refusal struct{ path, why string }

func (r *refusal) Error() string { return r.path + ": " + r.why }

func (g *gitScan) refuse(path, format string, a ...any) error {
	return &refusal{path, fmt.Sprintf(format, a...)}
}

func (g *gitScan) add(path, content string) {
	g.paths = append(g.paths, gitPath{path: filepath.Clean(path), content: content})
}

// scanRoot finds the repositories in and below root (bounded) and plans
// each.
func (g *gitScan) scanRoot(root string) error {
	// The root itself, or a git directory it lies in (a grant of
	// main/.git/objects), and the repository whose work tree holds it (its
	// config may include a file in the root): what of theirs lies in a
	// writable directory is held too.
	for d := root; ; d = filepath.Dir(d) {
		if isGitDir(d) {
			if err := g.gitDir(d, ""); err != nil {
				return err
			}
			break
		}
		if d != root {
			if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
				if err := g.worktree(d); err != nil {
					return err
				}
				break
			}
		}
		if d == "/" || filepath.Base(d) == ".git" {
			break
		}
	}
	found, full := findRepos(root)
	if !full {
		if g.partial == nil {
			g.partial = map[string]bool{}
		}
		g.partial[root] = true
		g.notes = append(g.notes, fmt.Sprintf("git: stopped looking for nested repositories in %s after %d directories; deeper ones are held by name only", root, gitNestDirs))
	}
	for _, f := range found {
		g.found = append(g.found, f)
		var err error
		if filepath.Base(f) == ".git" {
			err = g.worktree(filepath.Dir(f))
		} else {
			// A bare repository: its hooks run when a person pushes to it.
			err = g.gitDir(f, "")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// findRepos lists the .git entries and bare repositories in and below root,
// breadth first, within gitNestDepth levels and gitNestDirs directories;
// full is false when the bound stopped the search. It follows no link and
// does not descend into a repository's git directory.
func findRepos(root string) (found []string, full bool) {
	return findReposWithin(root, gitNestDepth, gitNestDirs)
}

// findReposWithin is findRepos within maxDepth levels and maxDirs
// directories.
func findReposWithin(root string, maxDepth, maxDirs int) (found []string, full bool) {
	if isGitDir(root) {
		return nil, true // a git directory as the root: planned as one
	}
	type dir struct {
		path  string
		depth int
	}
	queue := []dir{{root, 0}}
	looked := 0
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		if looked++; looked > maxDirs {
			return found, false
		}
		ents, err := os.ReadDir(d.path)
		if err != nil {
			continue
		}
		for _, e := range ents {
			p := filepath.Join(d.path, e.Name())
			switch {
			case e.Name() == ".git":
				found = append(found, p)
			case e.Type()&os.ModeSymlink != 0 || !e.IsDir():
			case isGitDir(p):
				found = append(found, p)
			case d.depth+1 <= maxDepth:
				queue = append(queue, dir{p, d.depth + 1})
			}
		}
	}
	return found, true
}

// repoWatch is what the plan knew of the repositories in the writable
// roots, for the check after the run.
type repoWatch struct {
	roots []string
	known map[string]bool
	// full says, per root, that the plan's search saw every repository
	// within its bounds; since is when the plan began.
	full  map[string]bool
	since unix.Timespec
}

// madeSince reports whether p was made after w.since: by its birth time
// where the file system keeps one; else, where the plan's search of root
// was complete, by its absence from what the plan saw. A repository the
// plan may have missed is never taken for a new one (moving a person's
// config aside is not a thing to do on a guess).
func (w *repoWatch) madeSince(root, p string) bool {
	var stx unix.Statx_t
	if unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME, &stx) == nil && stx.Mask&unix.STATX_BTIME != 0 {
		b := stx.Btime
		return b.Sec > w.since.Sec || b.Sec == w.since.Sec && int64(b.Nsec) >= w.since.Nsec
	}
	return w.full[root] && withinPlan(root, p)
}

// withinPlan reports whether the plan's search of root reached p (a .git
// entry or a bare repository): deeper, its absence from the plan says
// nothing.
func withinPlan(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && len(strings.Split(rel, string(filepath.Separator))) <= gitNestDepth+1
}

// untrustedSuffix marks what airlock moved aside in a repository a run
// made.
const untrustedSuffix = ".airlock-untrusted"

// quarantine looks for repositories made during the run (with the plan's
// bounds) and moves aside what the host's git would run or trust in them:
// a .git file is renamed (git would follow it anywhere), and in a git
// directory config, config.worktree, commondir and hooks. The objects,
// refs and work tree stay; git on the host then reads the repository with
// its defaults. It returns one line per repository handled.
func (w *repoWatch) quarantine() []string {
	if w == nil {
		return nil
	}
	var out []string
	for _, root := range w.roots {
		// Not the plan's depth: a box that makes a repository one level
		// deeper than the plan looked must not have it left to the host.
		found, full := findReposWithin(root, math.MaxInt, gitQuarantineDirs)
		if !full {
			out = append(out, fmt.Sprintf("git: stopped looking for repositories made during the run in %s after %d directories; run `find %s -name .git` and review any the run made before using git there", root, gitQuarantineDirs, root))
		}
		if isGitDir(root) {
			found = append(found, root)
		}
		for _, f := range found {
			if w.known[f] || !w.madeSince(root, f) {
				continue
			}
			w.known[f] = true
			fi, err := os.Lstat(f)
			if err != nil {
				continue
			}
			var moved []string
			if !fi.IsDir() {
				if os.Rename(f, f+untrustedSuffix) == nil {
					moved = append(moved, filepath.Base(f))
				}
			} else {
				moved = moveAside(f)
			}
			if len(moved) > 0 {
				out = append(out, fmt.Sprintf("git: %s was made during the run; moved aside %s (renamed *%s): review before trusting it", f, strings.Join(moved, ", "), untrustedSuffix))
			}
		}
		out = append(out, w.quarantineModules(found)...)
		out = append(out, w.quarantineRebases(found)...)
	}
	return out
}

// moveAside renames what git would run or trust in the git directory dir.
func moveAside(dir string) []string {
	var moved []string
	for _, n := range []string{"config", "config.worktree", "commondir", "hooks"} {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil && os.Rename(filepath.Join(dir, n), filepath.Join(dir, n+untrustedSuffix)) == nil {
			moved = append(moved, n)
		}
	}
	return moved
}

// quarantineModules moves aside the submodules' git directories made
// during the run under the modules/ of the repositories found: the host's
// next `git submodule update --init` takes one it finds there as the
// submodule's and runs its hooks. Only a birth time marks one as new (the
// plan does not list them all).
func (w *repoWatch) quarantineModules(found []string) []string {
	var out []string
	for _, f := range found {
		for _, m := range moduleDirs(filepath.Join(f, "modules"), 0) {
			if w.known[m] || !bornSince(m, w.since) {
				continue
			}
			w.known[m] = true
			if moved := moveAside(m); len(moved) > 0 {
				out = append(out, fmt.Sprintf("git: %s was made during the run; moved aside %s (renamed *%s): review before trusting it", m, strings.Join(moved, ", "), untrustedSuffix))
			}
		}
	}
	return out
}

// quarantineRebases moves aside an interactive rebase's state that the
// run wrote, in the repositories found, their linked worktrees and
// submodules: its todo list may hold exec lines, which the person's next
// `git rebase --continue` on the host runs. A change time is what marks it
// (a box can set a file's modification time, not its change time).
func (w *repoWatch) quarantineRebases(found []string) []string {
	var out []string
	for _, f := range found {
		dirs := []string{f}
		if wts, err := os.ReadDir(filepath.Join(f, "worktrees")); err == nil {
			for _, e := range wts {
				dirs = append(dirs, filepath.Join(f, "worktrees", e.Name()))
			}
		}
		dirs = append(dirs, moduleDirs(filepath.Join(f, "modules"), 0)...)
		for _, d := range dirs {
			rm := filepath.Join(d, "rebase-merge")
			var st unix.Stat_t
			if unix.Lstat(filepath.Join(rm, "git-rebase-todo"), &st) != nil || !w.changedSince(st.Ctim) {
				continue
			}
			if os.Rename(rm, rm+untrustedSuffix) == nil {
				out = append(out, fmt.Sprintf("git: the run left an interactive rebase in %s; moved aside rebase-merge (renamed *%s): review its todo list before continuing it", d, untrustedSuffix))
			}
		}
	}
	return out
}

// changedSince reports whether t is at or after the plan's start.
func (w *repoWatch) changedSince(t unix.Timespec) bool {
	return t.Sec > w.since.Sec || t.Sec == w.since.Sec && t.Nsec >= w.since.Nsec
}

// moduleDirs lists the git directories under dir, a modules/ directory
// (a submodule's name may hold slashes, so they nest, and a submodule has
// modules of its own).
func moduleDirs(dir string, depth int) []string {
	ents, err := os.ReadDir(dir)
	if err != nil || depth > gitIncDepth {
		return nil
	}
	var out []string
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		switch {
		case !e.IsDir():
		case isGitDir(p):
			out = append(out, p)
			out = append(out, moduleDirs(filepath.Join(p, "modules"), depth+1)...)
		default:
			out = append(out, moduleDirs(p, depth+1)...)
		}
	}
	return out
}

// bornSince reports whether p has a birth time at or after since.
func bornSince(p string, since unix.Timespec) bool {
	var stx unix.Statx_t
	if unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME, &stx) != nil || stx.Mask&unix.STATX_BTIME == 0 {
		return false
	}
	b := stx.Btime
	return b.Sec > since.Sec || b.Sec == since.Sec && int64(b.Nsec) >= since.Nsec
}

// globals reads the person's system and global git config, which every
// repository on the host reads too: an include, a core.hooksPath or a
// program it names inside a writable directory is held like a
// repository's own.
func (g *gitScan) globals() error {
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(xdg) {
		xdg = filepath.Join(g.home, ".config")
	}
	files := []string{"/etc/gitconfig", filepath.Join(xdg, "git", "config")}
	if g.home != "" {
		files = append(files, filepath.Join(g.home, ".gitconfig"))
	}
	for _, f := range files {
		if err := g.configs(f, "", filepath.Dir(f), 0); err != nil {
			return err
		}
	}
	return nil
}

// isGitDir reports whether dir holds a repository's HEAD, objects and refs.
func isGitDir(dir string) bool {
	for _, n := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Lstat(filepath.Join(dir, n)); err != nil {
			return false
		}
	}
	return true
}

// worktree plans the repository whose work tree is top: its .git is a
// directory, or a file naming the git directory (a linked worktree, a
// submodule's checkout).
func (g *gitScan) worktree(top string) error {
	dotgit := filepath.Join(top, ".git")
	fi, err := os.Lstat(dotgit)
	if err != nil {
		return nil
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		if withinAny(dotgit, g.writable) != "" {
			return g.refuse(dotgit, "a .git that is a symbolic link inside a writable directory; git would follow whatever it is re-pointed at (make it a directory or a gitdir: file)")
		}
		return nil
	case fi.IsDir():
		return g.gitDir(dotgit, top)
	case fi.Mode().IsRegular():
		g.add(dotgit, "")
		target, err := readGitFile(dotgit)
		if err != nil {
			return g.refuse(dotgit, "%v", err)
		}
		return g.gitDir(target, top)
	}
	return g.refuse(dotgit, "a .git that is neither a directory nor a file")
}

// readGitFile reads a "gitdir: X" file; X is taken from the file's own
// directory when relative, and resolved.
func readGitFile(path string) (string, error) {
	data, err := readSmall(path)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(data, "\n")
	rest, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "gitdir:")
	rest = strings.TrimSpace(rest)
	if !ok || rest == "" {
		return "", fmt.Errorf("not a gitdir: file git can read")
	}
	if !filepath.IsAbs(rest) {
		rest = filepath.Join(filepath.Dir(path), rest)
	}
	return filepath.Clean(rest), nil
}

// readSmall reads a file git reads whole (a .git file, commondir, a
// config); one larger than 64 KiB is refused rather than read in part.
func readSmall(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 64<<10+1))
	if err != nil {
		return "", err
	}
	if len(data) > 64<<10 {
		return "", fmt.Errorf("%s is larger than airlock reads (64 KiB)", path)
	}
	return string(data), nil
}

// resolved returns path with every link resolved. A link inside a
// writable directory is refused: the box could re-point it after the plan.
func (g *gitScan) resolved(path string) (string, error) {
	pn, err := pin(path, g.writable)
	if err != nil {
		if be, ok := err.(*bindError); ok && be.Err != nil && os.IsNotExist(be.Err) {
			return path, nil // missing: held where it would be made
		}
		return "", g.refuse(path, "%v", err)
	}
	pn.f.Close()
	return pn.real, nil
}

// gitDir plans one git directory (and its common directory). top is its
// work tree, "" for a bare repository or one met through commondir.
func (g *gitScan) gitDir(dir, top string) error {
	real, err := g.resolved(dir)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(real); os.IsNotExist(err) {
		// Named by a .git file or a commondir but missing: held by a
		// placeholder, so the box cannot make a repository there for the
		// host's git to trust.
		g.add(real, "")
		return nil
	}
	if top == "" {
		top = coreWorktree(real)
	}
	if c, ok := g.seen[real]; ok {
		// Met again from its work tree: the tree's placeholders belong to
		// the repository's exclude too.
		if top != "" {
			g.repos = append(g.repos, gitRepo{gitDir: real, common: c, top: top})
		}
		return nil
	}
	if len(g.seen) >= gitMaxRepos {
		return g.refuse(dir, "more than %d repositories are reachable from the writable directories; grant a narrower directory", gitMaxRepos)
	}
	g.seen[real] = real
	common := real
	cd := filepath.Join(real, "commondir")
	switch data, err := readSmall(cd); {
	case err == nil:
		c := strings.TrimSpace(strings.TrimRight(data, "\n"))
		if c == "" {
			return g.refuse(cd, "an empty commondir, which git cannot read")
		}
		if !filepath.IsAbs(c) {
			c = filepath.Join(real, c)
		}
		if common, err = g.resolved(c); err != nil {
			return err
		}
		// Another run's placeholder holds "."; it is adopted as such.
		g.add(cd, map[bool]string{true: "."}[data == "."])
		if common != real {
			// git reads one commondir, never a chain: a common directory
			// with a commondir of its own is a loop or a trick.
			if d2, err := readSmall(filepath.Join(common, "commondir")); err == nil {
				if c2 := strings.TrimSpace(d2); c2 != "." {
					return g.refuse(cd, "its common directory %s has a commondir of its own (%q); airlock does not plan a chain or loop of commondir files", common, c2)
				}
			}
		}
	case os.IsNotExist(err):
		// Missing: a placeholder that names the directory itself keeps
		// git working while the box cannot point it elsewhere.
		g.add(cd, ".")
	default:
		return g.refuse(cd, "%v", err)
	}
	g.seen[real] = common
	g.repos = append(g.repos, gitRepo{gitDir: real, common: common, top: top})
	g.add(filepath.Join(real, "config.worktree"), "")
	if common != real {
		g.add(filepath.Join(real, "gitdir"), "")
	}
	if err := g.configs(filepath.Join(real, "config.worktree"), top, common, 0); err != nil {
		return err
	}
	if common != real {
		if err := g.gitDir(common, ""); err != nil {
			return err
		}
	}
	if common == real {
		return g.commonDir(real, top)
	}
	return nil
}

// coreWorktree returns the work tree a git directory's config names
// (core.worktree, as a submodule's has), or "".
func coreWorktree(gitDir string) string {
	data, err := readSmall(filepath.Join(gitDir, "config"))
	if err != nil {
		return ""
	}
	vars, err := parseGitConfig(data)
	if err != nil {
		return "" // configs refuses it with the reason
	}
	wt := ""
	for _, v := range vars {
		if v.section == "core" && v.sub == "" && v.key == "worktree" {
			wt = v.value
		}
	}
	if wt == "" {
		return ""
	}
	if !filepath.IsAbs(wt) {
		wt = filepath.Join(gitDir, wt)
	}
	return filepath.Clean(wt)
}

// commonDir plans what lives in a repository's common directory.
func (g *gitScan) commonDir(c, top string) error {
	for _, n := range append(protected.GitFiles(), "objects/info/alternates") {
		if n != "commondir" && n != "gitdir" && n != "config.worktree" { // per git directory, in gitDir
			g.add(filepath.Join(c, n), "")
		}
	}
	for _, n := range protected.GitDirs(false) {
		// info/ as a directory: its exclude is where the box's view
		// lists the placeholders (hideStubs).
		g.paths = append(g.paths, gitPath{path: filepath.Join(c, n), dir: n == "info"})
	}
	if err := g.configs(filepath.Join(c, "config"), top, c, 0); err != nil {
		return err
	}
	// Submodules' git directories, and a placeholder where none exists:
	// the box must not plant one for the person's next `git submodule
	// update` to trust.
	mods := filepath.Join(c, "modules")
	if fi, err := os.Lstat(mods); err != nil || !fi.IsDir() {
		g.add(mods, "")
	} else if err := g.modules(mods, 0); err != nil {
		return err
	}
	wts := filepath.Join(c, "worktrees")
	if fi, err := os.Lstat(wts); err != nil || !fi.IsDir() {
		g.add(wts, "")
	} else if ents, err := os.ReadDir(wts); err == nil {
		for _, e := range ents {
			if e.IsDir() {
				if err := g.gitDir(filepath.Join(wts, e.Name()), ""); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// modules plans the git directories under modules/ (a submodule's name may
// hold slashes, so they nest).
func (g *gitScan) modules(dir string, depth int) error {
	ents, err := os.ReadDir(dir)
	if err != nil || depth > 3 {
		return nil
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if !e.IsDir() {
			continue
		}
		if isGitDir(p) {
			if err := g.gitDir(p, ""); err != nil {
				return err
			}
			continue
		}
		if err := g.modules(p, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// configs reads one config file and holds every file and program it names:
// includes (followed, as git does), core.hooksPath, core.worktree and the
// programs of gitCommandKeys given by path.
func (g *gitScan) configs(file, top, gitDir string, depth int) error {
	if depth > gitIncDepth {
		return g.refuse(file, "includes nest deeper than %d", gitIncDepth)
	}
	if g.read[file] {
		return nil
	}
	g.read[file] = true
	data, err := readSmall(file)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return g.refuse(file, "%v", err)
	}
	vars, err := parseGitConfig(data)
	if err != nil {
		return g.refuse(file, "a git config airlock cannot read exactly (%v); git may read it differently", err)
	}
	base := top
	if base == "" {
		base = gitDir
	}
	for _, v := range vars {
		switch {
		case v.section == "include" && v.key == "path" || v.section == "includeif" && v.key == "path":
			p := g.expand(v.value, filepath.Dir(file))
			if err := g.hold(file, v.name(), p); err != nil {
				return err
			}
			if err := g.configs(p, top, gitDir, depth+1); err != nil {
				return err
			}
		case v.section == "core" && v.sub == "" && v.key == "hookspath":
			if err := g.hold(file, v.name(), g.expand(v.value, base)); err != nil {
				return err
			}
		case v.sub == "" && gitCommandKeys[v.section+"."+v.key] || v.sub != "" && gitCommandSubKeys[v.section+"."+v.key] ||
			v.section == "alias" && strings.HasPrefix(v.value, "!"):
			prog := firstWord(strings.TrimPrefix(v.value, "!"))
			if strings.Contains(prog, "/") {
				if err := g.hold(file, v.name(), g.expand(prog, base)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// hold keeps p read-only when it lies in a writable directory; a path
// outside every writable directory that reaches into one through a link
// is refused.
func (g *gitScan) hold(file, name, p string) error {
	if withinAny(p, g.writable) != "" {
		real, err := g.resolved(p)
		if err != nil {
			return err
		}
		g.add(p, "")
		if real != p {
			g.add(real, "")
		}
		return nil
	}
	if _, err := pin(p, g.writable); err != nil {
		if be, ok := err.(*bindError); ok && be.Err != nil && os.IsNotExist(be.Err) {
			return nil
		}
		return g.refuse(file, "%s = %s: %v", name, p, err)
	}
	return nil
}

// expand resolves a config path as git does: ~/ from the home directory,
// a relative one from base.
func (g *gitScan) expand(p, base string) string {
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		p = filepath.Join(g.home, strings.TrimPrefix(p, "~"))
	case !filepath.IsAbs(p):
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p)
}

func firstWord(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		s = s[:i]
	}
	return strings.Trim(s, `"'`)
}

// covering returns a planned path that root lies in or is: a write grant
// of a repository's hooks, config or include target itself, which no
// read-only bind inside the grant can hold.
func (g *gitScan) covering(root string) string {
	for _, gp := range g.paths {
		if within(root, gp.path) {
			return gp.path
		}
	}
	return ""
}

// inRoot returns the planned paths inside root, each once, shortest first
// (so a directory is held before what it holds).
func (g *gitScan) inRoot(root string) []gitPath {
	seen := map[string]bool{}
	var out []gitPath
	for _, gp := range g.paths {
		if within(gp.path, root) && gp.path != root && !seen[gp.path] {
			seen[gp.path] = true
			out = append(out, gp)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].path) < len(out[j].path) })
	return out
}

// excludes returns, for a common directory, the patterns that keep the
// placeholders out of `git status` and `git add -A`: each placeholder
// anchored at the top of every work tree of the repository.
func (g *gitScan) excludes(common string, stubs []Stub) []string {
	var out []string
	for _, r := range g.repos {
		if r.common != common || r.top == "" {
			continue
		}
		for _, s := range stubs {
			if rel, err := filepath.Rel(r.top, s.Path); err == nil && !strings.HasPrefix(rel, "..") && !strings.HasPrefix(rel, ".git/") && rel != ".git" {
				out = append(out, "/"+filepath.ToSlash(rel))
			}
		}
	}
	sort.Strings(out)
	return out
}
