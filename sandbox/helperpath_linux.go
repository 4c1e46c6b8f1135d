package sandbox

import (
	"os"
	"path/filepath"
	"syscall"
)

// hostProgram finds the host's own program name: the first file of that
// name in an absolute directory of pathEnv that usable accepts and that the
// directory may give (hostProgramDir), else the first in the system
// directories usable accepts. The host runs these programs itself, so a
// PATH entry where a box could have put a program of its own (a
// workspace's bin, a user's directory, one others may write) is passed
// over, as is a relative entry. The directory is judged only once a file
// of that name lies in it: the answer is the one judging every directory
// first would give, without walking the PATH's directories that hold no
// such program (most of them), which was most of what a probe cost. c is
// the kernel's caches, whose list names where its boxes may write or were
// let write.
func hostProgram(pathEnv, name string, c *Caches, usable func(p string, st os.FileInfo) bool, system ...string) (string, os.FileInfo) {
	var refused []string
	judged := false
	for _, d := range filepath.SplitList(pathEnv) {
		if !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		st, err := os.Stat(p)
		if err != nil || !usable(p, st) {
			continue
		}
		if !judged {
			refused, judged = refusedProgramDirs(c), true
		}
		if hostProgramDir(d, refused) {
			return p, st
		}
	}
	for _, d := range system {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && usable(p, st) {
			return p, st
		}
	}
	return "", nil
}

// refusedProgramDirs are the trees no host program is taken from: those a
// box of c's kernel may write or was let write (CacheConfig.BoxWritable),
// and the working directory, where a box most often writes (and where a
// box of an airlock run as root writes as root).
func refusedProgramDirs(c *Caches) []string {
	refused := c.boxWritable()
	if wd, err := os.Getwd(); err == nil {
		refused = append(append([]string(nil), refused...), wd)
	}
	return refused
}

// hostProgramDir reports whether a program in the PATH directory d may be
// run by the host: only root could have put it there (rootOnly), and
// neither d nor what its links resolve to lies in a refused tree.
func hostProgramDir(d string, refused []string) bool {
	// One resolution of d's links for both checks, and one stat of each
	// refused tree for both of its spellings.
	real, err := filepath.EvalSymlinks(d)
	if err != nil || !rootOnly(real) {
		return false
	}
	dirs := newFileDirs(refused)
	clean := filepath.Clean(d)
	return dirs.within(clean) == "" && (real == clean || dirs.within(real) == "")
}

// rootOnly reports whether only root could have put a file in the
// directory real (its links resolved, as hostProgramDir resolves them):
// it is root's and writable by no one else, and so is every directory
// above it (a sticky one, like /tmp, excepted: no one
// may move root's directory out of it). A box runs as airlock's user, or
// as another user airlock runs it for; none of them could write there. A
// box of an airlock run as root may write root's directories it was
// granted: those a box may write or was let write (CacheConfig), and the
// working directory, are passed over (refusedProgramDirs).
func rootOnly(real string) bool {
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
