//go:build linux

package seccomp

import (
	"errors"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Probe is one attempt of a call the filter decides, with arguments chosen
// so the call can do no harm when nothing filters it: a bad descriptor, a
// NULL pointer, an invalid flag combination or a path that does not exist
// make the kernel fail it after it has passed the filter. Comparing the
// answer with and without the filter therefore shows whether the filter, and
// not the arguments, stopped it.
type Probe struct {
	// Name is the call, with the argument that matters in parentheses.
	Name string
	// Want is the filter's answer. A Kill probe ends the process that runs
	// it under the filter: run each in a process of its own.
	Want Action
	// Call makes the call and returns its errno, 0 on success.
	Call func() unix.Errno
}

// Held reports whether errno is the answer the filter gives for p, i.e. the
// call did not reach the kernel's implementation. Allow probes are never
// held.
func (p Probe) Held(errno unix.Errno) bool {
	switch p.Want {
	case Refuse:
		return errno == unix.EPERM
	case NotImplemented:
		return errno == unix.ENOSYS
	case Unsupported:
		return errno == unix.EAFNOSUPPORT
	}
	return false
}

func sys6(nr int, a ...uintptr) unix.Errno {
	var v [6]uintptr
	copy(v[:], a)
	_, _, e := unix.Syscall6(uintptr(nr), v[0], v[1], v[2], v[3], v[4], v[5])
	return e
}

const bad = ^uintptr(0) // -1: a descriptor or pid that does not exist

// probeArgs are the harmless arguments of each call refused outright.
var probeArgs = map[string][]uintptr{
	"io_uring_setup":    {0, 0},          // zero entries: EINVAL
	"io_uring_enter":    {bad, 0, 0, 0},  // EBADF
	"io_uring_register": {bad, 0, 0, 0},  // EBADF
	"bpf":               {0xffff, 0, 0},  // unknown command: EINVAL
	"keyctl":            {0xffff},        // unknown operation: EOPNOTSUPP
	"add_key":           {0, 0, 0, 0, 0}, // NULL type: EFAULT
	"request_key":       {0, 0, 0, 0},    // EFAULT
	"ptrace":            {unix.PTRACE_PEEKDATA, 0x7ffffffe, 0, 0},
	"process_vm_readv":  {0, 0, 0, 0, 0, 1}, // flags must be 0: EINVAL
	"process_vm_writev": {0, 0, 0, 0, 0, 1},
	"pidfd_getfd":       {bad, bad, 0},
	"perf_event_open":   {0, 0, bad, bad, 0}, // NULL attr: EFAULT
	"userfaultfd":       {1 | 2},             // UFFD_USER_MODE_ONLY (allowed unprivileged) plus an unknown flag: EINVAL,
	"mount":             {0, 0, 0, 0, 0},
	"umount2":           {0, 0},
	"pivot_root":        {0, 0},
	"open_tree":         {bad, 0, 0},
	"move_mount":        {bad, 0, bad, 0, 0},
	"fsopen":            {0, 0},
	"fsconfig":          {bad, 0xff, 0, 0, 0},
	"fsmount":           {bad, 0xff, 0},
	"fspick":            {bad, 0, 0xffff},
	"mount_setattr":     {bad, 0, 0xffff, 0, 0},
	"open_tree_attr":    {bad, 0, 0xffffff, 0, 0},
	"init_module":       {0, 0, 0},
	"finit_module":      {bad, 0, 0},
	"delete_module":     {0, 0},
	"kexec_load":        {0, 0, 0, 0xffff0000},
	"kexec_file_load":   {bad, bad, 0, 0, 0xffff},
	"unshare":           {0}, // no flags: succeeds, changes nothing
	"setns":             {bad, 0},
	"open_by_handle_at": {bad, 0, 0},
	"name_to_handle_at": {bad, 0, 0, 0, 0},
	"iopl":              {4},             // levels are 0..3: EINVAL
	"ioperm":            {0x10000, 1, 0}, // past the last port: EINVAL
	"lookup_dcookie":    {0, 0, 0},
	"acct":              nil, // filled in Probes: a path that does not exist
	"swapon":            {0, 0},
	"swapoff":           {0},
	"reboot":            {0, 0, 0, 0}, // wrong magic: EINVAL
	"settimeofday":      {0, 0},       // both NULL: changes nothing
	"clock_settime":     {0x7fff, 0},
}

// Probes returns the probes of the filter built with opts for the running
// architecture: every refused call, each clone namespace flag, clone3, the
// personality and ioctl rules (including an ioctl request with high bits
// set, which the kernel drops), the x32 ABI on amd64, and allowed controls
// that must still work under the filter.
func Probes(opts Options) []Probe {
	arch := runtime.GOARCH
	var ps []Probe
	nonexistent := []byte("/nonexistent-airlock-probe\x00")
	for _, s := range refused {
		nr := s.nr(arch)
		if nr < 0 {
			continue
		}
		args := probeArgs[s.name]
		if s.name == "acct" {
			args = []uintptr{uintptr(unsafe.Pointer(&nonexistent[0]))}
		}
		want := Refuse
		if s.ptrace && opts.Ptrace {
			want = Allow
		}
		ps = append(ps, Probe{Name: s.name, Want: want, Call: func() unix.Errno {
			e := sys6(nr, args...)
			runtime.KeepAlive(nonexistent)
			return e
		}})
	}
	clone := sysClone.nr(arch)
	for _, f := range []struct {
		name string
		flag uintptr
	}{
		{"CLONE_NEWNS", unix.CLONE_NEWNS}, {"CLONE_NEWCGROUP", unix.CLONE_NEWCGROUP},
		{"CLONE_NEWUTS", unix.CLONE_NEWUTS}, {"CLONE_NEWIPC", unix.CLONE_NEWIPC},
		{"CLONE_NEWUSER", unix.CLONE_NEWUSER}, {"CLONE_NEWPID", unix.CLONE_NEWPID},
		{"CLONE_NEWNET", unix.CLONE_NEWNET},
	} {
		// CLONE_THREAD without CLONE_SIGHAND is rejected by the kernel
		// before any process or namespace exists.
		flags := f.flag | unix.CLONE_THREAD
		ps = append(ps, Probe{Name: "clone(" + f.name + ")", Want: Refuse, Call: func() unix.Errno { return sys6(clone, flags) }})
	}
	ps = append(ps,
		Probe{Name: "clone(CLONE_THREAD)", Want: Allow, Call: func() unix.Errno { return sys6(clone, unix.CLONE_THREAD) }},
		Probe{Name: "clone3", Want: NotImplemented, Call: func() unix.Errno { return sys6(sysClone3.nr(arch), 0, 0) }},
	)
	pers := sysPersonality.nr(arch)
	personality := func(v uintptr) func() unix.Errno {
		return func() unix.Errno {
			old, _, e := unix.Syscall(uintptr(pers), personalityQuery, 0, 0)
			if _, _, e = unix.Syscall(uintptr(pers), v, 0, 0); e == 0 {
				unix.Syscall(uintptr(pers), old, 0, 0) // put it back
			}
			return e
		}
	}
	ps = append(ps,
		Probe{Name: "personality(PER_LINUX32)", Want: Refuse, Call: personality(0x0008)},
		Probe{Name: "personality(READ_IMPLIES_EXEC)", Want: Refuse, Call: personality(0x0400000)},
		Probe{Name: "personality(ADDR_NO_RANDOMIZE)", Want: Allow, Call: personality(addrNoRandomize)},
		Probe{Name: "personality(0xffffffff)", Want: Allow, Call: personality(personalityQuery)},
	)
	ioctl := sysIoctl.nr(arch)
	onPty := func(req uintptr) func() unix.Errno {
		return func() unix.Errno {
			m, s, e := openPty()
			if e != 0 {
				return e
			}
			defer unix.Close(m)
			defer unix.Close(s)
			// Room for the largest answer asked for (struct winsize);
			// TIOCSTI reads its first byte, a space.
			buf := [16]byte{' '}
			e = sys6(ioctl, uintptr(s), req, uintptr(unsafe.Pointer(&buf[0])))
			runtime.KeepAlive(&buf)
			return e
		}
	}
	ps = append(ps,
		Probe{Name: "ioctl(TIOCSTI)", Want: Refuse, Call: onPty(tiocsti)},
		Probe{Name: "ioctl(TIOCSTI|high bits)", Want: Refuse, Call: onPty(0xdead0000_00000000 | tiocsti)},
		Probe{Name: "ioctl(TIOCLINUX)", Want: Refuse, Call: onPty(tioclinux)},
		Probe{Name: "ioctl(TIOCGWINSZ)", Want: Allow, Call: onPty(unix.TIOCGWINSZ)},
	)
	// A socket that is made is closed again at once; with MPTCP off in
	// the kernel (net.mptcp.enabled=0) the control answers an error too,
	// and the test reports it as untested.
	sock := func(family, proto int) func() unix.Errno {
		return func() unix.Errno {
			fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, proto)
			if err != nil {
				return asErrno(err)
			}
			unix.Close(fd)
			return 0
		}
	}
	ps = append(ps,
		Probe{Name: "socket(MPTCP)", Want: Refuse, Call: sock(unix.AF_INET, unix.IPPROTO_MPTCP)},
		Probe{Name: "socket(MPTCP over IPv6)", Want: Refuse, Call: sock(unix.AF_INET6, unix.IPPROTO_MPTCP)},
		Probe{Name: "socket(TCP)", Want: Allow, Call: sock(unix.AF_INET, unix.IPPROTO_TCP)},
	)
	ps = append(ps, setidProbes(arch)...)
	ps = append(ps, channelProbes(arch)...)
	ps = append(ps, setgidProbes(arch, opts)...)
	if arches[arch].x32 {
		getpid := uintptr(unix.SYS_GETPID) | x32BitSyscall
		ps = append(ps, Probe{Name: "x32 getpid", Want: Kill, Call: func() unix.Errno { return sys6(int(getpid)) }})
	}
	return ps
}

