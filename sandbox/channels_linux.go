package sandbox

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/sandbox/seccomp"
)

// Channels a bind shares with the host beyond the files themselves: Unix
// sockets inside a granted tree (an ssh or gpg agent, a rootless Docker
// daemon below `~`), and files of a writable tree that have other names
// outside it (hard links made by uv, pnpm or `git clone --local`), whose
// other names a write through the granted one would rewrite.
//
// Both are found at plan time by one breadth-first walk of the granted
// trees, bounded by scanBudget entries in all: a socket is covered with
// /dev/null unless the policy names its path itself, and a file with more
// than one link in a writable tree is bound read-only onto itself. The walk
// is breadth-first so that the shallow places where agents put their sockets
// (~/.gnupg, ~/.ssh, ~/.docker/run) are seen before the deep trees that use
// up the budget (node_modules, module caches). What lies past the budget is
// not looked at, and the box's notes say where the walk stopped.
//
// Measured (TestScanTime logs it) on a 2-core VM: /usr, 149 000
// entries, takes 0.4 s to walk as a read grant and 1.1 s as a writable one
// (which lstats every regular file) with a warm cache, 3 to 8 s cold. A
// grant that size is rare for a project, but `~` is not, and the walk runs
// for every command: the budget of 100 000 entries keeps the plan's extra
// time near a quarter of a second for a read grant of a large home
// (warm), and a project checkout is walked whole. A whole plan with a read
// grant of /usr/lib (past the budget) took 240 ms against 1.4 ms without.
const scanBudget = 100_000

// maxLinkBinds bounds the read-only binds made for hard-linked files (a
// directory whose files all have other links is one bind). Each is one
// mount and one pinned descriptor; a tree that needs more is refused with
// the fix, rather than run with its other names writable.
const maxLinkBinds = 1024

// scanRoot is one granted tree to walk.
type scanRoot struct {
	path string // resolved host path, the same inside the box
	rw   bool   // writable: look for hard-linked files too
}

// scanFinds is what a walk found.
type scanFinds struct {
	sockets []string
	// linked are the files with other hard links in writable trees, or
	// the directories holding nothing else (linkedBelow).
	linked []string
	// stopped is the first directory the budget left unread, "" when the
	// walk was complete.
	stopped string
	entries int
	took    time.Duration
}

// scanTrees walks roots breadth-first until it has read budget entries (a
// directory is read whole, so the last may take it past).
// Symbolic links are not followed; named holds the paths the policy
// granted by name, whose sockets stay reachable.
func scanTrees(roots []scanRoot, named map[string]bool, budget int) scanFinds {
	start := time.Now()
	var out scanFinds
	type dir struct {
		path string
		rw   bool
	}
	var queue []dir
	seen := map[string]bool{}
	tree := map[string]*linkNode{} // writable directories walked
	for _, r := range roots {
		if !seen[r.path] {
			seen[r.path] = true
			queue = append(queue, dir{r.path, r.rw})
		}
	}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		if out.entries >= budget {
			out.stopped = d.path
			break
		}
		// Directories only, and never waiting: a granted FIFO would block
		// an open for reading until a writer came.
		f, err := os.OpenFile(d.path, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK, 0)
		if err != nil {
			continue // unreadable here (or not a directory): nothing to walk
		}
		// Unsorted, with each entry's type from the directory itself: no
		// stat for anything but a writable tree's regular files.
		ents, err := f.ReadDir(-1)
		f.Close()
		out.entries += len(ents)
		var n *linkNode
		if d.rw {
			n = &linkNode{read: err == nil}
			tree[d.path] = n
		}
		for _, e := range ents {
			p := filepath.Join(d.path, e.Name())
			switch t := e.Type(); {
			case t&os.ModeSocket != 0:
				if !named[p] {
					out.sockets = append(out.sockets, p)
				}
			case t.IsDir():
				if !seen[p] {
					seen[p] = true
					queue = append(queue, dir{p, d.rw})
					if n != nil {
						n.children = append(n.children, p)
					}
				}
			case t.IsRegular() && d.rw:
				n.files++
				var st unix.Stat_t
				if unix.Lstat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink > 1 {
					n.linked = append(n.linked, p)
				}
			}
		}
	}
	for _, r := range roots {
		if n := tree[r.path]; n != nil && r.rw {
			out.linked = append(out.linked, n.linkedBelow(r.path, tree, true)...)
		}
	}
	out.took = time.Since(start)
	return out
}

