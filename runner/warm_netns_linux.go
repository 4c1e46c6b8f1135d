package runner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
)

// A call's TCP connections leave sockets in the box's network namespace
// after every process of the call has ended: the side that closed first
// keeps its end in TIME_WAIT for a minute, and a next call could find
// them (a port it cannot bind, a 4-tuple it cannot connect from) and so
// learn what the last call reached. The box's init retires a box that
// holds any (netLeft); to keep the box, the pool destroys them first,
// through a sock_diag socket it made in the box's namespace as the box
// began (SOCK_DESTROY, which needs CAP_NET_ADMIN over the box's namespace
// and a kernel built with INET_DIAG_DESTROY). Where it cannot, nothing is
// destroyed and the init's check retires the box as before.

// nsDiag is a NETLINK_SOCK_DIAG socket in a box's network namespace.
type nsDiag struct {
	fd  int
	seq uint32
}

// openNSDiag makes a sock_diag socket in the network namespace of the box
// whose PID 1 the pidfd names.
func openNSDiag(pidfd int) (*nsDiag, error) {
	pid, err := pidOf(pidfd)
	if err != nil {
		return nil, err
	}
	ns, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(ns)
	if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
		return nil, err // ended while opened: the pid may name another process
	}
	fd := -1
	err = inNamespace(ns, unix.CLONE_NEWNET, "/proc/thread-self/ns/net", func() error {
		var serr error
		fd, serr = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
		return serr
	})
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return nil, err
	}
	return &nsDiag{fd: fd}, nil
}

// inNamespace runs fn on a thread of its own moved into the namespace
// target (of kind nstype), put back in this process's own (self, its
// /proc/thread-self/ns file) before it is let go. A thread that ends takes
// with it every box it started (bubblewrap's parent-death signal follows
// the thread), so only one that cannot be put back stays locked and ends
// with the goroutine; never the main thread. It returns fn's error, or why fn did not run or the
// thread was not put back.
func inNamespace(target, nstype int, self string, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// Never the main thread: /proc/self/ns names its
			// namespaces as the process's own (warmrun reads the
			// server's there), and the runtime never ends it, so one
			// not put back would stay in the box's for good. Locked
			// to this goroutine meanwhile, it runs none of the call.
			err := inNamespace(target, nstype, self, fn)
			runtime.UnlockOSThread()
			done <- err
			return
		}
		back, err := unix.Open(self, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- err
			return
		}
		defer unix.Close(back)
		if err := unix.Setns(target, nstype); err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("enter the box's namespace: %w", err)
			return
		}
		err = fn()
		if berr := unix.Setns(back, nstype); berr != nil {
			done <- errors.Join(err, fmt.Errorf("back to airlock's namespace: %v", berr))
			return // the thread stays locked and ends with the goroutine
		}
		runtime.UnlockOSThread()
		done <- err
	}()
	return <-done
}

// pidOf reads the pid a pidfd names from its fdinfo.
func pidOf(pidfd int) (int, error) {
	if pidfd <= 0 {
		return 0, errs.Unavailablef("run: no pidfd of the box's init")
	}
	info, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(pidfd))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(info), "\n") {
		if v, ok := strings.CutPrefix(l, "Pid:"); ok {
			if pid, _ := strconv.Atoi(strings.TrimSpace(v)); pid > 0 {
				return pid, nil
			}
		}
	}
	return 0, errs.Unavailablef("run: the box's init has ended")
}

func (d *nsDiag) close() {
	if d != nil {
		unix.Close(d.fd)
	}
}

// Sizes of the kernel's inet_diag structures (linux/inet_diag.h).
const (
	diagSockIDLen = 48 // inet_diag_sockid
	diagReqLen    = 8 + diagSockIDLen
	diagMsgLen    = 4 + diagSockIDLen + 20 // inet_diag_msg
)

