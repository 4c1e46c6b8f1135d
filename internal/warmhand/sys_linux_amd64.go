package warmhand

import (
	"syscall"
	"unsafe"
)

// fstatat is fstatat(2) of name under the directory fd, links followed
// (the ns entries stand for the namespaces); package syscall does not
// export it on amd64.
func fstatat(fd int, name string, st *syscall.Stat_t) error {
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return err
	}
	_, _, e := syscall.Syscall6(syscall.SYS_NEWFSTATAT, uintptr(fd), uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(st)), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
