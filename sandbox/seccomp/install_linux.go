//go:build linux

package seccomp

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Install sets no_new_privs and loads the filter for the running
// architecture into every thread of the calling process
// (SECCOMP_FILTER_FLAG_TSYNC), so no thread of the Go runtime is left
// unfiltered. It is irreversible: call it in the process that will exec the
// target, as late as possible.
func Install(opts Options) error {
	raw, err := Program(runtime.GOARCH, opts)
	if err != nil {
		return &InstallError{Op: "build", Err: err}
	}
	filters := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filters[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filters)), Filter: &filters[0]}

	// no_new_privs is per thread; TSYNC copies it to the other threads, but
	// only from the thread that loads the filter, so both happen on one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return &InstallError{Op: "prctl(PR_SET_NO_NEW_PRIVS)", Err: err}
	}
	r, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(filters)
	if errno != 0 {
		return &InstallError{Op: "seccomp(SECCOMP_SET_MODE_FILTER, TSYNC)", Err: errno}
	}
	if r != 0 {
		// With TSYNC a positive result is the id of a thread that could
		// not be synchronised; nothing was loaded.
		return &InstallError{Op: "seccomp(SECCOMP_SET_MODE_FILTER, TSYNC)", Err: fmt.Errorf("thread %d could not be synchronised", r)}
	}
	return nil
}

// Supported reports whether the kernel can load this package's filter:
// seccomp filter mode and the kill-process action (Linux 4.14). The reason
// says what is missing when it cannot.
func Supported() (bool, string) {
	if _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil {
		return false, "the kernel has no seccomp (CONFIG_SECCOMP): " + err.Error()
	}
	action := uint32(retKillProcess)
	_, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	if errno != 0 {
		return false, "the kernel lacks seccomp filters with SECCOMP_RET_KILL_PROCESS (needs Linux 4.14 or later): " + errno.Error()
	}
	return true, ""
}