// openPty opens a new pseudo-terminal pair, the target of the terminal
// injection probes: keystrokes pushed into it reach nobody.
func openPty() (master, slave int, errno unix.Errno) {
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, -1, asErrno(err)
	}
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(m)
		return -1, -1, asErrno(err)
	}
	s, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(m), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if e != 0 {
		unix.Close(m)
		return -1, -1, e
	}
	return m, int(s), 0
}

func asErrno(err error) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return unix.EIO
}

// setidProbes make a set-ID file or directory (or, for the allowed control,
// an ordinary one) in a fresh temporary directory, removed afterwards.
func setidProbes(arch string) []Probe {
	inTemp := func(f func(path []byte) unix.Errno) func() unix.Errno {
		return func() unix.Errno {
			dir, err := os.MkdirTemp("", "airlock-probe-")
			if err != nil {
				return asErrno(err)
			}
			defer os.RemoveAll(dir)
			path := []byte(dir + "/f\x00")
			e := f(path)
			runtime.KeepAlive(path)
			return e
		}
	}
	ptr := func(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }
	closeFd := func(r uintptr, e unix.Errno) unix.Errno {
		if e == 0 {
			unix.Close(int(r))
		}
		return e
	}
	sys := func(nr int, a ...uintptr) (uintptr, unix.Errno) {
		var v [6]uintptr
		copy(v[:], a)
		r, _, e := unix.Syscall6(uintptr(nr), v[0], v[1], v[2], v[3], v[4], v[5])
		return r, e
	}
	const atFdcwd = ^uintptr(99) // AT_FDCWD, -100
	const setuid, setgid, reg = 04755, 02755, unix.S_IFREG
	create := func(path []byte) unix.Errno {
		return closeFd(sys(sysOpenat(arch), atFdcwd, ptr(path), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0644))
	}
	byName := map[string]func(path []byte) unix.Errno{
		"chmod": func(p []byte) unix.Errno { create(p); _, e := sys(90, ptr(p), setuid); return e },
		"fchmodat": func(p []byte) unix.Errno {
			create(p)
			_, e := sys(modeNr("fchmodat", arch), atFdcwd, ptr(p), setuid)
			return e
		},
		"fchmodat2": func(p []byte) unix.Errno { create(p); _, e := sys(452, atFdcwd, ptr(p), setuid, 0); return e },
		"fchmod": func(p []byte) unix.Errno {
			fd, e := sys(sysOpenat(arch), atFdcwd, ptr(p), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0644)
			if e != 0 {
				return e
			}
			defer unix.Close(int(fd))
			_, e = sys(modeNr("fchmod", arch), fd, setuid)
			return e
		},
		"open": func(p []byte) unix.Errno {
			return closeFd(sys(2, ptr(p), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, setuid))
		},
		"openat": func(p []byte) unix.Errno {
			return closeFd(sys(sysOpenat(arch), atFdcwd, ptr(p), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, setuid))
		},
		"creat": func(p []byte) unix.Errno { return closeFd(sys(85, ptr(p), setuid)) },
		"mkdir": func(p []byte) unix.Errno { _, e := sys(83, ptr(p), setuid|setgid); return e },
		"mkdirat": func(p []byte) unix.Errno {
			_, e := sys(modeNr("mkdirat", arch), atFdcwd, ptr(p), setuid|setgid)
			return e
		},
		"mknod": func(p []byte) unix.Errno { _, e := sys(133, ptr(p), reg|setuid, 0); return e },
		"mknodat": func(p []byte) unix.Errno {
			_, e := sys(modeNr("mknodat", arch), atFdcwd, ptr(p), reg|setuid, 0)
			return e
		},
	}
	var ps []Probe
	for _, m := range setidModes {
		if m.nr(arch) < 0 {
			continue
		}
		ps = append(ps, Probe{Name: m.name + "(set-ID mode)", Want: Refuse, Call: inTemp(byName[m.name])})
	}
	ps = append(ps,
		Probe{Name: "openat(O_CREAT, 0644)", Want: Allow, Call: inTemp(create)},
		Probe{Name: "openat2", Want: NotImplemented, Call: inTemp(func(p []byte) unix.Errno {
			create(p)
			how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC}
			e := closeFd(sys(sysOpenat2.nr(arch), atFdcwd, ptr(p), uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how)))
			runtime.KeepAlive(&how)
			return e
		})},
	)
	return ps
}

func modeNr(name, arch string) int {
	for _, m := range setidModes {
		if m.name == name {
			return m.nr(arch)
		}
	}
	return -1
}

func sysOpenat(arch string) int { return modeNr("openat", arch) }
