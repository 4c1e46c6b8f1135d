package approvals

import (
	"io"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// peerCred asks the kernel who connected (SO_PEERCRED): the answer cannot be
// forged by the peer, unlike anything it sends.
func peerCred(c *net.UnixConn) (peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return peer{}, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return peer{}, err
	}
	if cerr != nil {
		return peer{}, cerr
	}
	return peer{Uid: int(cred.Uid), Pid: int(cred.Pid)}, nil
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
