package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/internal/privfile"
)

// The probe reads two binaries on every start: bubblewrap, for the options
// and the version compiled into it, and runsc, for its ELF headers and
// build information. What it learns changes only when the file does, so it
// is kept, keyed by the file's identity (path, device, inode, size, mode,
// owner, modification and change times) and the kernel's release: once per
// kernel in memory, and across runs in airlock's state directory when the
// wiring names a file for it (CacheConfig.ProbeFile). The sysctls, the cgroup
// hierarchy and the rest are read live every time: reading them is what a
// key over them would cost.
//
// The file is trusted only as airlock's own: read through privfile (no
// link on the way, one name, this user's, writable by no one else), in a
// directory the mediator never lets a box write (it is among the wiring's
// private paths). Anything else in its place is ignored and replaced.

// maxProbeCache bounds what is read of the cache file.
const maxProbeCache = 1 << 20

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
// (for c: it lies where c's boxes may write) or does not parse is no
// cache. The caller holds m.
func loadLocked(c *Caches, m *probeMemo, path string) {
	if m.loaded {
		return
	}
	m.loaded = true
	m.c = probeCacheFile{}
	if path == "" {
		return
	}
	data, err := privfile.ReadFile(path, maxProbeCache, privfile.Options{BoxWritable: c.boxWritable()})
	if err != nil {
		return
	}
	var f probeCacheFile
	if json.Unmarshal(data, &f) == nil {
		m.c = f
	}
}

// storeLocked writes the cache back; failing to is only a slower next
// start. The caller holds m.
func storeLocked(c *Caches, m *probeMemo, path string) {
	if path == "" {
		return
	}
	data, err := json.Marshal(m.c)
	if err != nil {
		return
	}
	privfile.WriteFile(path, data, 0o600, privfile.Options{MakeDirs: true, BoxWritable: c.boxWritable()})
}

// cachedBwrap is what the bubblewrap at path was found to be, kept in c,
// computing it with read when the file is new or changed.
func cachedBwrap(c *Caches, path string, st os.FileInfo, read func() bwrapInfo) bwrapInfo {
	key, ok := identity(path, st)
	if !ok {
		return read()
	}
	m, file := c.memo()
	m.Lock()
	defer m.Unlock()
	loadLocked(c, m, file)
	if info, ok := m.c.Bwrap[key]; ok && info.Path == path {
		return info
	}
	info := read()
	if info.Err != "" {
		return info // not kept: a read that failed is tried again
	}
	// One entry per binary: the key of a changed file replaces the old.
	m.c.Bwrap = map[string]BwrapReport{key: info}
	storeLocked(c, m, file)
	return info
}

// cachedRunsc is checkRunsc of the runsc at r.Path, kept like cachedBwrap.
func cachedRunsc(c *Caches, r RunscReport) RunscReport {
	st, err := os.Stat(r.Path)
	if err != nil {
		return checkRunsc(r)
	}
	key, ok := identity(r.Path, st)
	if !ok {
		return checkRunsc(r)
	}
	m, file := c.memo()
	m.Lock()
	defer m.Unlock()
	loadLocked(c, m, file)
	if got, ok := m.c.Runsc[key]; ok && got.Path == r.Path {
		return got
	}
	got := checkRunsc(r)
	m.c.Runsc = map[string]RunscReport{key: got}
	storeLocked(c, m, file)
	return got
}
