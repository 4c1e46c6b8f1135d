package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/starttrace"
	"github.com/airlock-run/airlock/sandbox/boxconf"
)

// pinned is a path opened one component at a time with O_PATH|O_NOFOLLOW.
// The descriptor is what gets bound into the box, so a link swapped after the
// check changes nothing: bubblewrap binds the inode the descriptor holds and
// checks its device and inode after mounting, and the init checks them again
// from inside.
type pinned struct {
	f        *os.File
	real     string // the path with every link resolved
	dev, ino uint64
	mode     uint32
	// st is what f was found to be when pin opened it; zero in a pinned
	// made otherwise.
	st unix.Stat_t
}

func (p *pinned) isDir() bool { return p.mode&unix.S_IFMT == unix.S_IFDIR }

// bindError is a refused or failed bind: the path, what was wrong, and why it
// matters.
type bindError struct {
	Path string
	What string
	Err  error
}

func (e *bindError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("bind %s: %s: %v", e.Path, e.What, e.Err)
	}
	return fmt.Sprintf("bind %s: %s", e.Path, e.What)
}

func (e *bindError) Unwrap() error { return e.Err }

// maxLinks bounds the links followed while resolving one path, like the
// kernel's own limit.
const maxLinks = 40

// within reports whether p is dir or lies under it (both clean, absolute).
func within(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// withinAny returns the first of dirs that p lies in, or "".
func withinAny(p string, dirs []string) string {
	for _, d := range dirs {
		if within(p, d) {
			return d
		}
	}
	return ""
}

// withinAnyFile is withinAny for a file the host runs or trusts (the
// airlock binary, airlock-box, a host program's directory): p also lies in
// d when p or a directory above it is d's very directory under another
// name, by device and inode. A bind mount shows one directory at two
// paths, and a grant of the second spelling lets a box write the first,
// which no comparison of path strings sees. What cannot be stat is left to
// the lexical answer.
func withinAnyFile(p string, dirs []string) string { return newFileDirs(dirs).within(p) }

// fileDirs are directories weighed as withinAnyFile weighs them, each
// stat once for every path weighed against them in one check (and not
// at all while the paths' spelling answers).
type fileDirs struct {
	dirs []string
	ids  map[dirID]string // nil until a path's spelling did not answer
}

type dirID struct{ dev, ino uint64 }

func newFileDirs(dirs []string) *fileDirs { return &fileDirs{dirs: dirs} }

// within is withinAnyFile(p, f's dirs).
func (f *fileDirs) within(p string) string {
	if w := withinAny(p, f.dirs); w != "" {
		return w
	}
	if f.ids == nil {
		f.ids = make(map[dirID]string, len(f.dirs))
		for _, d := range f.dirs {
			var st unix.Stat_t
			if unix.Stat(d, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
				f.ids[dirID{st.Dev, st.Ino}] = d
			}
		}
	}
	for a := filepath.Clean(p); ; a = filepath.Dir(a) {
		var st unix.Stat_t
		if unix.Stat(a, &st) == nil {
			if d, ok := f.ids[dirID{st.Dev, st.Ino}]; ok {
				return d
			}
		}
		if a == "/" || a == "." {
			return ""
		}
	}
}

// pin resolves path one component at a time from the root and returns a
// descriptor for what it names. writable holds the directories the box (or
// an earlier box) may write, in every spelling; it refuses, with the path and
// why, when a symbolic link on the way lies inside one of them (whoever runs
// there could re-point it), and when a path spelled outside them reaches its
// target inside one (the bind would follow a link into agent-controlled
// ground).
func pin(path string, writable []string) (*pinned, error) { return pinFrom(nil, path, writable) }

// pinFrom is pin with the walk started at from, a directory pinned with
// the same writable, when path lies lexically beneath from's resolved
// path: the components up to it are taken as they were resolved then
// (from nil, or path elsewhere, walks from the root). The /etc step pins
// its few dozen files from one pin of /etc, not each from the root.
func pinFrom(from *pinned, path string, writable []string) (*pinned, error) {
	defer starttrace.Begin("pin")()
	if !filepath.IsAbs(path) {
		return nil, &bindError{Path: path, What: "not an absolute path"}
	}
	orig := filepath.Clean(path)
	cur := "/"
	rest := splitPath(orig)
	var fd int
	var err error
	// borrowed: fd is from's own descriptor, which the walk steps from
	// but never closes (nor returns: see the end).
	borrowed := false
	if from != nil && from.isDir() && orig != from.real && within(orig, from.real) {
		fd, borrowed = int(from.f.Fd()), true
		cur, rest = from.real, splitPath(strings.TrimPrefix(orig, from.real))
	} else if fd, err = unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return nil, &bindError{Path: path, What: "open /", Err: err}
	}
	links := 0
	// last is the stat of fd when have is set: the walk's own stat of the
	// component it stepped into, so the end needs none of its own.
	var last unix.Stat_t
	have := false
	closeFD := func() {
		if fd >= 0 && !borrowed {
			unix.Close(fd)
		}
		borrowed = false
	}
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case ".", "":
			continue
		case "..":
			// Lexical ".." after links were expanded: reopen the parent by
			// its resolved path so nothing escapes the walk.
			parent := filepath.Dir(cur)
			nfd, err := unix.Open(parent, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				closeFD()
				return nil, &bindError{Path: path, What: "open " + parent, Err: err}
			}
			closeFD()
			fd, cur, have = nfd, parent, false
			continue
		}
		next := filepath.Join(cur, name)
		nfd, err := unix.Openat(fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			closeFD()
			return nil, &bindError{Path: path, What: "resolve " + next, Err: err}
		}
		var st unix.Stat_t
		if err := unix.Fstat(nfd, &st); err != nil {
			unix.Close(nfd)
			closeFD()
			return nil, &bindError{Path: path, What: "stat " + next, Err: err}
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			if w := withinAny(next, writable); w != "" {
				unix.Close(nfd)
				closeFD()
				return nil, &bindError{Path: path, What: fmt.Sprintf("symbolic link %s lies inside the writable directory %s, so what it points at can change; give the resolved path instead", next, w)}
			}
			links++
			if links > maxLinks {
				unix.Close(nfd)
				closeFD()
				return nil, &bindError{Path: path, What: "too many symbolic links"}
			}
			target, err := readlinkat(fd, name)
			unix.Close(nfd)
			if err != nil {
				closeFD()
				return nil, &bindError{Path: path, What: "read link " + next, Err: err}
			}
			if filepath.IsAbs(target) {
				closeFD()
				fd, err = unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
				if err != nil {
					return nil, &bindError{Path: path, What: "open /", Err: err}
				}
				cur, have = "/", false
			}
			rest = append(splitPath(target), rest...)
			continue
		}
		if len(rest) > 0 && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			unix.Close(nfd)
			closeFD()
			return nil, &bindError{Path: path, What: next + " is not a directory"}
		}
		closeFD()
		fd, cur, last, have = nfd, next, st, true
	}
	if borrowed {
		// The walk ended where it began (a link to "." beneath from):
		// the result is a descriptor of its own.
		if fd, err = unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0); err != nil {
			return nil, &bindError{Path: path, What: "duplicate the descriptor of " + cur, Err: err}
		}
		borrowed = false
	}
	if !have {
		if err := unix.Fstat(fd, &last); err != nil {
			closeFD()
			return nil, &bindError{Path: path, What: "stat", Err: err}
		}
	}
	st := last
	if withinAny(orig, writable) == "" {
		if w := withinAny(cur, writable); w != "" {
			closeFD()
			return nil, &bindError{Path: path, What: fmt.Sprintf("resolves to %s inside the writable directory %s", cur, w)}
		}
	}
	return &pinned{f: os.NewFile(uintptr(fd), cur), real: cur, dev: uint64(st.Dev), ino: st.Ino, mode: st.Mode, st: st}, nil
}

