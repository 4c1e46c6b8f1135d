//go:build unix

package privfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
)

// Options say what else may write along a path. The zero value: no path is
// the box's, and no directory is created.
type Options struct {
	// BoxWritable are the paths a box may write (a policy's fs.write, as
	// granted to the box); nil means none. A directory at or beneath one
	// of them, at either spelling (as written or with its links resolved)
	// or as the same directory by device and inode, is refused, and so is
	// a file at one of them.
	BoxWritable []string
	// MakeDirs creates missing directories on the way, mode 0700; false
	// makes a missing directory an error.
	MakeDirs bool
}

// maxLinks bounds the symbolic links one walk follows, as the kernel does.
const maxLinks = 40

// WriteFile replaces the file at path with data (mode perm): it writes a new
// temporary file beside it, flushes it, renames it over path and flushes the
// directory, so a crash leaves the old file or the new one and whatever was
// at path (a link, a file with other names) is replaced, never written
// through.
func WriteFile(path string, data []byte, perm fs.FileMode, o Options) error {
	d, name, err := openParent(path, o)
	if err != nil {
		return err
	}
	defer d.close()
	return d.replace(name, data, perm)
}

// OpenAppend opens the file at path for appending (flag is os.O_WRONLY or
// os.O_RDWR), creating it with mode perm when it does not exist. A link at
// path, a file that is not regular, a file with more than one name (a hard
// link could be the host's /etc/shadow) and, under root, a file owned by
// another user are refused.
func OpenAppend(path string, flag int, perm fs.FileMode, o Options) (*os.File, error) {
	if flag != os.O_WRONLY && flag != os.O_RDWR {
		return nil, errs.Invalidf("privfile: %s: open for appending takes os.O_WRONLY or os.O_RDWR", path)
	}
	d, name, err := openParent(path, o)
	if err != nil {
		return nil, err
	}
	defer d.close()
	return d.openAppend(name, flag, perm)
}

// MkdirAll makes sure the directory path exists (creating what is missing,
// mode 0700, when o.MakeDirs) and that every directory from "/" to it
// passes the checks WriteFile makes, so files placed in it later by name
// are airlock's alone.
func MkdirAll(path string, o Options) error {
	w, err := newWalker(o)
	if err != nil {
		return err
	}
	abs, err := absolute(path)
	if err != nil {
		return err
	}
	d, err := w.walk(abs, split(abs))
	if err != nil {
		return err
	}
	d.close()
	return nil
}

// absolute cleans path and makes it absolute against the working directory.
func absolute(path string) (string, error) {
	if path == "" {
		return "", errs.Invalidf("privfile: no path given")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", errs.Wrap(errs.Invalid, err, "privfile: %s", path)
	}
	return abs, nil
}

// openParent walks to the directory of path and returns it with the final
// name, after checking that name is not itself one of the box's paths.
func openParent(path string, o Options) (*dir, string, error) {
	w, err := newWalker(o)
	if err != nil {
		return nil, "", err
	}
	abs, err := absolute(path)
	if err != nil {
		return nil, "", err
	}
	name := filepath.Base(abs)
	if name == "/" || name == "." || name == ".." {
		return nil, "", errs.Invalidf("privfile: %s names no file", path)
	}
	d, err := w.walk(abs, split(filepath.Dir(abs)))
	if err != nil {
		return nil, "", err
	}
	if err := w.checkName(abs, d, name); err != nil {
		d.close()
		return nil, "", err
	}
	return d, name, nil
}