// linkNode is one walked directory of a writable tree: its regular files,
// those with other hard links, and its subdirectories.
type linkNode struct {
	read     bool // its entries were read (past the budget: not)
	files    int
	linked   []string
	children []string
	all      *bool // memo of allLinked
}

// allLinked reports whether every regular file in the subtree has other
// links and there is at least one: such a directory (a package a tool
// linked from its cache, a uv site-packages entry) is bound read-only
// whole, one mount instead of one per file.
func (n *linkNode) allLinked(tree map[string]*linkNode) bool {
	if n.all != nil {
		return *n.all
	}
	all := n.read && n.files == len(n.linked)
	some := len(n.linked) > 0
	for _, c := range n.children {
		cn := tree[c]
		if cn == nil || !cn.allLinked(tree) {
			all = false
			break
		}
		some = true
	}
	all = all && some
	n.all = &all
	return all
}

// linkedBelow returns what to bind read-only under path: the highest
// directories with files of their own whose subtrees are all linked, and
// the linked files elsewhere. The root of a grant is never bound whole.
func (n *linkNode) linkedBelow(path string, tree map[string]*linkNode, root bool) []string {
	// Only a directory that holds linked files itself is bound whole: one
	// that holds nothing but directories (.venv, site-packages) stays
	// writable, so tools can add beside the linked packages.
	if !root && n.files > 0 && n.allLinked(tree) {
		return []string{path}
	}
	out := append([]string(nil), n.linked...)
	for _, c := range n.children {
		if cn := tree[c]; cn != nil {
			out = append(out, cn.linkedBelow(c, tree, false)...)
		}
	}
	return out
}

// closeChannels covers the sockets and binds the hard-linked files the
// walk of the granted trees finds. It runs after every grant is planned.
func (p *planner) closeChannels(roots []scanRoot) error {
	named := map[string]bool{}
	for _, r := range p.spec.Read {
		named[filepath.Clean(r)] = true
		if real, err := filepath.EvalSymlinks(r); err == nil {
			named[real] = true
		}
	}
	found := scanTrees(roots, named, scanBudget)
	if found.stopped != "" {
		p.box.Notes = append(p.box.Notes, fmt.Sprintf(
			"sockets and hard links: the walk of the granted trees stopped after %d entries at %s; what lies past it was not checked (grant smaller trees)",
			found.entries, found.stopped))
	}
	for _, s := range found.sockets {
		// connect() on /dev/null answers ECONNREFUSED. No pin is needed:
		// the source is the host's /dev/null, and a destination swapped
		// for a link would only put /dev/null somewhere else in the box.
		p.ops = append(p.ops, op{dest: s, order: 3, args: []string{"--ro-bind", "/dev/null", s}})
	}
	if len(found.sockets) > 0 {
		p.box.Notes = append(p.box.Notes, fmt.Sprintf("%d Unix socket(s) in the granted trees are covered (name a socket in fs.read to reach it), e.g. %s",
			len(found.sockets), found.sockets[0]))
	}
	if len(found.linked) > maxLinkBinds {
		sort.Strings(found.linked)
		return errs.Unavailablef("sandbox: %d files or directories in the writable trees have other hard links (e.g. %s), more than the %d airlock binds read-only; "+
			"make them copies (uv: UV_LINK_MODE=copy; pnpm: package-import-method=copy; git clone --no-hardlinks) or grant the tree read-only",
			len(found.linked), found.linked[0], maxLinkBinds)
	}
	for _, l := range found.linked {
		pn, err := pin(l, p.writable)
		if err != nil {
			return errs.Wrap(errs.Unavailable, err, "sandbox: hard-linked file")
		}
		p.bindFD(pn, l, false, 3)
	}
	if len(found.linked) > 0 {
		p.box.Notes = append(p.box.Notes, strconv.Itoa(len(found.linked))+" file(s) or director(ies) in the writable trees have other hard links and are read-only, e.g. "+found.linked[0])
	}
	return nil
}

// filterOptions are the seccomp options of the box. S_ISGID is let
// through (for `chmod g+s` on a directory) only when the box's group is
// not the host's group 0: the box runs as the caller's own uid and gid (or
// the checkout owner's, see chooseUser), so a set-group-ID file it makes
// carries that group, which every file that user makes carries too; under
// group 0 it would be a set-group-ID-root program on the host.
func (p *planner) filterOptions() seccomp.Options {
	_, gid := p.boxIDs()
	return seccomp.Options{Ptrace: p.spec.Ptrace, SetGID: gid != 0}
}

