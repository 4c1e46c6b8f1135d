package boxinit

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A warm box's scratch directories (/tmp, /var/tmp, /run, /dev, a private
// HOME: each a tmpfs of the box's own) are brought back after every call to
// what they held when the box was set up, before any call ran: bubblewrap's
// own entries (the mount points of binds, /dev's links and device binds)
// stay, everything a call made goes. Nothing on another file system (a
// mount point: a grant bound inside /tmp, a device) is entered or removed.
// An entry of the first state that a call replaced or changed cannot be put
// back as it was: the box is then dirty and the runner retires it.

// maxScratchDepth bounds the directories walked; a deeper tree leaves the
// box dirty.
const maxScratchDepth = 256

// entryState is what is kept of one entry of the first state. The change
// time, which no call can set, gives away any other change to a file that
// is not a directory (its content or extended attributes with the size
// and modification time put back); a directory's extended attributes
// (a default ACL, user.*) are kept apart and put back.
type entryState struct {
	ino, size    uint64
	mode         uint32
	mtime, ctime unix.Timespec
	xattrs       string // a directory's, as xattrsOf lists them
}

// scratchRoot is one scratch directory and its first state, keyed by the
// path below it ("" is the directory itself).
type scratchRoot struct {
	dir   string
	dev   uint64
	first map[string]entryState
}

// snapshotScratch records the first state of each directory (one that does
// not exist is left out).
func snapshotScratch(dirs []string) ([]*scratchRoot, error) {
	var roots []*scratchRoot
	for _, d := range dirs {
		fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("scratch %s: %v", d, err)
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		r := &scratchRoot{dir: d, dev: uint64(st.Dev), first: map[string]entryState{}}
		if err == nil {
			r.first[""], err = dirState(fd, &st)
		}
		if err == nil {
			err = r.record(fd, "", 0)
		}
		unix.Close(fd)
		if err != nil {
			return nil, fmt.Errorf("scratch %s: %v", d, err)
		}
		roots = append(roots, r)
	}
	return roots, nil
}

func stateOf(st *unix.Stat_t) entryState {
	return entryState{ino: st.Ino, size: uint64(st.Size), mode: st.Mode, mtime: st.Mtim, ctime: st.Ctim}
}

// dirState is stateOf for the directory open at fd, with its extended
// attributes.
func dirState(fd int, st *unix.Stat_t) (entryState, error) {
	s := stateOf(st)
	x, err := xattrsOf(fd)
	s.xattrs = x
	return s, err
}

