//go:build unix && !linux

package privfile

import "golang.org/x/sys/unix"

// oPath: systems without O_PATH open the directory for reading.
const oPath = unix.O_RDONLY

// openDir opens the directory name in dirfd without following a link.
func openDir(dirfd int, name string) (int, error) {
	return openFile(dirfd, name, oPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// openFile opens name in dirfd; flags always carry O_NOFOLLOW.
func openFile(dirfd int, name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}
