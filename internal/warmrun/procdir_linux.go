package warmrun

import (
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// procDir is an open /proc/<pid> (or /proc/self): every entry read through
// it is looked up from this one directory, not from a path walked afresh,
// and a directory opened for a process that then ended answers ESRCH
// rather than naming whatever took its pid.
type procDir struct {
	fd   int
	name string
}

func openProc(pid int) (procDir, error) {
	name := proc(pid)
	fd, err := unix.Open(name, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return procDir{fd: -1}, fmt.Errorf("open %s: %v", name, err)
	}
	return procDir{fd: fd, name: name}, nil
}

func (d procDir) close() {
	if d.fd >= 0 {
		unix.Close(d.fd)
	}
}

// procBufs are the buffers /proc files are read into: status is about 1.5
// KiB, cgroup a line per hierarchy.
var procBufs = sync.Pool{New: func() any { b := make([]byte, 8192); return &b }}

// read is the whole of entry, read to its end. The text is a copy: the
// buffer goes back to the pool.
func (d procDir) read(entry string) ([]byte, error) {
	fd, err := unix.Openat(d.fd, entry, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s/%s: %w", d.name, entry, err)
	}
	defer unix.Close(fd)
	bp := procBufs.Get().(*[]byte)
	defer procBufs.Put(bp)
	buf := *bp
	n := 0
	for {
		if n == len(buf) {
			return nil, fmt.Errorf("%s/%s: over %d bytes", d.name, entry, len(buf))
		}
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s/%s: %w", d.name, entry, err)
		}
		if m == 0 {
			return append([]byte(nil), buf[:n]...), nil
		}
		n += m
	}
}

// readlink is the target of the link entry.
func (d procDir) readlink(entry string) (string, error) {
	return d.readlinkIn(entry, make([]byte, unix.PathMax))
}

// readlinkIn is the target of the link entry, which must fit in b.
func (d procDir) readlinkIn(entry string, b []byte) (string, error) {
	n, err := unix.Readlinkat(d.fd, entry, b)
	if err != nil {
		return "", fmt.Errorf("readlink %s/%s: %v", d.name, entry, err)
	}
	if n == len(b) {
		return "", fmt.Errorf("readlink %s/%s: too long", d.name, entry)
	}
	return string(b[:n]), nil
}

// stat is the file entry opens (links followed: /proc's links stand for
// the process's files, the ns entries for its namespaces).
func (d procDir) stat(entry string) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, entry, &st, 0); err != nil {
		return st, fmt.Errorf("stat %s/%s: %v", d.name, entry, err)
	}
	return st, nil
}

// nsID is the identity of the process's namespace ns: the text of its
// link, "ns:[inode]", the inode being the namespace's own in nsfs (one
// file system, whose inode numbers no two living namespaces share). A
// readlink is about a third of a stat of the link, which must find or make
// the namespace's nsfs file to name its device; both are refused alike
// for a process this one may not inspect.
func (d procDir) nsID(ns string) (string, error) {
	var b [64]byte // "cgroup:[4026531835]"
	return d.readlinkIn("ns/"+ns, b[:])
}

// selfNS is this process's namespace ns, each read once: a process
// changes its own only by setns or unshare, which airlock's server and
// client call only on a thread of their own that they put back before they
// let it go (runner's inNamespace; were it the main thread, /proc/self
// would name the box's namespace meanwhile). The client asks for
// three, the server for every one, for each call's own facts.
func selfNS(ns string) (string, error) {
	selfNSMu.Lock()
	defer selfNSMu.Unlock()
	if id, ok := selfNSIDs[ns]; ok {
		return id, nil
	}
	id, err := os.Readlink("/proc/self/ns/" + ns)
	if err != nil {
		return "", fmt.Errorf("readlink /proc/self/ns/%s: %v", ns, err)
	}
	selfNSIDs[ns] = id
	return id, nil
}

var (
	selfNSMu  sync.Mutex
	selfNSIDs = map[string]string{}
)

// readLater starts read(c) and returns what waits for its value; nil when
// there is no read. It runs beside the checks, which never wait for it: a
// call answered cold leaves it to end on its own, its value unused.
func readLater(read func(*Call) any, c *Call) func() any {
	if read == nil {
		return nil
	}
	ch := make(chan any, 1)
	go func() { ch <- read(c) }()
	return sync.OnceValue(func() any { return <-ch })
}
