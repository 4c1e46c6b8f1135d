package runner

import (
	"errors"
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/egress/forward"
	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/sandbox"
)

// A warm box with network. The box's init made the forwarder's two
// loopback listeners once and handed them to the pool (sandbox.PlanWarm);
// they live as long as the box, but what is accepted on them belongs to
// one call:
//
//	call begins ──▶ accept on both listeners, each connection handed to
//	                this call's egress proxy (its Serve: its token, its
//	                decisions, its audit records)
//	call ends   ──▶ stop accepting, close every connection of the call
//	                (abortively: nothing of the box is left to read them),
//	                accept and close whatever is still queued, destroy
//	                what the connections left in TIME_WAIT (warm_netns_linux.go);
//	                then tell
//	                the init (boxconf.NetReleased), which checks that the
//	                network namespace holds the two listeners and nothing
//	                else before the box is idle again
//
// Between calls nobody accepts, and since every process of the box has
// ended before the queues are emptied, a connection accepted during a call
// was made during it. A call whose proxy runs outside airlock's process
// (no Serve) runs in a box of its own.

// warmNetAllowed reports whether req's network can be served by a warm
// box: tier 1, with the egress proxy in this process.
func warmNetAllowed(req Request) bool {
	return req.Tier == sandbox.Tier1 && req.Spec.Net.Serve != nil
}

// listenTimeout bounds the wait for a new box's listeners, sent before its
// init reports ready.
const listenTimeout = 5 * time.Second

// warmNet is the network of one warm box.
type warmNet struct {
	lns   [2]*net.TCPListener
	modes [2]string
	// keep are the listeners' socket inodes; diag, when the pool could
	// make it, destroys every other TCP socket of the box between calls.
	keep map[uint64]bool
	diag *nsDiag

	diagMu    sync.Mutex // diag's one user at a time, until close
	closeOnce sync.Once

	mu  sync.Mutex
	cur *callNet // the call being served; nil between calls
}

// takeWarmNet receives the listeners of the box plan started, whose PID 1
// the pidfd names.
func takeWarmNet(plan *sandbox.Box, pidfd int) (*warmNet, error) {
	if plan.NetHost() == nil {
		return nil, nil
	}
	lns, modes, err := forward.TakeListeners(plan.NetHost(), listenTimeout)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "run: warm box")
	}
	n := &warmNet{lns: lns, modes: modes, keep: map[uint64]bool{}}
	for _, ln := range n.lns {
		ino, err := socketInode(ln)
		if err != nil {
			n.close()
			return nil, errs.Wrap(errs.Unavailable, err, "run: warm box listener")
		}
		n.keep[ino] = true
	}
	// Without it (no CAP_NET_ADMIN over the box, no INET_DIAG_DESTROY),
	// a call that leaves TIME_WAIT behind retires its box.
	n.diag, _ = openNSDiag(pidfd)
	return n, nil
}

// socketInode is the inode of ln's socket, which names it in the box's
// /proc/net/tcp and in sock_diag's answers.
func socketInode(ln *net.TCPListener) (uint64, error) {
	rc, err := ln.SyscallConn()
	if err != nil {
		return 0, err
	}
	var st unix.Stat_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fstat(int(fd), &st) }); err != nil {
		return 0, err
	}
	return st.Ino, serr
}

// callNet is what one call's network holds while it runs.
type callNet struct {
	queues [2]*connQueue
	wg     sync.WaitGroup // the acceptors and the proxy's accept loops

	mu     sync.Mutex
	conns  map[*net.TCPConn]bool
	closed bool
}

// begin serves the listeners for one call: each accepted connection goes
// to serve (the call's proxy, egress.Proxy.ServeBox).
func (n *warmNet) begin(serve func(net.Listener, string) error) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cur != nil {
		return errs.Unavailablef("run: the warm box's network still serves another call")
	}
	c := &callNet{conns: map[*net.TCPConn]bool{}}
	for i, ln := range n.lns {
		if err := ln.SetDeadline(time.Time{}); err != nil {
			return errs.Wrap(errs.Unavailable, err, "run: warm box listener")
		}
		q := &connQueue{addr: ln.Addr(), ch: make(chan net.Conn), done: make(chan struct{})}
		c.queues[i] = q
		c.wg.Add(2)
		go func() { defer c.wg.Done(); serve(q, n.modes[i]) }()
		go func() { defer c.wg.Done(); c.accept(ln, q) }()
	}
	n.cur = c
	return nil
}

