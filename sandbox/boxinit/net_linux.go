//go:build linux

package boxinit

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/egress/forward"
	"github.com/airlock-run/airlock/sandbox/boxconf"
)

// listenBacklog is the queue of each listener; the kernel caps it at
// net.core.somaxconn, as it does Go's own listeners.
const listenBacklog = 4096

// handOutListeners is the network part of the exec step of a box without an
// init (boxconf.Listen): it makes the forwarder's two loopback listeners in
// the box's network namespace, which only a process inside can do, sends
// both to the host over l.FD and closes its own copies, so that when the
// command starts the listeners exist (a connection made at once waits in
// the backlog) and only airlock on the host holds them. It returns the
// environment that points the box's programs at them.
func handOutListeners(l *boxconf.Listen) (env []string, err error) {
	began := monotonic()
	defer unix.Close(l.FD)
	// The host's byte was written before bubblewrap started.
	var b [1]byte
	n, err := unix.Read(l.FD, b[:])
	if err != nil || n != 1 || (b[0] != boxconf.ListenModels && b[0] != boxconf.ListenPlain) {
		return nil, fmt.Errorf("egress listeners: no word from airlock on descriptor %d (%d bytes, %v)", l.FD, n, err)
	}
	if _, err := sendListeners(l, began); err != nil {
		return nil, err
	}
	env = forward.Env(l.HTTPPort, l.SOCKSPort, l.Exe, l.ConnectExe)
	if b[0] == boxconf.ListenModels {
		env = append(env, forward.ModelEnv(l.HTTPPort)...)
	}
	return env, nil
}

// sendListeners makes the two loopback listeners, sends both to the host
// over l.FD and closes its own copies; it returns their socket inodes,
// which name them in /proc/net/tcp.
func sendListeners(l *boxconf.Listen, began int64) (inodes [2]uint64, err error) {
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for i, port := range []int{l.HTTPPort, l.SOCKSPort} {
		fd, err := loopbackListener(port)
		if err != nil {
			return inodes, err
		}
		fds = append(fds, fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return inodes, fmt.Errorf("egress listeners: fstat: %v", err)
		}
		inodes[i] = st.Ino
	}
	words := "http socks"
	if l.Trace {
		words += " " + strconv.FormatInt(began, 10) + " " + strconv.FormatInt(monotonic(), 10)
	}
	if err := unix.Sendmsg(l.FD, []byte(words), unix.UnixRights(fds...), nil, 0); err != nil {
		return inodes, fmt.Errorf("egress listeners: hand them to airlock: %v", err)
	}
	return inodes, nil
}

// loopbackListener is a TCP socket listening on 127.0.0.1:port, closed on
// exec. No SO_REUSEPORT: nothing else in the box may bind the same port and
// take the connections meant for the proxy.
func loopbackListener(port int) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return -1, fmt.Errorf("egress listeners: socket: %v", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("egress listeners: bind 127.0.0.1:%d: %v", port, err)
	}
	if err := unix.Listen(fd, listenBacklog); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("egress listeners: listen on 127.0.0.1:%d: %v", port, err)
	}
	return fd, nil
}

// monotonic is CLOCK_MONOTONIC in nanoseconds, the clock the host shares
// with the box (a box has no time namespace of its own).
func monotonic() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}