// checkName refuses name in d (checked already) when it is one of the
// box's paths, by path or by device and inode; path is what the caller
// asked for, for errors.
func (w *walker) checkName(path string, d *dir, name string) error {
	full := filepath.Join(d.path, name)
	if g := w.boxPath(full); g != "" {
		return boxErr(path, full, g)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && w.boxInode(&st) != "" {
		return boxErr(path, full, w.boxInode(&st))
	}
	return nil
}

func boxErr(path, where, grant string) error {
	return errs.Invalidf("privfile: %s: %s is writable by the box (fs.write %s); name a place outside the box's writable paths", path, where, grant)
}

func split(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

// grant is one of the box's writable paths, as written and resolved, with
// the identity of the file or directory it names when it exists.
type grant struct {
	orig      string
	spellings []string
	dev, ino  uint64
	exists    bool
}

type walker struct {
	grants []grant
	// strict applies the StrictModes rule: airlock runs as root, so a
	// directory another user may change could redirect a root write.
	strict bool
	euid   int
	mkdirs bool
}

func newWalker(o Options) (*walker, error) {
	w := &walker{euid: os.Geteuid(), mkdirs: o.MakeDirs}
	w.strict = strictModes(w.euid)
	// A path given twice (a box's writable paths hold the working
	// directory as spelled and as resolved, often the same) is resolved
	// and stat once.
	seen := map[string]bool{}
	for _, b := range o.BoxWritable {
		if b == "" {
			continue
		}
		abs, err := absolute(b)
		if err != nil {
			return nil, err
		}
		if seen[abs] {
			continue
		}
		seen[abs] = true
		g := grant{orig: b, spellings: []string{abs}}
		if r := resolve(abs); r != "" && r != abs {
			g.spellings = append(g.spellings, r)
		}
		var st unix.Stat_t
		if unix.Stat(abs, &st) == nil {
			g.dev, g.ino, g.exists = uint64(st.Dev), uint64(st.Ino), true
		}
		w.grants = append(w.grants, g)
	}
	return w, nil
}

// strictModes says whether the StrictModes rule applies; a variable so
// tests can see both sides.
var strictModes = func(euid int) bool { return euid == 0 }

// resolve gives p with its links resolved as far as it exists; "" when not
// even "/" resolves.
func resolve(p string) string {
	rest := ""
	for cur := p; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return ""
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// boxPath returns the grant p lies at or beneath, or "".
func (w *walker) boxPath(p string) string {
	for _, g := range w.grants {
		for _, s := range g.spellings {
			if p == s || s == "/" || strings.HasPrefix(p, s+"/") {
				return g.orig
			}
		}
	}
	return ""
}

// boxInode returns the grant that is the file st describes, or "".
func (w *walker) boxInode(st *unix.Stat_t) string {
	for _, g := range w.grants {
		if g.exists && g.dev == uint64(st.Dev) && g.ino == uint64(st.Ino) {
			return g.orig
		}
	}
	return ""
}

// dir is a directory held open (O_PATH where the system has it) with the
// link-free path it was reached by.
type dir struct {
	fd   int
	path string
}

func (d *dir) close() {
	if d != nil && d.fd >= 0 {
		unix.Close(d.fd)
		d.fd = -1
	}
}

// walk opens the directory named by comps, from "/", checking each
// directory it passes. path is what the caller asked for, for errors.
func (w *walker) walk(path string, comps []string) (*dir, error) {
	root, err := unix.Open("/", oPath|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "privfile: open /")
	}
	stack := []*dir{{fd: root, path: "/"}}
	done := func() {
		for _, d := range stack {
			d.close()
		}
	}
	if err := w.check(path, stack[0]); err != nil {
		done()
		return nil, err
	}
	links := 0
	for len(comps) > 0 {
		c := comps[0]
		comps = comps[1:]
		top := stack[len(stack)-1]
		switch c {
		case ".":
			continue
		case "..":
			if len(stack) > 1 {
				top.close()
				stack = stack[:len(stack)-1]
			}
			continue
		}
		next := filepath.Join(top.path, c)
		fd, err := openDir(top.fd, c)
		if errors.Is(err, unix.ENOENT) && w.mkdirs {
			fd, err = w.mkdir(top, c)
		}
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			// Either a link or not a directory.
			target, lerr := w.trustedLink(top, c)
			if lerr != nil {
				done()
				if errors.Is(lerr, errUntrustedLink) {
					return nil, errs.Invalidf("privfile: %s: %s is a symbolic link others could have placed; airlock follows only links of root or its own user in directories only they may change (replace it with the directory it names)", path, next)
				}
				return nil, errs.Invalidf("privfile: %s: %s is not a directory", path, next)
			}
			if links++; links > maxLinks {
				done()
				return nil, errs.Invalidf("privfile: %s: more than %d symbolic links on the way", path, maxLinks)
			}
			if strings.HasPrefix(target, "/") {
				for _, d := range stack[1:] {
					d.close()
				}
				stack = stack[:1]
			}
			comps = append(split(target), comps...)
			continue
		}
		if err != nil {
			done()
			return nil, errs.Wrap(errs.Unavailable, err, "privfile: %s: open %s", path, next)
		}
		d := &dir{fd: fd, path: next}
		stack = append(stack, d)
		if err := w.check(path, d); err != nil {
			done()
			return nil, err
		}
	}
	last := stack[len(stack)-1]
	for _, d := range stack[:len(stack)-1] {
		d.close()
	}
	return last, nil
}

// mkdir creates c in d (mode 0700), flushes d and opens c. Someone else
// creating c first is not an error: what is there is opened and checked
// like any other directory.
func (w *walker) mkdir(d *dir, c string) (int, error) {
	err := unix.Mkdirat(d.fd, c, 0o700)
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, err
	}
	if err == nil {
		if serr := syncDir(d.fd); serr != nil {
			return -1, serr
		}
	}
	return openDir(d.fd, c)
}

