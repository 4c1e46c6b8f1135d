//go:build linux && (arm64 || riscv64 || loong64 || mips64 || mips64le)

package warmhand

import "syscall"

// fstatat is fstatat(2) of name under the directory fd, links followed
// (the ns entries stand for the namespaces).
func fstatat(fd int, name string, st *syscall.Stat_t) error {
	return syscall.Fstatat(fd, name, st, 0)
}