// accept takes connections from ln for the call until release stops it.
func (c *callNet) accept(ln *net.TCPListener, q *connQueue) {
	for {
		conn, err := ln.AcceptTCP()
		if err != nil {
			return // the deadline release set, or the listener closed
		}
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			abort(conn)
			continue
		}
		c.conns[conn] = true
		c.mu.Unlock()
		if !q.push(conn) {
			abort(conn)
		}
	}
}

// release ends the call's network: no more accepting, every connection of
// the call closed, the proxy's accept loops returned, and whatever was
// still queued on the listeners accepted and closed. It fails when the
// queues could not be emptied; the box must then not serve another call.
func (n *warmNet) release() error {
	n.mu.Lock()
	c := n.cur
	n.cur = nil
	n.mu.Unlock()
	if c == nil {
		return nil
	}
	c.mu.Lock()
	c.closed = true
	conns := c.conns
	c.conns = nil
	c.mu.Unlock()
	var errList []error
	for _, ln := range n.lns {
		// Wakes the acceptors; accept below empties the queue itself.
		errList = append(errList, ln.SetDeadline(time.Now()))
	}
	for _, q := range c.queues {
		q.Close()
	}
	for conn := range conns {
		abort(conn)
	}
	c.wg.Wait()
	for _, ln := range n.lns {
		errList = append(errList, drain(ln))
	}
	n.diagMu.Lock()
	if n.diag != nil {
		// What is left can only be the call's: destroy it, or leave it
		// to the init's check, which retires the box.
		n.diag.clearExcept(n.keep)
	}
	n.diagMu.Unlock()
	if err := errors.Join(errList...); err != nil {
		return errs.Wrap(errs.Unavailable, err, "run: warm box network")
	}
	return nil
}

// listening reports whether both listeners still listen: a box whose
// listener was shut down has no way out for its next call, and a call
// could take its port.
func (n *warmNet) listening() bool {
	if n == nil {
		return true
	}
	for _, ln := range n.lns {
		rc, err := ln.SyscallConn()
		if err != nil {
			return false
		}
		v := 0
		if cerr := rc.Control(func(fd uintptr) { v, err = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ACCEPTCONN) }); cerr != nil || err != nil || v != 1 {
			return false
		}
	}
	return true
}

// close ends the box's network for good.
func (n *warmNet) close() {
	if n == nil {
		return
	}
	n.release()
	n.closeOnce.Do(func() {
		for _, ln := range n.lns {
			ln.Close()
		}
		n.diagMu.Lock()
		n.diag.close()
		n.diag = nil
		n.diagMu.Unlock()
	})
}

// drain accepts and closes every connection queued on ln, without
// waiting: the box's processes have all ended, so none is on its way.
func drain(ln *net.TCPListener) error {
	rc, err := ln.SyscallConn()
	if err != nil {
		return err
	}
	var aerr error
	cerr := rc.Control(func(fd uintptr) {
		for {
			nfd, _, err := unix.Accept4(int(fd), unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK)
			if err == unix.EINTR || err == unix.ECONNABORTED {
				continue
			}
			if err == unix.EAGAIN {
				return
			}
			if err != nil {
				aerr = err
				return
			}
			unix.SetsockoptLinger(nfd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
			unix.Close(nfd)
		}
	})
	return errors.Join(cerr, aerr)
}

// abort closes conn with a reset: no TIME_WAIT is left in the box's
// network namespace for the next call to find, and nothing is left to
// send to a box whose processes have ended.
func abort(conn *net.TCPConn) {
	conn.SetLinger(0)
	conn.Close()
}

// connQueue is the listener a call's proxy accepts on: the connections
// the call's acceptors took from the box's listener.
type connQueue struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

var _ net.Listener = (*connQueue)(nil)

// push hands conn to the proxy's Accept; false once the queue is closed.
func (q *connQueue) push(conn net.Conn) bool {
	select {
	case q.ch <- conn:
		return true
	case <-q.done:
		return false
	}
}

func (q *connQueue) Accept() (net.Conn, error) {
	select {
	case c := <-q.ch:
		return c, nil
	case <-q.done:
		return nil, net.ErrClosed
	}
}

func (q *connQueue) Close() error {
	q.once.Do(func() { close(q.done) })
	return nil
}

func (q *connQueue) Addr() net.Addr { return q.addr }