func (r *scratchRoot) record(fd int, rel string, depth int) error {
	if depth > maxScratchDepth {
		return errors.New("too deep")
	}
	names, err := dirNames(fd)
	if err != nil {
		return err
	}
	for _, name := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		if uint64(st.Dev) != r.dev {
			continue
		}
		p := rel + "/" + name
		r.first[p] = stateOf(&st)
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			r.first[p], err = dirState(sub, &st)
			if err == nil {
				err = r.record(sub, p, depth+1)
			}
			unix.Close(sub)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// restore brings the directory back to its first state.
func (r *scratchRoot) restore() error {
	fd, err := unix.Open(r.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EACCES) {
		// A call took the directory's own bits away: give them back
		// through a descriptor of it, then open it.
		r.giveBack()
		fd, err = unix.Open(r.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return fmt.Errorf("scratch %s: %v", r.dir, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || uint64(st.Dev) != r.dev || st.Ino != r.first[""].ino {
		return fmt.Errorf("scratch %s: not the box's own directory any more", r.dir)
	}
	if err := r.restoreAt(fd, "", 0); err != nil {
		return fmt.Errorf("scratch %s: %v", r.dir, err)
	}
	return nil
}

// giveBack restores the directory's first mode when it is still the
// directory of the first state (an O_PATH descriptor needs no permission).
func (r *scratchRoot) giveBack() {
	fd, err := unix.Open(r.dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil && uint64(st.Dev) == r.dev && st.Ino == r.first[""].ino {
		unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), r.first[""].mode&0o7777)
	}
}

// restoreAt works through descriptors, never following a link.
func (r *scratchRoot) restoreAt(fd int, rel string, depth int) error {
	if depth > maxScratchDepth {
		return errors.New("too deep")
	}
	first, kept := r.first[rel]
	if kept {
		// Its bits, as the box began (a call may have made /tmp 0).
		if err := unix.Fchmod(fd, first.mode&0o7777); err != nil {
			return fmt.Errorf("%s: %v", rel, err)
		}
		if err := restoreXattrs(fd, first.xattrs); err != nil {
			return fmt.Errorf("%s: %v", rel, err)
		}
	} else {
		// A call's directory: its own user's, readable again.
		unix.Fchmod(fd, 0o700)
	}
	names, err := dirNames(fd)
	if err != nil {
		return err
	}
	for _, name := range names {
		p := rel + "/" + name
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return err
		}
		if uint64(st.Dev) != r.dev {
			continue // a mount point: not the box's scratch
		}
		want, isFirst := r.first[p]
		isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		switch {
		case isFirst && (want.ino != st.Ino || want.mode&unix.S_IFMT != st.Mode&unix.S_IFMT):
			return fmt.Errorf("%s was replaced", p)
		case isFirst && !isDir && want != stateOf(&st):
			return fmt.Errorf("%s was changed", p)
		case !isDir && !isFirst:
			if err := unix.Unlinkat(fd, name, 0); err != nil {
				return fmt.Errorf("%s: %v", p, err)
			}
			continue
		case !isDir:
			continue
		}
		sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil && !isFirst {
			unix.Fchmodat(fd, name, 0o700, 0)
			sub, err = unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
		if err != nil {
			return fmt.Errorf("%s: %v", p, err)
		}
		err = r.restoreAt(sub, p, depth+1)
		unix.Close(sub)
		if err != nil {
			return err
		}
		if !isFirst {
			if err := unix.Unlinkat(fd, name, unix.AT_REMOVEDIR); err != nil {
				return fmt.Errorf("%s: %v", p, err)
			}
		}
	}
	return nil
}

// xattrsOf lists the extended attributes of fd with their values, sorted,
// as one string to compare.
func xattrsOf(fd int) (string, error) {
	names, err := xattrNames(fd)
	if err != nil {
		return "", err
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		v, err := xattrValue(fd, n)
		if err != nil {
			return "", fmt.Errorf("xattr %s: %v", n, err)
		}
		fmt.Fprintf(&b, "%q=%q\n", n, v)
	}
	return b.String(), nil
}

// restoreXattrs removes every extended attribute of fd that the first
// state did not have (a call's default ACL on /tmp would shape the next
// call's files), and fails when what is left is not the first state's.
func restoreXattrs(fd int, first string) error {
	now, err := xattrsOf(fd)
	if err != nil || now == first {
		return err
	}
	names, err := xattrNames(fd)
	if err != nil {
		return err
	}
	for _, n := range names {
		if !strings.Contains(first, strconv.Quote(n)+"=") {
			if err := unix.Fremovexattr(fd, n); err != nil {
				return fmt.Errorf("remove xattr %s: %v", n, err)
			}
		}
	}
	if now, err = xattrsOf(fd); err != nil || now == first {
		return err
	}
	return errors.New("extended attributes were changed")
}

// xattrNames lists the names of fd's extended attributes.
func xattrNames(fd int) ([]string, error) {
	for size := 256; size <= 1<<20; size *= 4 {
		buf := make([]byte, size)
		n, err := unix.Flistxattr(fd, buf)
		if errors.Is(err, unix.ERANGE) {
			continue
		}
		if errors.Is(err, unix.ENOTSUP) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		var names []string
		for _, n := range strings.Split(string(buf[:n]), "\x00") {
			if n != "" {
				names = append(names, n)
			}
		}
		return names, nil
	}
	return nil, errors.New("too many extended attributes")
}

// xattrValue reads one extended attribute of fd.
func xattrValue(fd int, name string) ([]byte, error) {
	for size := 256; size <= 1<<20; size *= 4 {
		buf := make([]byte, size)
		n, err := unix.Fgetxattr(fd, name, buf)
		if errors.Is(err, unix.ERANGE) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
	return nil, errors.New("an extended attribute too large")
}

// dirNames lists the directory open at fd (without . and ..).
func dirNames(fd int) ([]string, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	unix.Seek(dup, 0, 0)
	f := os.NewFile(uintptr(dup), "dir")
	defer f.Close()
	return f.Readdirnames(-1)
}

// clearBox brings every scratch directory back and removes the System V
// IPC objects calls made, and says what could not be cleared ("" when all
// of it was).
func clearBox(roots []*scratchRoot) string {
	dirty := restoreAll(roots)
	if err := clearIPC(); err != nil {
		dirty = append(dirty, err.Error())
	}
	return strings.Join(dirty, "; ")
}

// restoreAll brings every scratch directory back and lists what could not
// be.
func restoreAll(roots []*scratchRoot) []string {
	var dirty []string
	for _, r := range roots {
		if err := r.restore(); err != nil {
			dirty = append(dirty, err.Error())
		}
	}
	return dirty
}
