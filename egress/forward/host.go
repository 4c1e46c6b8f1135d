//go:build linux

package forward

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/egress/wire"
)

// Host is the forwarder of a box without an init, run by airlock on the
// host: the box's exec step made the two loopback listeners inside the
// box's network namespace (where only a process inside can make them) and
// sent them over a socket pair (sandbox/boxconf.Listen); Host accepts on
// them and hands each connection, unread, to the proxy at cfg.Socket with
// the box's token, as the in-box forwarder does, or, when cfg.Serve is
// set, lets the proxy accept on them itself. The box itself then holds
// neither the token nor the proxy's socket, and no process of airlock's.
type Host struct {
	f    *forwarder
	conn *net.UnixConn // airlock's end of the pair
	done chan struct{}

	mu     sync.Mutex
	closed bool
	// began and sent are the exec step's times, when it traces
	// (CLOCK_MONOTONIC nanoseconds); read after done.
	began, sent int64
}

// Handed-out listeners in the order the exec step sends them, and the
// words that name them.
const listenWords = "http socks"

// ServeHost writes the host's byte on sock (models: the proxy serves
// models) and serves the listeners the box sends on it until Close. sock
// stays the caller's (ServeHost works on a duplicate).
func ServeHost(sock *os.File, cfg Config, models bool) (*Host, error) {
	if cfg.Socket == "" || !wire.ValidToken(cfg.Token) {
		return nil, errors.New("egress forwarder: no proxy socket or an invalid egress token")
	}
	c, err := net.FileConn(sock)
	if err != nil {
		return nil, fmt.Errorf("egress forwarder: the box's listener socket: %w", err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, errors.New("egress forwarder: the box's listener socket is not a Unix socket")
	}
	word := byte('-')
	if models {
		word = 'm'
	}
	if _, err := uc.Write([]byte{word}); err != nil {
		uc.Close()
		return nil, fmt.Errorf("egress forwarder: the box's listener socket: %w", err)
	}
	h := &Host{f: &forwarder{cfg: cfg, log: cfg.Log}, conn: uc, done: make(chan struct{})}
	if h.f.log == nil {
		h.f.log = slog.New(slog.DiscardHandler)
	}
	go h.receive()
	return h, nil
}

// receive waits for the box's listeners and serves them. A box that ends
// without sending them (its exec step failed, bubblewrap did) closes its
// end, and receive returns.
func (h *Host) receive() {
	defer close(h.done)
	lns, err := h.take()
	if err != nil {
		if !h.isClosed() {
			h.f.log.Warn("egress forwarder: no listeners from the box", "err", err)
		}
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		lns[0].Close()
		lns[1].Close()
		return
	}
	h.f.http, h.f.socks = lns[0], lns[1]
	h.f.wg.Add(2)
	if serve := h.f.cfg.Serve; serve != nil {
		// The proxy accepts on them itself: no socket between.
		for ln, mode := range map[net.Listener]string{h.f.http: wire.ModeHTTP, h.f.socks: wire.ModeSOCKS} {
			go func() {
				defer h.f.wg.Done()
				if err := serve(ln, mode); err != nil && !h.isClosed() {
					h.f.log.Warn("egress forwarder: the proxy stopped serving a box listener", "err", err)
				}
			}()
		}
		return
	}
	go h.f.serve(h.f.http, wire.ModeHTTPFD)
	go h.f.serve(h.f.socks, wire.ModeSOCKSFD)
}

// TakeListeners reads the two listeners a warm box's init sends on sock as
// the box begins (sandbox/boxconf.Listen, without the host's byte: each
// call's proxy says whether it serves models), each checked as
// ServeHost's are, within timeout, with the mode each serves
// (egress.Proxy.ServeBox's). The caller serves them; sock stays the
// caller's.
func TakeListeners(sock *os.File, timeout time.Duration) (lns [2]*net.TCPListener, modes [2]string, err error) {
	modes = [2]string{wire.ModeHTTP, wire.ModeSOCKS}
	c, err := net.FileConn(sock)
	if err != nil {
		return lns, modes, fmt.Errorf("egress forwarder: the box's listener socket: %w", err)
	}
	defer c.Close()
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return lns, modes, errors.New("egress forwarder: the box's listener socket is not a Unix socket")
	}
	uc.SetReadDeadline(time.Now().Add(timeout))
	h := &Host{conn: uc}
	got, err := h.take()
	if err != nil {
		return lns, modes, fmt.Errorf("egress forwarder: no listeners from the box: %w", err)
	}
	for i, ln := range got {
		tl, ok := ln.(*net.TCPListener)
		if !ok {
			got[0].Close()
			got[1].Close()
			return [2]*net.TCPListener{}, modes, errors.New("egress forwarder: a handed-out listener is not TCP")
		}
		lns[i] = tl
	}
	return lns, modes, nil
}