// RunAs is a user and group bubblewrap is started as instead of
// airlock's own.
type RunAs struct {
	UID, GID uint32
}

// boxIDs are the host uid and gid the box runs as.
func (p *planner) boxIDs() (uid, gid int) {
	if p.runAs != nil {
		return int(p.runAs.UID), int(p.runAs.GID)
	}
	return os.Getuid(), os.Getgid()
}

// chooseUser decides who the box is. airlock run as root on a writable
// checkout owned by another user (a CI job as root on the runner's
// checkout, sudo in a developer's tree) would give a box whose root has no
// capability over that user's files: every write fails EACCES. Granting
// the box's root CAP_DAC_OVERRIDE would not help (a capability in a user
// namespace reaches only files of uids mapped in it) and would be the
// wrong direction besides. Instead bubblewrap is started as the owner of
// the working directory: the box is then that user's unprivileged box,
// writes as that user, and its files belong to that user on the host. Read
// grants are then read with that user's rights. Only a working directory
// that is writable in this run chooses; otherwise the box is airlock's
// user as before.
func (p *planner) chooseUser(wd *pinned, writable bool) error {
	if os.Geteuid() != 0 || !writable {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(wd.f.Fd()), &st); err != nil {
		return errs.Wrap(errs.Unavailable, err, "sandbox: working directory owner")
	}
	if st.Uid == 0 {
		return nil
	}
	gid := st.Gid
	if gid == 0 {
		// A directory of the user's with group root: the box must not
		// run with group 0 (see filterOptions). It gets the user's
		// primary group, or the overflow group when the user database
		// does not say one.
		gid = 65534
		if u, err := user.LookupId(strconv.FormatUint(uint64(st.Uid), 10)); err == nil {
			if g, err := strconv.ParseUint(u.Gid, 10, 32); err == nil && g != 0 {
				gid = uint32(g)
			}
		}
	}
	p.runAs = &RunAs{UID: st.Uid, GID: gid}
	p.box.RunAs = p.runAs
	p.box.Notes = append(p.box.Notes, fmt.Sprintf("airlock runs as root and the working directory belongs to uid %d: the box runs as uid %d, gid %d", st.Uid, st.Uid, gid))
	return nil
}

// proxyForUser lets a box started as another user connect to the egress
// proxy's socket (connect needs write permission on it, and a bubblewrap
// without --bind-fd must reach its directory): the socket and its
// directory, made for this run by the egress proxy and removed after it,
// are given to that user. The proxy still answers only holders of the
// run's token.
func (p *planner) proxyForUser(pn *pinned) error {
	if p.runAs == nil {
		return nil
	}
	uid, gid := int(p.runAs.UID), int(p.runAs.GID)
	if err := unix.Fchownat(int(pn.f.Fd()), "", uid, gid, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return errs.Wrap(errs.Unavailable, err, "sandbox: give the egress socket to uid %d", uid)
	}
	dir := filepath.Dir(pn.real)
	if !strings.HasPrefix(filepath.Base(dir), "airlock-egress-") {
		return p.refuse(dir, "the egress socket is not in a directory of its own; a box as another user cannot reach it")
	}
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "sandbox: egress socket directory")
	}
	defer unix.Close(dfd)
	if err := unix.Fchownat(dfd, "", uid, gid, unix.AT_EMPTY_PATH); err != nil {
		return errs.Wrap(errs.Unavailable, err, "sandbox: give the egress socket directory to uid %d", uid)
	}
	return nil
}

// etcPaths expands etcFiles: an entry with a '*' names every match (the
// JDK's directory carries its version).
// Each directory a pattern lies in is read once (filepath.Glob read /etc
// once per pattern), and its names matched as Glob matches them.
func etcPaths() []string {
	var out []string
	names := map[string][]string{}
	for _, f := range etcFiles {
		if !strings.Contains(f, "*") {
			out = append(out, f)
			continue
		}
		dir, pat := filepath.Split(f)
		ns, ok := names[dir]
		if !ok {
			ns = dirNames(dir)
			names[dir] = ns
		}
		var m []string
		for _, n := range ns {
			if ok, _ := filepath.Match(pat, n); ok {
				m = append(m, dir+n)
			}
		}
		sort.Strings(m)
		out = append(out, m...)
	}
	return out
}