// clearExcept destroys every TCP socket of the namespace but those whose
// inode keep holds (the box's listeners). It fails when one could not be
// destroyed; the init's own check then decides.
func (d *nsDiag) clearExcept(keep map[uint64]bool) error {
	var errList []error
	for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		socks, err := d.dump(family)
		if err != nil {
			return err
		}
		for _, s := range socks {
			if s.inode != 0 && keep[uint64(s.inode)] {
				continue
			}
			errList = append(errList, d.destroy(family, s.id))
		}
	}
	return errors.Join(errList...)
}

type diagSock struct {
	id    [diagSockIDLen]byte // inet_diag_sockid, cookie included
	inode uint32
}

// request builds one sock_diag request for family's TCP sockets in every
// state, for id (zero for a dump).
func (d *nsDiag) request(typ uint16, flags uint16, family uint8, id [diagSockIDLen]byte) []byte {
	d.seq++
	b := make([]byte, unix.NLMSG_HDRLEN+diagReqLen)
	binary.NativeEndian.PutUint32(b[0:], uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:], typ)
	binary.NativeEndian.PutUint16(b[6:], flags)
	binary.NativeEndian.PutUint32(b[8:], d.seq)
	r := b[unix.NLMSG_HDRLEN:]
	r[0], r[1] = family, unix.IPPROTO_TCP
	binary.NativeEndian.PutUint32(r[4:], ^uint32(0)) // every state
	copy(r[8:], id[:])
	return b
}

// dump lists family's TCP sockets.
func (d *nsDiag) dump(family uint8) ([]diagSock, error) {
	req := d.request(unix.SOCK_DIAG_BY_FAMILY, unix.NLM_F_REQUEST|unix.NLM_F_DUMP, family, [diagSockIDLen]byte{})
	if err := unix.Sendto(d.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("sock_diag dump: %v", err)
	}
	var out []diagSock
	buf := make([]byte, 64<<10)
	for {
		n, _, err := unix.Recvfrom(d.fd, buf, 0)
		if err != nil {
			return nil, fmt.Errorf("sock_diag dump: %v", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return nil, fmt.Errorf("sock_diag dump: %v", err)
		}
		for _, m := range msgs {
			switch {
			case m.Header.Seq != d.seq:
				continue
			case m.Header.Type == unix.NLMSG_DONE:
				return out, nil
			case m.Header.Type == unix.NLMSG_ERROR:
				return nil, fmt.Errorf("sock_diag dump: %v", netlinkErr(m.Data))
			case len(m.Data) < diagMsgLen:
				return nil, errors.New("sock_diag dump: a short answer")
			}
			var s diagSock
			copy(s.id[:], m.Data[4:4+diagSockIDLen])
			s.inode = binary.NativeEndian.Uint32(m.Data[4+diagSockIDLen+16:])
			out = append(out, s)
		}
	}
}

// destroy destroys one socket and waits for the kernel's answer.
func (d *nsDiag) destroy(family uint8, id [diagSockIDLen]byte) error {
	req := d.request(unix.SOCK_DESTROY, unix.NLM_F_REQUEST|unix.NLM_F_ACK, family, id)
	if err := unix.Sendto(d.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("sock_diag destroy: %v", err)
	}
	buf := make([]byte, 4096)
	for {
		n, _, err := unix.Recvfrom(d.fd, buf, 0)
		if err != nil {
			return fmt.Errorf("sock_diag destroy: %v", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return fmt.Errorf("sock_diag destroy: %v", err)
		}
		for _, m := range msgs {
			if m.Header.Seq == d.seq && m.Header.Type == unix.NLMSG_ERROR {
				if err := netlinkErr(m.Data); err != nil && err != unix.ENOENT {
					return fmt.Errorf("sock_diag destroy: %v", err)
				}
				return nil // ENOENT: gone by itself meanwhile
			}
		}
	}
}

// netlinkErr reads an NLMSG_ERROR's error (nil for an acknowledgement).
func netlinkErr(data []byte) error {
	if len(data) < 4 {
		return errors.New("a short error")
	}
	if e := int32(binary.NativeEndian.Uint32(data)); e != 0 {
		return unix.Errno(-e)
	}
	return nil
}
