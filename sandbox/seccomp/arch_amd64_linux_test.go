package seccomp

import "golang.org/x/sys/unix"

func addArchSpecific(m map[string]int) {
	m["iopl"] = unix.SYS_IOPL
	m["ioperm"] = unix.SYS_IOPERM
}
