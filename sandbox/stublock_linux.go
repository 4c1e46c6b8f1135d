package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
)

// Placeholders of protected paths are shared by every box of a writable
// root: the first box makes them, the others adopt them, the last to end
// removes them. Each box holds a shared flock on each placeholder it uses;
// that is the count of boxes still using it, across goroutines and
// processes alike (a flock belongs to an open file, not to a process). What
// the count alone cannot do is keep a box from making a placeholder another
// is making, or adopting one another is removing; so every step that makes,
// adopts or removes placeholders in a root runs under an exclusive flock on
// that root's lock file:
//
//	plan:  lock root ─ for each protected path: make (O_EXCL) or adopt, LOCK_SH ─ unlock
//	close: drop LOCK_SH ─ lock root ─ for each: LOCK_EX|LOCK_NB ok → unlink ─ unlock
//
// The lock files live in airlock's runtime directory, never in the tree and
// never where a box can reach them (the box's /tmp and /run are its own),
// so a box cannot hold them to stall other runs.

// stubLockWait bounds how long a run waits for another to finish with a
// root's placeholders; each holds the lock for milliseconds.
const stubLockWait = 30 * time.Second

// stubLockDir is where the lock files are: $XDG_RUNTIME_DIR/airlock/locks,
// else /tmp/airlock-<uid>/locks (the directory the approvals socket uses).
// Every airlock process of one user must agree on it, so it comes from the
// environment as that one does.
func stubLockDir() string {
	base := filepath.Join(os.TempDir(), "airlock-"+strconv.Itoa(os.Geteuid()))
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		base = filepath.Join(d, "airlock")
	}
	return filepath.Join(base, "locks")
}

// privateDir makes dir (mode 0700, with its parents) if it is missing and
// checks that it is a real directory only this user can enter: in /tmp
// another user could have made it first.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("%s is not a directory (remove it)", dir)
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s belongs to uid %d, not to you (remove it, or set XDG_RUNTIME_DIR)", dir, st.Uid)
	case st.Mode&0o077 != 0:
		return fmt.Errorf("%s is open to others (mode %#o) (chmod 700 %s)", dir, st.Mode&0o777, dir)
	}
	return nil
}

// rootLockPath is the lock file of the writable root with this device and
// inode: the identity, not a spelling, so every path to one directory
// shares one lock.
func rootLockPath(dev, ino uint64) string {
	return filepath.Join(stubLockDir(), fmt.Sprintf("%d-%d.lock", dev, ino))
}

// stubLock is an exclusive flock on a root's lock file.
type stubLock struct {
	f    *os.File
	path string
}

// lockStubs takes the lock at path, waiting at most stubLockWait.
func lockStubs(path string) (*stubLock, error) {
	dir := filepath.Dir(path)
	if err := privateDir(filepath.Dir(dir)); err != nil {
		return nil, err
	}
	if err := privateDir(dir); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(stubLockWait)
	pause := time.Millisecond
	for {
		l, held, err := tryLock(path)
		if err != nil || l != nil {
			return l, err
		}
		if !held {
			// The file was removed (or replaced) by its last user between
			// our open and our lock: open the current one.
			continue
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("another airlock run has held %s for over %s", path, stubLockWait)
		}
		time.Sleep(pause)
		if pause < 20*time.Millisecond {
			pause *= 2
		}
	}
}

// tryLock tries once. It returns the lock, or held when another holds it,
// or neither when the file it locked is no longer the one at path.
func tryLock(path string) (l *stubLock, held bool, err error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, false, err
	}
	return lockOpened(fd, path)
}

// lockOpened is tryLock once the file is open: the last user may have
// removed it since.
func lockOpened(fd int, path string) (l *stubLock, held bool, err error) {
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, true, nil
		}
		return nil, false, err
	}
	// A last user unlinks the file while holding the lock (unlock); a
	// lock on an unlinked file would exclude nobody.
	var have, now unix.Stat_t
	if err := unix.Fstat(fd, &have); err != nil {
		unix.Close(fd)
		return nil, false, err
	}
	if unix.Lstat(path, &now) != nil || now.Dev != have.Dev || now.Ino != have.Ino {
		unix.Close(fd)
		return nil, false, nil
	}
	return &stubLock{f: os.NewFile(uintptr(fd), path), path: path}, false, nil
}

// unlock releases the lock; with remove, the lock file goes too (its root
// has no placeholders left). Removing is safe at any time: a waiter that
// then locks the unlinked file sees so and opens a new one.
func (l *stubLock) unlock(remove bool) {
	if remove {
		unix.Unlink(l.path)
	}
	l.f.Close()
}

// lockRoot takes the lock of root (pinned) for planning its placeholders.
func lockRoot(root *pinned) (*stubLock, error) {
	l, err := lockStubs(rootLockPath(root.dev, root.ino))
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "sandbox: protect %s: lock its placeholders", root.real)
	}
	return l, nil
}