func splitPath(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func readlinkat(dirfd int, name string) (string, error) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < len(buf) {
			return string(buf[:n]), nil
		}
		buf = make([]byte, 2*len(buf))
	}
}

// grantRoots are the write roots and the working directory, pinned by
// pinRoots; pinGrants binds them. Both tiers plan from them, so a rule
// about what a grant may reach holds at every tier.
type grantRoots struct {
	roots []grantRoot
	wd    *pinned
	// wdRW: a writable root covers the working directory.
	wdRW bool
}

type grantRoot struct {
	pn *pinned
	rw bool
}

// pinRoots pins the write grants and the working directory and sets
// p.writable, against which every later pin is checked: writable roots
// first, in both the spelling given and the resolved one. It binds
// nothing; pinGrants does, after the tier's own system binds.
func (p *planner) pinRoots() (*grantRoots, error) {
	spec := p.spec
	g := &grantRoots{}
	var writeSpell []string
	for _, w := range spec.Write {
		writeSpell = append(writeSpell, filepath.Clean(w))
	}
	writeSpell = append(writeSpell, filepath.Clean(spec.Workdir))
	for _, w := range spec.Write {
		// A root reached through a link inside another writable root is
		// refused like any other bind: what the box wrote before could
		// have planted it.
		var others []string
		for _, o := range spec.Write {
			if filepath.Clean(o) != filepath.Clean(w) {
				others = append(others, filepath.Clean(o))
			}
		}
		pn, err := pin(w, others)
		if err != nil {
			g.close()
			return nil, errs.Wrap(errs.Unavailable, err, "sandbox: write grant")
		}
		for _, r := range refusedWrite {
			if within(pn.real, r) || within(r, pn.real) {
				pn.f.Close()
				g.close()
				return nil, p.refuse(w, fmt.Sprintf("a write grant may not reach %s (it resolves to %s)", r, pn.real))
			}
		}
		if !pn.isDir() {
			pn.f.Close()
			g.close()
			return nil, p.refuse(w, "a write grant must be a directory")
		}
		g.roots = append(g.roots, grantRoot{pn, spec.Writable})
		writeSpell = append(writeSpell, pn.real)
	}
	p.writable = writeSpell

	// Workdir: its own bind, writable only when a write grant covers it.
	switch wdc := filepath.Clean(spec.Workdir); {
	case wdc == "/":
		g.close()
		return nil, p.refuse(spec.Workdir, "the whole file system cannot be the working directory")
	case within(wdc, "/proc") || within(wdc, "/sys") || within(wdc, "/dev"):
		g.close()
		return nil, p.refuse(spec.Workdir, "the kernel's interfaces are never bound from the host")
	}
	var wdOthers []string
	for _, w := range writeSpell {
		if w != filepath.Clean(spec.Workdir) {
			wdOthers = append(wdOthers, w)
		}
	}
	wd, err := pin(spec.Workdir, wdOthers)
	if err != nil {
		g.close()
		return nil, errs.Wrap(errs.Unavailable, err, "sandbox: working directory")
	}
	g.wd = wd
	p.writable = append(p.writable, wd.real)
	for _, r := range g.roots {
		if within(wd.real, r.pn.real) && r.rw {
			g.wdRW = true
		}
	}
	return g, nil
}

