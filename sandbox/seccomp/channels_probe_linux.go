//go:build linux

package seccomp

import (
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// channelProbes try the calls of channels.go. A socket that is made is
// closed at once and never connected (a vsock socket, in particular, is
// only created: connecting one would reach the hypervisor's services).
// io_setup makes one context and destroys it again, so the unconfined run
// shows the host-wide pool is reachable; the other AIO calls name a context
// that does not exist.
func channelProbes(arch string) []Probe {
	sock := func(nr int, family, typ, proto uintptr) func() unix.Errno {
		return func() unix.Errno {
			var fds [2]int32
			r, _, e := unix.Syscall6(uintptr(nr), family, typ|unix.SOCK_CLOEXEC, proto, uintptr(unsafe.Pointer(&fds[0])), 0, 0)
			runtime.KeepAlive(&fds)
			if e != 0 {
				return e
			}
			if nr == sysSocketpair.nr(arch) {
				unix.Close(int(fds[0]))
				unix.Close(int(fds[1]))
			} else {
				unix.Close(int(r))
			}
			return 0
		}
	}
	socket, pair := sysSocket.nr(arch), sysSocketpair.nr(arch)
	ps := []Probe{
		{Name: "socket(AF_VSOCK)", Want: Unsupported, Call: sock(socket, unix.AF_VSOCK, unix.SOCK_STREAM, 0)},
		{Name: "socket(AF_ALG)", Want: Unsupported, Call: sock(socket, unix.AF_ALG, unix.SOCK_SEQPACKET, 0)},
		{Name: "socket(AF_PACKET)", Want: Unsupported, Call: sock(socket, unix.AF_PACKET, unix.SOCK_DGRAM, 0)},
		{Name: "socket(NETLINK_NETFILTER)", Want: Unsupported, Call: sock(socket, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_NETFILTER)},
		{Name: "socket(NETLINK_ROUTE)", Want: Allow, Call: sock(socket, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE)},
		{Name: "socket(AF_UNIX)", Want: Allow, Call: sock(socket, unix.AF_UNIX, unix.SOCK_STREAM, 0)},
		{Name: "socket(AF_INET)", Want: Allow, Call: sock(socket, unix.AF_INET, unix.SOCK_DGRAM, 0)},
		{Name: "socket(AF_INET6)", Want: Allow, Call: sock(socket, unix.AF_INET6, unix.SOCK_DGRAM, 0)},
		{Name: "socketpair(AF_UNIX)", Want: Allow, Call: sock(pair, unix.AF_UNIX, unix.SOCK_STREAM, 0)},
		{Name: "socketpair(AF_VSOCK)", Want: Unsupported, Call: sock(pair, unix.AF_VSOCK, unix.SOCK_STREAM, 0)},
	}
	destroy := -1
	for _, s := range aioCalls {
		if s.name == "io_destroy" {
			destroy = s.nr(arch)
		}
	}
	for _, s := range aioCalls {
		nr := s.nr(arch)
		call := func() unix.Errno { return sys6(nr, 0, 0, 0, 0, 0, 0) } // context 0: EINVAL
		if s.name == "io_setup" {
			call = func() unix.Errno {
				var ctx uint64
				_, _, e := unix.Syscall(uintptr(nr), 1, uintptr(unsafe.Pointer(&ctx)), 0)
				runtime.KeepAlive(&ctx)
				if e == 0 {
					unix.Syscall(uintptr(destroy), uintptr(ctx), 0, 0)
				}
				return e
			}
		}
		ps = append(ps, Probe{Name: s.name, Want: NotImplemented, Call: call})
	}
	return ps
}

// setgidProbes, under Options.SetGID only, mark a fresh directory
// set-group-ID the way `chmod g+s` and `mkdir -m 2775` do; a set-user-ID
// mode stays refused (setidProbes).
func setgidProbes(arch string, opts Options) []Probe {
	if !opts.SetGID {
		return nil
	}
	inTemp := func(f func(dir string) error) func() unix.Errno {
		return func() unix.Errno {
			dir, err := os.MkdirTemp("", "airlock-probe-")
			if err != nil {
				return asErrno(err)
			}
			defer os.RemoveAll(dir)
			if err := f(dir); err != nil {
				return asErrno(err)
			}
			return 0
		}
	}
	return []Probe{
		{Name: "fchmodat(dir, g+s)", Want: Allow, Call: inTemp(func(dir string) error {
			return unix.Fchmodat(unix.AT_FDCWD, dir, 02775, 0)
		})},
		{Name: "mkdirat(dir, 02775)", Want: Allow, Call: inTemp(func(dir string) error {
			return unix.Mkdirat(unix.AT_FDCWD, dir+"/d", 02775)
		})},
		{Name: "fchmodat(dir, u+s)", Want: Refuse, Call: inTemp(func(dir string) error {
			return unix.Fchmodat(unix.AT_FDCWD, dir, 04775, 0)
		})},
	}
}
