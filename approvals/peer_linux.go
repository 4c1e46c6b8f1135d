package approvals

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// peerCred asks the kernel who connected (SO_PEERCRED): the answer cannot be
// forged by the peer, unlike anything it sends. The pidfd pins the process
// that connected (SO_PEERPIDFD, taken at connect); a kernel without it
// (before 6.5) gives one opened for the pid now, which a pid reused before
// the accept would name instead. The caller closes it.
func peerCred(c *net.UnixConn) (peer, error) {
	p := peer{pidfd: -1}
	raw, err := c.SyscallConn()
	if err != nil {
		return p, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		if cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); cerr != nil {
			return
		}
		if pidfd, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PEERPIDFD); err == nil {
			unix.CloseOnExec(pidfd)
			p.pidfd = pidfd
		}
	}); err != nil {
		return p, err
	}
	if cerr != nil {
		return p, cerr
	}
	p.Uid, p.Pid = int(cred.Uid), int(cred.Pid)
	if p.pidfd < 0 && p.Pid > 0 {
		if pidfd, err := unix.PidfdOpen(p.Pid, 0); err == nil {
			unix.CloseOnExec(pidfd)
			p.pidfd = pidfd
		}
	}
	return p, nil
}

func (p peer) close() {
	if p.pidfd >= 0 {
		unix.Close(p.pidfd)
	}
}

// sameNamespaces reports an error unless the peer is in this process's
// user, mount and pid namespaces. Its entries are read through the one
// /proc directory opened for its pid, and its pidfd must show it alive
// after: then the pid named it throughout, and a process that took the pid
// of a peer that ended is not checked in its place. Anything it cannot read
// is an error.
func (p peer) sameNamespaces() error {
	if p.Pid <= 0 {
		return fmt.Errorf("no peer pid")
	}
	if p.pidfd < 0 {
		return fmt.Errorf("no pidfd for the peer")
	}
	dir := "/proc/" + strconv.Itoa(p.Pid)
	d, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %v", dir, err)
	}
	defer unix.Close(d)
	buf := make([]byte, 64)
	for _, ns := range namespaces {
		mine, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil {
			return err
		}
		n, err := unix.Readlinkat(d, "ns/"+ns, buf)
		if err == nil && n == len(buf) {
			err = fmt.Errorf("too long")
		}
		if err != nil {
			return fmt.Errorf("readlink %s/ns/%s: %v", dir, ns, err)
		}
		if theirs := string(buf[:n]); theirs != mine {
			return fmt.Errorf("%s namespace %s is not %s", ns, theirs, mine)
		}
	}
	if err := unix.PidfdSendSignal(p.pidfd, 0, nil, 0); err != nil {
		return fmt.Errorf("the peer process ended while it was checked: %v", err)
	}
	return nil
}

// flushInput discards typed-ahead input when t is a terminal device, so
// keys pressed before a question appeared never answer it.
func flushInput(t io.ReadWriter) {
	f, ok := t.(*os.File)
	if !ok {
		return
	}
	raw, err := f.SyscallConn()
	if err != nil {
		return
	}
	raw.Control(func(fd uintptr) {
		_ = unix.IoctlSetInt(int(fd), unix.TCFLSH, unix.TCIFLUSH)
	})
}
