package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/policy/protected"
)

// Protected paths: what the planner holds read-only inside every writable
// root, and the placeholders it makes for those that do not exist. The
// list is policy/protected's; git's files are planned per repository
// (gitprot_linux.go).

// protectRoots keeps the protected paths inside every writable root
// read-only: the entries of the one list (policy/protected) by name in each
// root and at the top of each repository found in it, and every file git
// reads for those repositories (gitprot_linux.go). A layout airlock cannot
// hold (a commondir chain, a .git link, an include reached through a link
// into a writable directory) refuses the box with the path and the reason;
// nothing is half-planned, since the caller closes the box on an error and
// that removes the placeholders already made. Then each repository's
// info/exclude is shown to the box with the placeholders added, so no
// `git add -A` in the box records them.
func (p *planner) protectRoots(roots []*pinned) error {
	if err := protected.CheckUnprotect(p.spec.Unprotect); err != nil {
		return errs.Invalidf("sandbox: unprotect: %v", err)
	}
	var since unix.Timespec
	unix.ClockGettime(unix.CLOCK_REALTIME, &since)
	// File systems stamp birth times from a coarse clock: a second back
	// leaves no repository made at the start of the run unchecked.
	since.Sec--
	g := newGitScan(p.writable)
	if err := g.globals(); err != nil {
		var rf *refusal
		if errors.As(err, &rf) {
			return p.refuse(rf.path, rf.why+"; nothing was run")
		}
		return err
	}
	for _, r := range roots {
		if err := g.scanRoot(r.real); err != nil {
			var rf *refusal
			if errors.As(err, &rf) {
				return p.refuse(rf.path, rf.why+"; nothing was run")
			}
			return err
		}
	}
	for _, r := range roots {
		if c := g.covering(r.real); c != "" {
			return p.refuse(r.real, "a write grant of "+c+", which git on the host reads or runs; grant the repository's .git (its config and hooks stay read-only) or the work tree instead")
		}
	}
	p.box.Notes = append(p.box.Notes, g.notes...)
	// Repositories the run makes were never planned: the check after the
	// run (Close) moves aside what the host would trust in them.
	w := &repoWatch{known: map[string]bool{}, full: map[string]bool{}}
	for _, r := range roots {
		w.roots = append(w.roots, r.real)
		w.full[r.real] = !g.partial[r.real]
		if isGitDir(r.real) {
			w.known[r.real] = true
		}
	}
	for _, f := range g.found {
		w.known[f] = true
	}
	w.since = since
	p.box.watch = w
	for _, r := range roots {
		paths := p.namePaths(r.real, g)
		paths = append(paths, g.inRoot(r.real)...)
		if err := p.protect(r, paths); err != nil {
			return err
		}
	}
	if err := p.hideStubs(roots, g); err != nil {
		return err
	}
	return p.homeExcludes(roots)
}

// homeExcludes lists every placeholder, from each writable root, in git's
// global excludes file of the box's private HOME ($HOME/.config/git/ignore,
// read-only): a repository the box makes during the run, or one whose
// info/exclude the box cannot be shown, still keeps them out of `git
// status` and `git add -A`. Nothing on the host changes: that HOME is the
// box's own tmpfs; where HOME is not private, nothing is done.
func (p *planner) homeExcludes(roots []*pinned) error {
	home := filepath.Clean(EnvValue(p.spec.Env, "HOME"))
	if !filepath.IsAbs(home) || home == "/" || len(p.box.Stubs) == 0 {
		return nil
	}
	private := false
	for _, o := range p.ops {
		if o.dest == home && (o.args[0] == "--tmpfs" || o.args[0] == "--dir") {
			private = true
		}
	}
	cfg := filepath.Join(home, ".config")
	if x := EnvValue(p.spec.Env, "XDG_CONFIG_HOME"); x != "" {
		cfg = filepath.Clean(x)
	}
	if !private || !within(cfg, home) {
		return nil
	}
	var b strings.Builder
	b.WriteString("# airlock: read-only placeholders of protected paths, for this run only\n")
	seen := map[string]bool{}
	for _, r := range roots {
		for _, s := range p.box.Stubs {
			rel, err := filepath.Rel(r.real, s.Path)
			if err != nil || rel == "." || strings.HasPrefix(rel, "..") || seen[rel] {
				continue
			}
			seen[rel] = true
			b.WriteString("/" + filepath.ToSlash(rel) + "\n")
		}
	}
	if b.Len() > 32<<10 {
		p.box.Notes = append(p.box.Notes, "git: too many placeholders for the box's global excludes file; a repository made during the run may list them")
		return nil
	}
	return p.data([]byte(b.String()), filepath.Join(cfg, "git", "ignore"))
}

