package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/internal/starttrace"
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

// pin resolves path one component at a time from the root and returns a
// descriptor for what it names. writable holds the directories the box (or
// an earlier box) may write, in every spelling; it refuses, with the path and
// why, when a symbolic link on the way lies inside one of them (whoever runs
// there could re-point it), and when a path spelled outside them reaches its
// target inside one (the bind would follow a link into agent-controlled
// ground).
func pin(path string, writable []string) (*pinned, error) {
	defer starttrace.Begin("pin")()
	if !filepath.IsAbs(path) {
		return nil, &bindError{Path: path, What: "not an absolute path"}
	}
	orig := filepath.Clean(path)
	rootFD, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &bindError{Path: path, What: "open /", Err: err}
	}
	fd := rootFD
	cur := "/"
	rest := splitPath(orig)
	links := 0
	closeFD := func() {
		if fd >= 0 {
			unix.Close(fd)
		}
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
			fd, cur = nfd, parent
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
				cur = "/"
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
		fd, cur = nfd, next
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		closeFD()
		return nil, &bindError{Path: path, What: "stat", Err: err}
	}
	if withinAny(orig, writable) == "" {
		if w := withinAny(cur, writable); w != "" {
			closeFD()
			return nil, &bindError{Path: path, What: fmt.Sprintf("resolves to %s inside the writable directory %s", cur, w)}
		}
	}
	return &pinned{f: os.NewFile(uintptr(fd), cur), real: cur, dev: uint64(st.Dev), ino: st.Ino, mode: st.Mode}, nil
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
