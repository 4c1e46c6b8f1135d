package sandbox

import (
	"os"
	"path/filepath"
	"syscall"
)

// hostProgramDirs are the absolute directories of pathEnv that bubblewrap and
// runsc may be taken from, then the system's own: the host runs these
// programs itself, so a PATH entry where a box could have put a program of
// its own (a workspace's bin, a user's directory, one others may write) is
// passed over, as is a relative entry. See rootOnly.
func hostProgramDirs(pathEnv string, system ...string) []string {
	_, refused := etcCacheConfig()
	// The working directory is where a box most often writes (and where a
	// box of an airlock run as root writes as root).
	if wd, err := os.Getwd(); err == nil {
		refused = append(append([]string(nil), refused...), wd)
	}
	var out []string
	for _, d := range filepath.SplitList(pathEnv) {
		if filepath.IsAbs(d) && rootOnly(d) && withinAny(filepath.Clean(d), refused) == "" && withinAny(resolved(d), refused) == "" {
			out = append(out, d)
		}
	}
	return append(out, system...)
}

// rootOnly reports whether only root could have put a file in dir: dir,
// with its links resolved, is root's and writable by no one else, and so
// is every directory above it (a sticky one, like /tmp, excepted: no one
// may move root's directory out of it). A box runs as airlock's user, or
// as another user airlock runs it for; none of them could write there. A
// box of an airlock run as root may write root's directories it was
// granted: those a box may write or was let write (UseEtcCache), and the
// working directory, are passed over
// (hostProgramDirs).
func rootOnly(dir string) bool {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	for d, first := filepath.Clean(real), true; ; d, first = filepath.Dir(d), false {
		st, err := os.Stat(d)
		if err != nil {
			return false
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		if !ok || sys.Uid != 0 {
			return false
		}
		if perm := st.Mode().Perm(); perm&0o022 != 0 && (first || st.Mode()&os.ModeSticky == 0) {
			return false
		}
		if d == "/" {
			return true
		}
	}
}

// resolved is d with its links resolved, or d.
func resolved(d string) string {
	if r, err := filepath.EvalSymlinks(d); err == nil {
		return r
	}
	return filepath.Clean(d)
}

// rootsFile reports whether the program p is root's and writable by no
// one else.
func rootsFile(p string, st os.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && sys.Uid == 0 && st.Mode().Perm()&0o022 == 0
}