// dirNames are the names in dir, as Readdirnames gives them (none when it
// cannot be read). They are read again only when dir changed: the cache
// is keyed by dir's identity and its modification and change times,
// which any entry made, removed or renamed in it moves. A directory that
// changed within etcRacyWindow of the reading is not kept, since a
// change within the same tick of the file system's clock would not move
// its times (as the /etc view's rule, etcview_linux.go). Every plan
// matched /etc's hundreds of names against the globs of etcFiles.
func dirNames(dir string) []string {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return nil
	}
	var buf [stampIDMax]byte
	id := string(appendStampID(buf[:0], &st))
	dirNamesCache.Lock()
	c, ok := dirNamesCache.m[dir]
	dirNamesCache.Unlock()
	if ok && c.id == id {
		return c.names
	}
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	var now unix.Stat_t
	// Kept only when read whole, from the directory stat above (the
	// descriptor's own stat, after the reading), settled for the window.
	if err != nil || unix.Fstat(int(d.Fd()), &now) != nil || string(appendStampID(buf[:0], &now)) != id ||
		time.Since(time.Unix(0, now.Ctim.Nano())) < etcRacyWindow || time.Since(time.Unix(0, now.Mtim.Nano())) < etcRacyWindow {
		return names
	}
	dirNamesCache.Lock()
	if dirNamesCache.m == nil {
		dirNamesCache.m = map[string]dirListing{}
	}
	dirNamesCache.m[dir] = dirListing{id: id, names: names}
	dirNamesCache.Unlock()
	return names
}

// dirNamesCache holds dirNames' readings by directory.
var dirNamesCache struct {
	sync.Mutex
	m map[string]dirListing
}

type dirListing struct {
	id    string // the directory's stamp (appendStampID) when read
	names []string
}

// persistentHome binds spec.HomeDir writable at HOME h. The directory is
// airlock's own state, kept per working directory; it may not lie inside
// a writable grant or hold one (a home the box writes would then be a way
// to plant files in the project, or the project a way into the home), and
// HOME may not be a system path.
func (p *planner) persistentHome(h string) error {
	if p.isSystem(h) {
		return p.refuse(h, "HOME is a system path; a kept home needs HOME elsewhere")
	}
	pn, err := pin(p.spec.HomeDir, p.writable)
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "sandbox: kept home")
	}
	if !pn.isDir() {
		pn.f.Close()
		return p.refuse(p.spec.HomeDir, "a kept home must be a directory")
	}
	for _, w := range p.writable {
		if within(pn.real, w) || within(w, pn.real) {
			pn.f.Close()
			return p.refuse(p.spec.HomeDir, "a kept home may not lie inside the writable directory "+w+" or contain it")
		}
	}
	p.bindFD(pn, h, true, 2)
	p.box.Notes = append(p.box.Notes, "HOME "+h+" is kept between runs in "+pn.real)
	return nil
}

// channelFindings say what a box shares with the host beside its grants,
// and what airlock tells a box about granted caches.
func (r *Report) channelFindings() {
	r.add(SevInfo, "channels",
		"sockets: a box may create only AF_UNIX, AF_INET, AF_INET6 and route netlink sockets (vsock, packet, AF_ALG and netfilter netlink answer EAFNOSUPPORT); native AIO (io_setup) answers ENOSYS; /proc is read-only with the host's keyrings, timers and allocator state covered.",
		"Nothing to do.")
	r.add(SevInfo, "channels",
		fmt.Sprintf("Unix sockets inside granted trees are covered unless fs.read names the socket itself, and files of writable trees with other hard links are bound read-only (at most %d; the walk reads at most %d entries).", maxLinkBinds, scanBudget),
		"To reach an agent's socket, name it in fs.read (e.g. ~/.gnupg/S.gpg-agent); for a tree linked from a cache, make copies (UV_LINK_MODE=copy, pnpm package-import-method=copy, git clone --no-hardlinks).")
	if os.Getgid() == 0 {
		r.add(SevInfo, "channels", "airlock runs with group 0, so the box may not make set-group-ID files or directories (chmod g+s fails with EPERM): on the host they would carry group root.",
			"Run airlock as an ordinary user to let chmod g+s work on directories of writable grants.")
	}
	var caches []string
	for _, c := range ToolCaches {
		caches = append(caches, "~/"+c.Rel+" → "+c.Env)
	}
	r.add(SevInfo, "caches", "a policy that grants one of "+strings.Join(caches, ", ")+" (by name in fs.read, or inside fs.write in fix mode) has the box told the variable, since the box's HOME is its own.",
		"Grant the cache by name, e.g. fs.read: [\"~/.cache/go-build\"], or fs.write for a cache the box may fill.")
}
