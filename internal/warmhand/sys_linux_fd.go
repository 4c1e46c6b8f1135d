//go:build linux && !(amd64 || arm64 || riscv64 || loong64 || mips64 || mips64le)

package warmhand

import (
	"strconv"
	"syscall"
)

// fstatat stats name under the directory fd, links followed, through
// /proc/self/fd (package syscall has no fstatat here).
func fstatat(fd int, name string, st *syscall.Stat_t) error {
	return syscall.Stat("/proc/self/fd/"+strconv.Itoa(fd)+"/"+name, st)
}