// close releases the pins not yet handed to a bind (a refused plan).
func (g *grantRoots) close() {
	for _, r := range g.roots {
		r.pn.f.Close()
	}
	if g.wd != nil {
		g.wd.f.Close()
	}
}

// pinGrants binds what the policy grants, in the same order at every
// tier: the read grants, the write roots, the working directory, the
// extra binds, a private or kept HOME, the protected paths with the policy
// file, and last the covers of the channels the walk of the granted trees
// finds (sockets, hard-linked files). Every bind is a p.bindFD of a pinned
// descriptor; tier 1 hands the operations to bubblewrap, tier 2 turns them
// into its OCI mounts (gvisorBox.mount). The pins of g belong to the box
// from here on.
func (p *planner) pinGrants(g *grantRoots, home string) error {
	spec, b, wd := p.spec, p.box, g.wd
	var grants []scanRoot // walked for sockets and hard links (closeChannels)
	for _, r := range spec.Read {
		clean := filepath.Clean(r)
		for _, bad := range []string{"/proc", "/sys", "/dev"} {
			if within(clean, bad) {
				return p.refuse(r, "the kernel's interfaces are never bound from the host")
			}
		}
		if clean == "/" {
			return p.refuse(r, "the whole file system cannot be granted; name the directories")
		}
		pn, err := pin(r, p.writable)
		if err != nil {
			return errs.Wrap(errs.Unavailable, err, "sandbox: read grant")
		}
		// Inside the working directory or a write grant it is already in
		// the box; a read-only bind there would take away a write the
		// policy granted.
		covered := within(pn.real, wd.real)
		for _, r := range g.roots {
			covered = covered || within(pn.real, r.pn.real)
		}
		if covered {
			pn.f.Close()
			continue
		}
		p.bindFD(pn, pn.real, false, 2)
		grants = append(grants, scanRoot{path: pn.real})
	}
	for _, r := range g.roots {
		p.bindFD(r.pn, r.pn.real, r.rw, 2)
		grants = append(grants, scanRoot{path: r.pn.real, rw: r.rw})
	}
	wdOwn := !p.has(wd.real)
	if wdOwn {
		p.bindFD(wd, wd.real, g.wdRW, 2)
		grants = append(grants, scanRoot{path: wd.real, rw: g.wdRW})
	} else {
		wd.f.Close()
	}
	for _, bd := range spec.Binds {
		dst := bd.Dst
		if dst == "" {
			dst = bd.Src
		}
		if !filepath.IsAbs(dst) {
			return p.refuse(dst, "bind destination is not absolute")
		}
		pn, err := pin(bd.Src, p.writable)
		if err != nil {
			return errs.Wrap(errs.Unavailable, err, "sandbox: bind")
		}
		if w := withinAny(pn.real, p.writable); w != "" && filepath.Clean(dst) != pn.real {
			pn.f.Close()
			return p.refuse(bd.Src, "lies inside the writable directory "+w+" and would be bound elsewhere")
		}
		p.bindFD(pn, filepath.Clean(dst), false, 2)
	}

	// HOME is private unless a bind already provides it.
	if filepath.IsAbs(home) && home != "/" {
		h := filepath.Clean(home)
		switch {
		case spec.HomeDir != "":
			if err := p.persistentHome(h); err != nil {
				return err
			}
		case p.coveredByBind(h):
			b.Notes = append(b.Notes, "HOME "+h+" lies inside a bound directory; it is that directory, not a private one")
		case within(h, "/tmp") || within(h, "/var/tmp") || within(h, "/run"):
			// Already a private tmpfs; only the directory is missing.
			p.ops = append(p.ops, op{dest: h, order: 1, args: []string{"--dir", h}})
		case p.isSystem(h):
			b.Notes = append(b.Notes, "HOME "+h+" is a system path; it is not made private")
		default:
			p.ops = append(p.ops, op{dest: h, order: 0, args: []string{"--tmpfs", h}})
		}
	}

	// Protected paths inside every writable root.
	if spec.Writable {
		var prs []*pinned
		for _, r := range g.roots {
			prs = append(prs, r.pn)
		}
		if g.wdRW && wdOwn {
			prs = append(prs, wd)
		}
		if err := p.protectRoots(prs); err != nil {
			return err
		}
		if err := p.pinPolicyFile(); err != nil {
			return err
		}
		b.Protected = true
	}
	return p.closeChannels(grants)
}