func (h *Host) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// take reads the one message of the exec step: the words, and the two
// listeners as SCM_RIGHTS, each checked to be a TCP socket listening on
// 127.0.0.1. Anything else is refused and its descriptors closed.
func (h *Host) take() ([2]net.Listener, error) {
	var lns [2]net.Listener
	buf := make([]byte, 64)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, flags, _, err := h.conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return lns, err
	}
	var fds []int
	if oobn > 0 {
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			return lns, err
		}
		for _, m := range msgs {
			got, err := unix.ParseUnixRights(&m)
			if err == nil {
				fds = append(fds, got...)
			}
		}
	}
	defer func() {
		for _, fd := range fds {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}()
	times, words := strings.CutPrefix(string(buf[:n]), listenWords)
	switch {
	case n == 0 && len(fds) == 0:
		return lns, errors.New("the box ended before it sent them")
	case !words || !h.times(times) || len(fds) != 2 || flags&(unix.MSG_CTRUNC|unix.MSG_TRUNC) != 0:
		return lns, fmt.Errorf("a message of %d bytes with %d descriptors is not the listeners", n, len(fds))
	}
	for i, fd := range fds {
		if err := checkListener(fd); err != nil {
			if lns[0] != nil {
				lns[0].Close()
			}
			return lns, err
		}
		f := os.NewFile(uintptr(fd), "egress-listener")
		fds[i] = -1
		ln, err := net.FileListener(f)
		f.Close() // FileListener holds its own duplicate
		if err != nil {
			if lns[0] != nil {
				lns[0].Close()
			}
			return lns, err
		}
		lns[i] = ln
	}
	return lns, nil
}

// times reads what follows the words: nothing, or the exec step's " BEGAN
// SENT" (boxconf.Listen.Trace).
func (h *Host) times(rest string) bool {
	if rest == "" {
		return true
	}
	f := strings.Fields(rest)
	if len(f) != 2 || rest[0] != ' ' {
		return false
	}
	b, err1 := strconv.ParseInt(f[0], 10, 64)
	s, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || b <= 0 || s < b {
		return false
	}
	h.began, h.sent = b, s
	return true
}

// BoxTimes reports, once the box has handed its listeners out, when its exec
// step began and when it sent them (CLOCK_MONOTONIC nanoseconds), if it was
// asked to trace (boxconf.Listen.Trace); ok is false otherwise.
func (h *Host) BoxTimes() (began, sent int64, ok bool) {
	select {
	case <-h.done:
	default:
		return 0, 0, false
	}
	return h.began, h.sent, h.began > 0
}

// checkListener makes sure fd is a listening IPv4 TCP socket on loopback:
// airlock accepts on it and hands what it accepts to the proxy.
func checkListener(fd int) error {
	for _, c := range []struct {
		opt, want int
		what      string
	}{
		{unix.SO_DOMAIN, unix.AF_INET, "not an IPv4 socket"},
		{unix.SO_TYPE, unix.SOCK_STREAM, "not a stream socket"},
		{unix.SO_PROTOCOL, unix.IPPROTO_TCP, "not TCP"},
		{unix.SO_ACCEPTCONN, 1, "not listening"},
	} {
		v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, c.opt)
		if err != nil {
			return fmt.Errorf("a handed-out listener: %v", err)
		}
		if v != c.want {
			return errors.New("a handed-out listener is " + c.what)
		}
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return fmt.Errorf("a handed-out listener: %v", err)
	}
	if in, ok := sa.(*unix.SockaddrInet4); !ok || in.Addr != [4]byte{127, 0, 0, 1} {
		return errors.New("a handed-out listener is not bound to 127.0.0.1")
	}
	return nil
}

// Close stops accepting, closes the listeners (the box keeps none of its
// own, so none is left) and waits for the connections being handed over.
// Connections the proxy already holds are the proxy's.
func (h *Host) Close() {
	h.mu.Lock()
	h.closed = true
	if h.f.http != nil {
		h.f.close()
	}
	h.mu.Unlock()
	h.conn.Close() // ends a receive still waiting
	<-h.done
	h.f.wg.Wait()
}
