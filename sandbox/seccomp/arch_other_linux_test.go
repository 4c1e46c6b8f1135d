//go:build linux && !amd64

package seccomp

// addArchSpecific adds nothing: iopl and ioperm exist only on x86.
func addArchSpecific(map[string]int) {}
