//go:build linux

package seccomp

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// maxInstructions is the kernel's BPF_MAXINSNS for a classic filter.
const maxInstructions = 4096

// InstallCode is Install for a filter compiled elsewhere (Encode's
// output): the in-box code loads the filter the host compiled, so the
// box's filter is the host build's. Code that is empty, not whole
// instructions or longer than the kernel takes is refused; nothing is
// loaded then.
func InstallCode(code []byte) error {
	if len(code) == 0 || len(code)%8 != 0 || len(code)/8 > maxInstructions {
		return &InstallError{Op: "read the host's filter", Err: fmt.Errorf("%d bytes are not a filter (whole 8-byte instructions, 1 to %d)", len(code), maxInstructions)}
	}
	filters := make([]unix.SockFilter, len(code)/8)
	for i := range filters {
		b := code[8*i:]
		filters[i] = unix.SockFilter{Code: uint16(b[0]) | uint16(b[1])<<8, Jt: b[2], Jf: b[3],
			K: uint32(b[4]) | uint32(b[5])<<8 | uint32(b[6])<<16 | uint32(b[7])<<24}
	}
	return load(filters)
}

// load sets no_new_privs and loads filters into every thread.
func load(filters []unix.SockFilter) error {
	if len(filters) == 0 {
		return &InstallError{Op: "build", Err: errors.New("an empty filter")}
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
