package privfile

import (
	"errors"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// oPath opens a directory only to walk through it and to check it: no read
// permission is needed and nothing can be read through it.
const oPath = unix.O_PATH

// noOpenat2 is set once the kernel has said it has no openat2 (before
// 5.6, or a seccomp filter that refuses it); tests set it to run the
// fallback.
var noOpenat2 atomic.Bool

// resolveFlags keep one openat2 to the single name it is given: no link
// (the name itself included), no "..", no magic /proc link.
const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openDir opens the directory name in dirfd without following a link.
func openDir(dirfd int, name string) (int, error) {
	return openFile(dirfd, name, oPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// openFile opens name in dirfd with openat2 where the kernel has it, else
// with openat; flags always carry O_NOFOLLOW, so both refuse a link.
func openFile(dirfd int, name string, flags int, mode uint32) (int, error) {
	if !noOpenat2.Load() {
		how := unix.OpenHow{Flags: uint64(flags), Resolve: resolveFlags}
		if flags&unix.O_CREAT != 0 {
			how.Mode = uint64(mode)
		}
		for try := 0; ; try++ {
			fd, err := unix.Openat2(dirfd, name, &how)
			// EAGAIN: openat2 asks for a retry when a rename raced the
			// lookup.
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) && try < 100 {
				continue
			}
			if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) && isSeccompRefusal(dirfd) {
				noOpenat2.Store(true)
				break
			}
			return fd, err
		}
	}
	for {
		fd, err := unix.Openat(dirfd, name, flags, mode)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// isSeccompRefusal tells an EPERM that a seccomp filter gave openat2 from
// one the file system gave: an openat2 of "." in the same directory
// cannot be refused by permissions.
func isSeccompRefusal(dirfd int) bool {
	fd, err := unix.Openat2(dirfd, ".", &unix.OpenHow{Flags: uint64(oPath | unix.O_CLOEXEC), Resolve: resolveFlags})
	if err == nil {
		unix.Close(fd)
		return false
	}
	return errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS)
}