// check refuses a directory the box or another user could change.
func (w *walker) check(path string, d *dir) error {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return errs.Wrap(errs.Unavailable, err, "privfile: %s: stat %s", path, d.path)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return errs.Invalidf("privfile: %s: %s is not a directory", path, d.path)
	}
	if g := w.boxPath(d.path); g != "" {
		return boxErr(path, d.path, g)
	}
	if g := w.boxInode(&st); g != "" {
		return boxErr(path, d.path, g)
	}
	if !w.strict {
		return nil
	}
	if st.Uid != 0 && int(st.Uid) != w.euid {
		return errs.Invalidf("privfile: %s: directory %s belongs to user %d, who could redirect airlock's writes (chown root %s, or name a place owned by root)", path, d.path, st.Uid, d.path)
	}
	if st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0 {
		return errs.Invalidf("privfile: %s: directory %s may be written by others (mode %04o) (chmod go-w %s, or name another place)", path, d.path, st.Mode&0o7777, d.path)
	}
	return nil
}

// replace writes data to a fresh temporary file in d and renames it to name.
func (d *dir) replace(name string, data []byte, perm fs.FileMode) error {
	full := filepath.Join(d.path, name)
	tmp, fd, err := d.createTemp(name, perm)
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "privfile: write %s", full)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(d.path, tmp))
	fail := func(err error) error {
		f.Close()
		unix.Unlinkat(d.fd, tmp, 0)
		return errs.Wrap(errs.Unavailable, err, "privfile: write %s", full)
	}
	// The mode is set on the descriptor, so the umask does not narrow it
	// and nothing can swap the file between the open and the chmod.
	if err := f.Chmod(perm.Perm()); err != nil {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		unix.Unlinkat(d.fd, tmp, 0)
		return errs.Wrap(errs.Unavailable, err, "privfile: write %s", full)
	}
	if err := unix.Renameat(d.fd, tmp, d.fd, name); err != nil {
		unix.Unlinkat(d.fd, tmp, 0)
		return errs.Wrap(errs.Unavailable, err, "privfile: rename over %s", full)
	}
	if err := syncDir(d.fd); err != nil {
		return errs.Wrap(errs.Unavailable, err, "privfile: flush %s", d.path)
	}
	return nil
}

// createTemp creates a new file named after name with a random suffix;
// O_EXCL|O_NOFOLLOW, so a name planted in advance is never opened.
func (d *dir) createTemp(name string, perm fs.FileMode) (string, int, error) {
	for range 100 {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", -1, err
		}
		tmp := "." + name + ".tmp-" + hex.EncodeToString(b[:])
		fd, err := openFile(d.fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		return tmp, fd, err
	}
	return "", -1, fmt.Errorf("no free temporary name beside %s", name)
}

func (d *dir) openAppend(name string, flag int, perm fs.FileMode) (*os.File, error) {
	full := filepath.Join(d.path, name)
	// O_NONBLOCK: opening a FIFO planted at the name must not hang airlock;
	// it is refused below as not a regular file.
	base := flag | unix.O_APPEND | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NONBLOCK
	fd, err := openFile(d.fd, name, base|unix.O_CREAT|unix.O_EXCL, uint32(perm.Perm()))
	created := err == nil
	if errors.Is(err, unix.EEXIST) {
		fd, err = openFile(d.fd, name, base, 0)
	}
	if errors.Is(err, unix.ELOOP) {
		return nil, errs.Invalidf("privfile: %s is a symbolic link; airlock does not write through links (remove it)", full)
	}
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "privfile: open %s", full)
	}
	fail := func(e error) (*os.File, error) { unix.Close(fd); return nil, e }
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fail(errs.Wrap(errs.Unavailable, err, "privfile: stat %s", full))
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fail(errs.Invalidf("privfile: %s is not a regular file (remove it)", full))
	}
	if st.Nlink > 1 {
		return fail(errs.Invalidf("privfile: %s has %d names (a hard link); airlock appends only to a file of its own (remove it)", full, st.Nlink))
	}
	if strictModes(os.Geteuid()) && st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return fail(errs.Invalidf("privfile: %s belongs to user %d (remove it, or chown root %s)", full, st.Uid, full))
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, (flag|unix.O_APPEND)&^unix.O_NONBLOCK); err != nil {
		return fail(errs.Wrap(errs.Unavailable, err, "privfile: open %s", full))
	}
	if created {
		if err := syncDir(d.fd); err != nil {
			return fail(errs.Wrap(errs.Unavailable, err, "privfile: flush %s", d.path))
		}
	}
	return os.NewFile(uintptr(fd), full), nil
}

