package seccomp

import "golang.org/x/sys/unix"

func addArchSpecific(m map[string]int) {
	m["iopl"] = unix.SYS_IOPL
	m["ioperm"] = unix.SYS_IOPERM
	m["chmod"] = unix.SYS_CHMOD
	m["open"] = unix.SYS_OPEN
	m["creat"] = unix.SYS_CREAT
	m["mkdir"] = unix.SYS_MKDIR
	m["mknod"] = unix.SYS_MKNOD
}