// namePaths are the list's entries held by name for root: the whole list
// in the root itself (unless the root is a git directory, where no tool
// looks for them), and the entries not tied to a home directory at the top
// of the nested repositories, the first maxNestedTops of them.
func (p *planner) namePaths(root string, g *gitScan) []gitPath {
	var out []gitPath
	add := func(top string, names []string) {
		for _, n := range names {
			out = append(out, gitPath{path: filepath.Join(top, n)})
		}
	}
	if !isGitDir(root) {
		add(root, protectedNames(p.spec))
	}
	nested := protected.Names(p.spec.UnattendedBuild, p.spec.Unprotect, true)
	var tops []string
	for _, repo := range g.repos {
		if repo.top == "" || repo.top == root || !within(repo.top, root) || slices.Contains(tops, repo.top) {
			continue
		}
		if len(tops) == maxNestedTops {
			p.box.Notes = append(p.box.Notes, fmt.Sprintf("protected paths: held by name at the top of the first %d nested repositories in %s only; git's own files are held in all", maxNestedTops, root))
			break
		}
		tops = append(tops, repo.top)
		add(repo.top, nested)
	}
	return out
}

// maxNestedTops bounds the nested repositories whose tops get the list's
// entries by name (each entry can be a mount): a tree of many vendored
// repositories would otherwise make thousands.
const maxNestedTops = 16

// protect holds paths (each inside the writable root r) read-only. An
// existing one is bound read-only onto itself; its ancestors inside r are
// bound onto themselves so they cannot be renamed aside (a mount point
// answers EBUSY). A missing one is blocked with an empty placeholder (or
// one holding gitPath.content) that airlock removes when the box ends; a
// missing ancestor becomes a placeholder directory, so `.config/fish`
// leaves `.config` a directory the box can still use.
//
// It works under the root's lock, so the placeholders of concurrent boxes
// in one tree are made once and shared (see stublock_linux.go).
func (p *planner) protect(r *pinned, paths []gitPath) error {
	lock, err := lockRoot(r)
	if err != nil {
		return err
	}
	p.lock = lock
	first := len(p.box.Stubs)
	defer func() {
		p.lock = nil
		// A root left with no placeholder needs no lock file.
		lock.unlock(len(p.box.Stubs) == first)
	}()
	seen := map[string]bool{}
	for _, gp := range paths {
		rel, err := filepath.Rel(r.real, gp.path)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") || seen[gp.path] {
			continue
		}
		seen[gp.path] = true
		if err := p.protectRel(r, splitPath(rel), gp, nil); err != nil {
			return err
		}
	}
	return nil
}

// protectRel walks comps from r without following links and holds the last
// read-only: bind(pn, dest) binds it (nil: read-only onto itself).
func (p *planner) protectRel(r *pinned, comps []string, gp gitPath, bind func(*pinned, string) error) error {
	if bind == nil {
		bind = func(pn *pinned, dest string) error {
			if !p.has(dest) {
				p.bindFD(pn, dest, false, 3)
			} else {
				pn.f.Close()
			}
			return nil
		}
	}
	dirfd, err := unix.Dup(int(r.f.Fd()))
	if err != nil {
		return err
	}
	defer func() { unix.Close(dirfd) }()
	cur := r.real
	for i, c := range comps {
		next := filepath.Join(cur, c)
		last := i == len(comps)-1
		nfd, err := unix.Openat(dirfd, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			if last && gp.dir {
				// A directory git reads (info/): an empty placeholder
				// directory, read-only.
				sfd, serr := p.stubDir(dirfd, c, next)
				if serr != nil {
					return serr
				}
				var st unix.Stat_t
				if err := unix.Fstat(sfd, &st); err != nil {
					unix.Close(sfd)
					return err
				}
				return bind(&pinned{f: os.NewFile(uintptr(sfd), next), real: next, dev: uint64(st.Dev), ino: st.Ino, mode: st.Mode}, next)
			}
			if last {
				stub, serr := p.stub(dirfd, c, next, gp.content)
				if serr != nil {
					return serr
				}
				return bind(stub, next)
			}
			// A missing ancestor: a placeholder directory the box may
			// use, held in place so it cannot be renamed aside.
			if nfd, err = p.stubDir(dirfd, c, next); err != nil {
				return err
			}
		} else if err != nil {
			return errs.Wrap(errs.Unavailable, err, "sandbox: protected path %s", next)
		}
		var st unix.Stat_t
		if err := unix.Fstat(nfd, &st); err != nil {
			unix.Close(nfd)
			return err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(nfd)
			return p.refuse(next, "a protected path is a symbolic link inside a writable directory; remove the link or make it a real file")
		}
		if last && isStub(&st) {
			unix.Close(nfd)
			stub, err := p.adopt(dirfd, c, next, gp.content)
			if err != nil {
				return err
			}
			return bind(stub, next)
		}
		pn := &pinned{real: next, dev: uint64(st.Dev), ino: st.Ino, mode: st.Mode}
		if last || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			// The protected path itself, or a file where a directory is
			// expected (nothing can be created below it): bound read-only
			// as it is.
			pn.f = os.NewFile(uintptr(nfd), next)
			return bind(pn, next)
		}
		if last && gp.dir && isStubDir(&st) && !p.holds(next) {
			if err := p.adoptDir(dirfd, c, next); err != nil {
				unix.Close(nfd)
				return err
			}
		}
		if !last && isStubDir(&st) && !p.holds(next) {
			if err := p.adoptDir(dirfd, c, next); err != nil {
				unix.Close(nfd)
				return err
			}
		}
		// An ancestor: bound onto itself, still writable, so it cannot be
		// renamed aside with the protected path inside it.
		if !p.has(next) {
			dup, err := unix.Dup(nfd)
			if err != nil {
				unix.Close(nfd)
				return err
			}
			pn.f = os.NewFile(uintptr(dup), next)
			p.bindFD(pn, next, true, 3)
		}
		unix.Close(dirfd)
		dirfd = nfd
		cur = next
	}
	return nil
}

