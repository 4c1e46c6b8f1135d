package cli

import (
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/policy"
)

// ownProcessPath is why path, opened by the server, would not be the file
// the caller's own process opens ("" when it would be): a path through a
// magic link of /proc (/dev/stdin, /dev/fd/N, /proc/self/fd/N or cwd), a
// file of /proc (/proc/self/environ), or /dev/tty each name the process
// that opens them, the server's here. A path not there yet is judged by
// its nearest directory that is.
func ownProcessPath(path string) string {
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_MAGICLINKS})
		if errors.Is(err, unix.ENOENT) && p != "/" && p != "." {
			continue
		}
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
			return path + " goes through a link of /proc that names the process opening it"
		}
		if err != nil {
			return "cannot tell what " + path + " names here: " + err.Error()
		}
		defer unix.Close(fd)
		var fs unix.Statfs_t
		var st unix.Stat_t
		if unix.Fstatfs(fd, &fs) != nil || unix.Fstat(fd, &st) != nil {
			return "cannot tell what " + path + " names here"
		}
		if fs.Type == unix.PROC_SUPER_MAGIC {
			return path + " lies in /proc, whose files name the process reading them"
		}
		if st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == unix.Mkdev(5, 0) {
			return path + " is /dev/tty, the terminal of the process opening it"
		}
		return ""
	}
}

// notRegular is why the policy file at path, when it is there, is not one
// the server reads ("" when it is a regular file within the policy's
// bound, or missing): a FIFO or a device would block or feed the server's
// read without end, and a file over the bound is read whole before the
// parser refuses it, as in a cold run's own process, but in the process
// every call shares (each such call held the file's size there).
func notRegular(path string) string {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return ""
		}
		return "policy " + path + ": " + err.Error()
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "policy " + path + " is not a regular file"
	}
	if st.Size > policy.MaxPolicySize {
		return fmt.Sprintf("policy %s is over %d bytes", path, policy.MaxPolicySize)
	}
	return ""
}