// pinPolicyFile binds the policy file read-only, with the directories
// between it and its writable root pinned in place, when it lies inside
// a writable directory: the box must not rewrite the rules it runs under.
func (p *planner) pinPolicyFile() error {
	if p.spec.PolicyFile == "" {
		return nil
	}
	pf := filepath.Clean(p.spec.PolicyFile)
	if withinAny(pf, p.writable) == "" {
		return nil
	}
	pn, err := pin(pf, nil)
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "sandbox: policy file")
	}
	if pn.mode&unix.S_IFMT == unix.S_IFLNK {
		pn.f.Close()
		return p.refuse(pf, "the policy file is a symbolic link inside a writable directory")
	}
	if err := p.pinParents(pn.real); err != nil {
		pn.f.Close()
		return err
	}
	p.bindFD(pn, pn.real, false, 3)
	return nil
}

// pinProxy pins the egress proxy's socket, the one way out of a box with
// network, and gives it to the box's user when that is not airlock's.
func (p *planner) pinProxy() (*pinned, error) {
	n := p.spec.Net
	if n.ProxySocket == "" || n.Token == "" {
		return nil, errs.Invalidf("sandbox: network needs the proxy socket and a token")
	}
	pn, err := pin(n.ProxySocket, p.writable)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "sandbox: egress proxy socket")
	}
	if pn.mode&unix.S_IFMT != unix.S_IFSOCK {
		pn.f.Close()
		return nil, p.refuse(n.ProxySocket, "not a Unix socket")
	}
	if err := p.proxyForUser(pn); err != nil {
		pn.f.Close()
		return nil, err
	}
	return pn, nil
}

// bindConnect binds the airlock binary ex a second time at boxConnPath:
// git runs its proxy command by name with only HOST PORT, so the binary
// answers to the name airlock-connect there.
func (p *planner) bindConnect(ex *pinned) error {
	dup, err := unix.Dup(int(ex.f.Fd()))
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "sandbox: airlock binary")
	}
	unix.CloseOnExec(dup)
	p.bindFD(&pinned{f: os.NewFile(uintptr(dup), ex.real), real: ex.real, dev: ex.dev, ino: ex.ino, mode: ex.mode}, boxConnPath, false, 2)
	return nil
}

// netConfig is what the in-box init needs to run the forwarder, which
// reaches the proxy at socket (the box's path).
func (p *planner) netConfig(socket string) *boxconf.Net {
	return &boxconf.Net{Socket: socket, Token: p.spec.Net.Token, HTTPPort: boxHTTPPort, SOCKSPort: boxSOCKSPort,
		Exe: boxInitPath, ConnectExe: boxConnPath}
}