// holds reports whether this box already holds a placeholder at path.
func (p *planner) holds(path string) bool {
	for _, s := range p.box.Stubs {
		if s.Path == path {
			return true
		}
	}
	return false
}

// hideStubs keeps git inside the box from offering the placeholders for a
// commit (`git add -A` would record empty .bashrc and friends): for every
// repository with a placeholder in one of its work trees, the box sees the
// common directory's info/exclude with their names added. The host's file
// is untouched; where it is missing, an empty placeholder (in a
// placeholder info/ if need be) is what the box's view is bound onto.
// A common directory outside every writable root keeps its own file (the
// box cannot commit there).
func (p *planner) hideStubs(roots []*pinned, g *gitScan) error {
	done := map[string]bool{}
	for _, repo := range g.repos {
		c := repo.common
		if done[c] {
			continue
		}
		done[c] = true
		pats := g.excludes(c, p.box.Stubs)
		if len(pats) == 0 {
			continue
		}
		var root *pinned
		for _, r := range roots {
			if within(c, r.real) && (root == nil || len(r.real) > len(root.real)) {
				root = r
			}
		}
		if root == nil {
			continue
		}
		excl := filepath.Join(c, "info", "exclude")
		rel, err := filepath.Rel(root.real, excl)
		if err != nil {
			continue
		}
		lock, err := lockRoot(root)
		if err != nil {
			return err
		}
		p.lock = lock
		first := len(p.box.Stubs)
		err = p.protectRel(root, splitPath(rel), gitPath{path: excl}, func(pn *pinned, dest string) error {
			defer pn.f.Close()
			if dest != excl || pn.mode&unix.S_IFMT != unix.S_IFREG {
				return nil // info is a file: git reads no exclude there
			}
			var orig []byte
			if pn.mode&unix.S_IFMT == unix.S_IFREG {
				if f, err := os.Open("/proc/self/fd/" + strconv.Itoa(int(pn.f.Fd()))); err == nil {
					orig, _ = io.ReadAll(io.LimitReader(f, 16<<10))
					f.Close()
				}
			}
			if len(orig) >= 16<<10 {
				return p.refuse(dest, "too large for airlock to add its placeholders to (16 KiB)")
			}
			var b strings.Builder
			b.Write(orig)
			if len(orig) > 0 && orig[len(orig)-1] != '\n' {
				b.WriteByte('\n')
			}
			b.WriteString("# airlock: read-only placeholders of protected paths, for this run only\n")
			for _, pat := range pats {
				b.WriteString(pat + "\n")
			}
			return p.data([]byte(b.String()), dest)
		})
		p.lock = nil
		lock.unlock(len(p.box.Stubs) == first)
		if err != nil {
			return err
		}
	}
	return nil
}

// stub makes a placeholder name in dirfd holding content and holds a
// shared lock on it for the run.
func (p *planner) stub(dirfd int, name, path, content string) (*pinned, error) {
	fd, err := makeStub(dirfd, name, content)
	if errors.Is(err, unix.EEXIST) {
		return nil, errs.Unavailablef("sandbox: protect %s: it appeared while airlock was planning the box; run again", path)
	}
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "sandbox: protect %s", path)
	}
	return p.holdStub(fd, dirfd, name, path, content, false)
}