// syncDir flushes the directory held by fd (which may be an O_PATH
// descriptor, which fsync refuses: it is reopened for reading).
func syncDir(fd int) error {
	r, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(r)
	return unix.Fsync(r)
}

var errUntrustedLink = errors.New("untrusted link")

// trustedLink reads the link name in d when it may be followed: the link
// belongs to root or to airlock's user, and so does d, which nobody else may
// write (or only with the sticky bit, under which nobody else may replace
// the link). d has passed check already. Anything else is errUntrustedLink,
// whatever the mode: a link in a directory others may write is exactly how
// a write is redirected, and the entry could change between this look and
// the next.
func (w *walker) trustedLink(d *dir, name string) (string, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return "", err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		return "", unix.ENOTDIR
	}
	var ds unix.Stat_t
	if err := unix.Fstat(d.fd, &ds); err != nil {
		return "", err
	}
	ours := func(uid uint32) bool { return uid == 0 || int(uid) == w.euid }
	if !ours(st.Uid) || !ours(ds.Uid) || ds.Mode&0o022 != 0 && ds.Mode&unix.S_ISVTX == 0 {
		return "", errUntrustedLink
	}
	return readLink(d.fd, name)
}

// readLink reads the link name in dirfd.
func readLink(dirfd int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "", err
	}
	if n >= len(buf) {
		return "", unix.ENAMETOOLONG
	}
	return string(buf[:n]), nil
}

// ReadFile reads the file at path, at most max bytes, only when airlock
// could have written it itself: every directory on the way passes the
// checks WriteFile makes, the name is no link, and the file is regular,
// has one name, belongs to this user (or root) and no one else may write
// it. Anything else is an error, so a caller that keeps state there (a
// cache) trusts nothing a box or another user could have put in its place.
func ReadFile(path string, max int64, o Options) ([]byte, error) {
	d, name, err := openParent(path, o)
	if err != nil {
		return nil, err
	}
	defer d.close()
	return readIn(d, name, max)
}

// ReadFileAt is ReadFile of name in dir, a directory OpenDir returned
// with the same o: the walk to it, and its checks, are not made again.
// name is one component; the file's own checks are ReadFile's.
func ReadFileAt(in *os.File, name string, max int64, o Options) ([]byte, error) {
	if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
		return nil, errs.Invalidf("privfile: %q is not a name in %s", name, in.Name())
	}
	w, err := newWalker(o)
	if err != nil {
		return nil, err
	}
	d := &dir{fd: int(in.Fd()), path: in.Name()}
	if err := w.checkName(filepath.Join(d.path, name), d, name); err != nil {
		return nil, err
	}
	return readIn(d, name, max)
}

// readIn reads name in d, which the caller checked, when the file passes
// ReadFile's checks.
func readIn(d *dir, name string, max int64) ([]byte, error) {
	full := filepath.Join(d.path, name)
	fd, err := openFile(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "privfile: open %s", full)
	}
	f := os.NewFile(uintptr(fd), full)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "privfile: stat %s", full)
	}
	euid := os.Geteuid()
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, errs.Invalidf("privfile: %s is not a regular file", full)
	case st.Nlink > 1:
		return nil, errs.Invalidf("privfile: %s has %d names", full, st.Nlink)
	case st.Uid != 0 && int(st.Uid) != euid:
		return nil, errs.Invalidf("privfile: %s belongs to user %d", full, st.Uid)
	case st.Mode&0o022 != 0:
		return nil, errs.Invalidf("privfile: %s may be written by others (mode %o)", full, st.Mode&0o777)
	case st.Size > max:
		return nil, errs.Invalidf("privfile: %s is over %d bytes", full, max)
	}
	buf := make([]byte, st.Size+1)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, errs.Wrap(errs.Unavailable, err, "privfile: read %s", full)
	}
	if int64(n) > st.Size {
		return nil, errs.Invalidf("privfile: %s grew while read", full)
	}
	return buf[:n], nil
}

// OpenDir returns the directory path (created, mode 0700, when o.MakeDirs),
// held open with O_PATH, after every directory from "/" to it passed the
// checks WriteFile makes: a caller that keeps a tree of its own there (a
// cache) works beneath the descriptor with *at calls and never through a
// name someone else could re-point.
func OpenDir(path string, o Options) (*os.File, error) {
	w, err := newWalker(o)
	if err != nil {
		return nil, err
	}
	abs, err := absolute(path)
	if err != nil {
		return nil, err
	}
	d, err := w.walk(abs, split(abs))
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(d.fd), d.path), nil
}
