//go:build linux

package boxinit

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/sandbox/boxconf"
)

// noExecAttrs are what every box-writable mount gets: a file the box wrote
// can neither be executed nor mapped executable (the dynamic loader's way
// of running a program it is given), nor carry set-id bits or be a device.
const noExecAttrs = unix.MOUNT_ATTR_NOEXEC | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV

// sealWritten makes each of points, and every writable mount beneath it,
// noexec and nosuid (and nodev, but for /dev), then drops every capability
// of the calling thread (bubblewrap gave it CAP_SYS_ADMIN and CAP_SETPCAP
// in the box's user namespace for this alone). It must run on the thread
// that goes on to apply the walls and start the command, before either:
// Landlock refuses mount changes once applied, and the seccomp filter
// refuses mount calls. A mount that cannot be sealed ends the run: the
// wall would have a hole.
func sealWritten(points []string) error {
	if err := sealMounts(points); err != nil {
		return err
	}
	return dropCaps()
}

// sealMounts seals points and the writable mounts beneath them.
func sealMounts(points []string) error {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("read the box's mounts: %w", err)
	}
	for _, m := range writableMounts(string(data), points) {
		if err := sealMount(m); err != nil {
			return fmt.Errorf("make %s noexec: %w", m, err)
		}
	}
	return nil
}

// writableMounts are the mount points of mountinfo at or beneath one of
// points that are not read-only, each once. A read-only bind beneath a
// tmpfs (a working directory in /tmp in observe mode, a protected path)
// keeps what it is: the box cannot write there, and a listed program may
// lie there.
func writableMounts(mountinfo string, points []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, line := range strings.Split(mountinfo, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		mp := unescapeMount(f[4])
		if seen[mp] || !beneathAny(mp, points) {
			continue
		}
		if slices.Contains(strings.Split(f[5], ","), "ro") {
			continue
		}
		seen[mp] = true
		out = append(out, mp)
	}
	return out
}

func beneathAny(p string, points []string) bool {
	for _, q := range points {
		if p == q || strings.HasPrefix(p, strings.TrimSuffix(q, "/")+"/") {
			return true
		}
	}
	return false
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// sealMount sets the attributes on the mount at p alone. mount_setattr
// (Linux 5.12) changes only the attributes named, so the flags the kernel
// locked when the host's mount was copied into the box's namespace
// (read-only, atime) stay as they were; an older kernel gets a remount
// that carries the current flags over. /dev keeps its device nodes (each
// a bind of the host's): it is not made nodev.
func sealMount(p string) error {
	attrs := uint64(noExecAttrs)
	extra := uintptr(unix.MS_NODEV)
	if p == "/dev" || strings.HasPrefix(p, "/dev/") {
		attrs &^= unix.MOUNT_ATTR_NODEV
		extra = 0
	}
	err := unix.MountSetattr(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, &unix.MountAttr{Attr_set: attrs})
	if !errors.Is(err, unix.ENOSYS) {
		return err
	}
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return err
	}
	const keep = unix.ST_RDONLY | unix.ST_NOSUID | unix.ST_NODEV | unix.ST_NOEXEC | unix.ST_SYNCHRONOUS |
		unix.ST_MANDLOCK | unix.ST_NOATIME | unix.ST_NODIRATIME | unix.ST_RELATIME
	flags := uintptr(st.Flags)&keep | unix.MS_BIND | unix.MS_REMOUNT | unix.MS_NOEXEC | unix.MS_NOSUID | extra
	return unix.Mount("none", p, "", flags, "")
}

// sealAndReexec is the init's first step when it is given FlagSeal
// pairs: it seals their mount points from one thread, drops every
// capability of that thread and executes the init again from it with the
// flags that follow. Capabilities are per thread, and the Go runtime's
// other threads would keep theirs for the init's life (the forwarder runs
// on them); after execve the process has only the dropping thread's, none.
// It returns only on failure, 125 with the reason on stderr.
func sealAndReexec(args []string) int {
	runtime.LockOSThread()
	var points []string
	for len(args) >= 2 && args[0] == boxconf.FlagSeal {
		points = append(points, args[1])
		args = args[2:]
	}
	if err := sealMounts(points); err != nil {
		fmt.Fprintf(os.Stderr, "airlock: box: %v\n", err)
		return 125
	}
	// A build without cgo can drop the capabilities of every thread in
	// place and go on as the init; one with cgo (the runtime does not
	// know C's threads) executes itself again.
	switch err := dropCapsAllThreads(); {
	case err == nil:
		runtime.UnlockOSThread()
		return Main(args)
	case !errors.Is(err, unix.ENOTSUP):
		fmt.Fprintf(os.Stderr, "airlock: box: %v\n", err)
		return 125
	}
	if err := dropCaps(); err != nil {
		fmt.Fprintf(os.Stderr, "airlock: box: %v\n", err)
		return 125
	}
	argv := append([]string{os.Args[0], os.Args[1]}, args...)
	err := unix.Exec("/proc/self/exe", argv, os.Environ())
	fmt.Fprintf(os.Stderr, "airlock: box: start the init again after the noexec seal: %v\n", err)
	return 125
}

// dropCapsAllThreads is dropCaps on every thread of the Go runtime at
// once (syscall.AllThreadsSyscall), then checked on this one. It fails
// with ENOTSUP in a binary linked with cgo, before changing anything.
func dropCapsAllThreads() error {
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		_, _, e := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, uintptr(c), 0)
		if e == unix.ENOTSUP {
			return unix.ENOTSUP
		}
		if e != 0 && e != unix.EINVAL {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, e)
		}
	}
	if _, _, e := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0); e != 0 && e != unix.EINVAL {
		return fmt.Errorf("clear the ambient capabilities: %w", e)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if _, _, e := syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("capset: %w", e)
	}
	return checkNoCaps()
}

// dropCaps empties the calling thread's capabilities: the bounding set
// first (so no later execve as the box's uid 0 gains any back), then the
// ambient, effective, permitted and inheritable sets.
func dropCaps() error {
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear the ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return checkNoCaps()
}

// checkNoCaps checks, rather than trusts, that the calling thread holds no
// capability and cannot gain one by execve: one left would undo the seal.
func checkNoCaps() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	for _, d := range data {
		if d.Effective|d.Permitted|d.Inheritable != 0 {
			return errors.New("capabilities remain after capset")
		}
	}
	for _, c := range []int{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP} {
		if v, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); err != nil || v != 0 {
			return fmt.Errorf("capability %d remains in the bounding set", c)
		}
	}
	return nil
}
