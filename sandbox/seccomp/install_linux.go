//go:build linux

package seccomp

import (
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
	return load(filters)
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
