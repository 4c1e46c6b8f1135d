package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/internal/privfile"
)

// The probe reads two binaries on every start: bubblewrap, for the options
// and the version compiled into it, and runsc, for its ELF headers and
// build information. What it learns changes only when the file does, so it
// is kept, keyed by the file's identity (path, device, inode, size, mode,
// owner, modification and change times) and the kernel's release: once per
// process in memory, and across runs in airlock's state directory when the
// wiring names a file for it (UseProbeCache). The sysctls, the cgroup
// hierarchy and the rest are read live every time: reading them is what a
// key over them would cost.
//
// The file is trusted only as airlock's own: read through privfile (no
// link on the way, one name, this user's, writable by no one else), in a
// directory the mediator never lets a box write (it is among the wiring's
// private paths). Anything else in its place is ignored and replaced.

// maxProbeCache bounds what is read of the cache file.
const maxProbeCache = 1 << 20

// probeCacheFile is the state the probe keeps across runs.
type probeCacheFile struct {
	Bwrap map[string]BwrapReport `json:"bwrap,omitempty"`
	Runsc map[string]RunscReport `json:"runsc,omitempty"`
}

var binCache = struct {
	sync.Mutex
	path        string
	boxWritable []string
	loaded      bool
	c           probeCacheFile
}{}

// UseProbeCache names the file the probe keeps what it read from the
// bubblewrap and runsc binaries in, across runs; "" keeps it in memory
// only. boxWritable are the paths a box may write now (privfile refuses
// the file there).
func UseProbeCache(path string, boxWritable []string) {
	binCache.Lock()
	defer binCache.Unlock()
	if binCache.path != path {
		binCache.path, binCache.loaded = path, false
		binCache.c = probeCacheFile{}
	}
	binCache.boxWritable = boxWritable
}

// identity is the key of the file st describes at path.
func identity(path string, st os.FileInfo) (string, bool) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	var uts unix.Utsname
	if unix.Uname(&uts) != nil {
		return "", false
	}
	return fmt.Sprintf("%s dev=%d ino=%d size=%d mode=%o uid=%d mtime=%d.%d ctime=%d.%d kernel=%s",
		path, s.Dev, s.Ino, s.Size, s.Mode, s.Uid, s.Mtim.Sec, s.Mtim.Nsec, s.Ctim.Sec, s.Ctim.Nsec,
		unix.ByteSliceToString(uts.Release[:])), true
}

// loadLocked reads the cache file once; a file that is not airlock's own
// or does not parse is no cache. The caller holds binCache.
func loadLocked() {
	if binCache.loaded {
		return
	}
	binCache.loaded = true
	binCache.c = probeCacheFile{}
	if binCache.path == "" {
		return
	}
	data, err := privfile.ReadFile(binCache.path, maxProbeCache, privfile.Options{BoxWritable: binCache.boxWritable})
	if err != nil {
		return
	}
	var c probeCacheFile
	if json.Unmarshal(data, &c) == nil {
		binCache.c = c
	}
}

// storeLocked writes the cache back; failing to is only a slower next
// start. The caller holds binCache.
func storeLocked() {
	if binCache.path == "" {
		return
	}
	data, err := json.Marshal(binCache.c)
	if err != nil {
		return
	}
	privfile.WriteFile(binCache.path, data, 0o600, privfile.Options{MakeDirs: true, BoxWritable: binCache.boxWritable})
}

// cachedBwrap is what the bubblewrap at path was found to be, computing it
// with read when the file is new or changed.
func cachedBwrap(path string, st os.FileInfo, read func() bwrapInfo) bwrapInfo {
	key, ok := identity(path, st)
	if !ok {
		return read()
	}
	binCache.Lock()
	defer binCache.Unlock()
	loadLocked()
	if info, ok := binCache.c.Bwrap[key]; ok && info.Path == path {
		return info
	}
	info := read()
	if info.Err != "" {
		return info // not kept: a read that failed is tried again
	}
	// One entry per binary: the key of a changed file replaces the old.
	binCache.c.Bwrap = map[string]BwrapReport{key: info}
	storeLocked()
	return info
}

// cachedRunsc is checkRunsc of the runsc at r.Path, kept like cachedBwrap.
func cachedRunsc(r RunscReport) RunscReport {
	st, err := os.Stat(r.Path)
	if err != nil {
		return checkRunsc(r)
	}
	key, ok := identity(r.Path, st)
	if !ok {
		return checkRunsc(r)
	}
	binCache.Lock()
	defer binCache.Unlock()
	loadLocked()
	if got, ok := binCache.c.Runsc[key]; ok && got.Path == r.Path {
		return got
	}
	got := checkRunsc(r)
	binCache.c.Runsc = map[string]RunscReport{key: got}
	storeLocked()
	return got
}