// makeStub makes the file name in dirfd holding content, never over
// anything already there. A placeholder with content appears with all of
// it at once where the file system allows (an unnamed file, written, then
// linked in): another run's plan reads the tree without the root's lock,
// and a commondir placeholder it read in the moment between the file's
// making and its write would be empty, which the git scan refuses.
func makeStub(dirfd int, name, content string) (int, error) {
	if content != "" {
		fd, err := unix.Openat(dirfd, ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, stubMode)
		switch {
		case err == nil:
			if _, err := unix.Write(fd, []byte(content)); err != nil {
				unix.Close(fd)
				return -1, err
			}
			// linkat fails with EEXIST on any name there, a link too.
			if err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), dirfd, name, unix.AT_SYMLINK_FOLLOW); err != nil {
				unix.Close(fd)
				return -1, err
			}
			return fd, nil
		case !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EINVAL):
			return -1, err
		}
		// No unnamed files here: made by name, then written.
	}
	fd, err := unix.Openat(dirfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_RDWR|unix.O_CLOEXEC, stubMode)
	if err != nil {
		return -1, err
	}
	if content != "" {
		if _, err := unix.Write(fd, []byte(content)); err != nil {
			unix.Close(fd)
			unix.Unlinkat(dirfd, name, 0)
			return -1, err
		}
	}
	return fd, nil
}

// stubDir makes a placeholder directory name in dirfd, holds a shared lock
// on it and returns an O_PATH descriptor of it.
func (p *planner) stubDir(dirfd int, name, path string) (int, error) {
	if err := unix.Mkdirat(dirfd, name, stubDirMode); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return -1, errs.Unavailablef("sandbox: protect %s: it appeared while airlock was planning the box; run again", path)
		}
		return -1, errs.Wrap(errs.Unavailable, err, "sandbox: protect %s", path)
	}
	// mkdir applies the umask; the mode is what marks the placeholder.
	if err := unix.Fchmodat(dirfd, name, stubDirMode, unix.AT_SYMLINK_NOFOLLOW); err != nil && !errors.Is(err, unix.EOPNOTSUPP) {
		unix.Fchmodat(dirfd, name, stubDirMode, 0)
	}
	// The box may use the directory (.config for .config/fish): a box that
	// runs as the checkout's owner (chooseUser) gets it as that user's.
	if uid, gid := p.boxIDs(); uid != os.Geteuid() {
		if err := unix.Fchownat(dirfd, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
			return -1, errs.Wrap(errs.Unavailable, err, "sandbox: protect %s: give the placeholder directory to uid %d", path, uid)
		}
	}
	if err := p.adoptDir(dirfd, name, path); err != nil {
		return -1, err
	}
	return unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

// adoptDir shares a placeholder directory (this run's or another's).
func (p *planner) adoptDir(dirfd int, name, path string) error {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "sandbox: protect %s", path)
	}
	pn, err := p.holdStub(fd, dirfd, name, path, "", true)
	if err != nil {
		return err
	}
	pn.f.Close()
	return nil
}

// adopt shares another run's placeholder: an existing protected path that
// has a placeholder's shape.
func (p *planner) adopt(dirfd int, name, path, content string) (*pinned, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "sandbox: protect %s", path)
	}
	buf := make([]byte, len(content)+1)
	n, _ := unix.Pread(fd, buf, 0)
	if string(buf[:max(n, 0)]) != content {
		unix.Close(fd)
		return nil, p.refuse(path, "a placeholder-shaped file holds something else; remove it or give it another mode")
	}
	return p.holdStub(fd, dirfd, name, path, content, false)
}

func (p *planner) holdStub(fd, dirfd int, name, path, content string, dir bool) (*pinned, error) {
	lock := os.NewFile(uintptr(fd), path)
	if err := unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB); err != nil {
		lock.Close()
		return nil, errs.Unavailablef("sandbox: protect %s: another airlock run is removing its placeholder there; run again", path)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		lock.Close()
		return nil, err
	}
	p.box.locks = append(p.box.locks, lock)
	p.box.Stubs = append(p.box.Stubs, Stub{Path: path, Dev: uint64(st.Dev), Ino: st.Ino, Lock: p.lock.path, Dir: dir, Content: content})
	pfd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var pst unix.Stat_t
	if err := unix.Fstat(pfd, &pst); err != nil || pst.Ino != st.Ino || pst.Dev != st.Dev {
		unix.Close(pfd)
		return nil, errs.Unavailablef("sandbox: protect %s: the placeholder changed while airlock held it", path)
	}
	return &pinned{f: os.NewFile(uintptr(pfd), path), real: path, dev: uint64(st.Dev), ino: st.Ino, mode: st.Mode}, nil
}

// stubDirMode marks a placeholder directory: rare enough on a person's own
// directory (the owner's rights, and only search for others).
const stubDirMode = 0o701

// isStub reports whether st has the shape of airlock's placeholder file
// (empty, or the few bytes of a commondir placeholder).
func isStub(st *unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size <= 1 && st.Mode&0o7777 == stubMode
}

// isStubDir reports whether st has the shape of a placeholder directory.
func isStubDir(st *unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Mode&0o7777 == stubDirMode
}
