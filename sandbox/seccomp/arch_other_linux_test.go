//go:build linux && !amd64

package seccomp

// addArchSpecific adds nothing: iopl, ioperm and the calls without an "at"
// (chmod, open, creat, mkdir, mknod) exist only on x86 of the two.
func addArchSpecific(map[string]int) {}
