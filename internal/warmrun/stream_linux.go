package warmrun

import (
	"errors"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// A cold `airlock run` stops reading its input and writing its output when
// its process ends. The server outlives its calls, and the descriptors it
// received share their open file with the caller's (a shell's terminal, a
// pipe): a reader left blocked on the caller's input after the call would
// take the keys typed into the shell next. So the server never blocks on a
// received descriptor: every read and write first waits in poll beside an
// event that ends the wait — for input when the call is over, for every
// stream when the caller is gone — without changing the shared file's flags.

// errStopped is a write after the caller went away.
var errStopped = errors.New("warm: the caller is gone")

// guarded is a received descriptor (its own duplicate) used only while
// held, and an event that ends every wait on it. Both are closed by the
// last holder once stopped, so no descriptor number is used after it was
// closed (and perhaps reused).
type guarded struct {
	mu      sync.Mutex
	fd, ev  int
	stopped bool
	users   int
	// broken, when set, is called on a write the reader is gone for
	// (EPIPE).
	broken func()
}

func newGuarded(f *os.File) (*guarded, error) {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	ev, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &guarded{fd: fd, ev: ev}, nil
}

func (g *guarded) hold() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return false
	}
	g.users++
	return true
}

func (g *guarded) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.users--
	g.closeIfDone()
}

// stop ends every wait and every later use.
func (g *guarded) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return
	}
	g.stopped = true
	var one [8]byte
	one[0] = 1
	unix.Write(g.ev, one[:])
	g.closeIfDone()
}

func (g *guarded) closeIfDone() {
	if g.stopped && g.users == 0 && g.fd >= 0 {
		unix.Close(g.fd)
		unix.Close(g.ev)
		g.fd, g.ev = -1, -1
	}
}

// wait blocks until the descriptor is ready for events or the guard is
// stopped (false).
func (g *guarded) wait(events int16) bool {
	for {
		fds := []unix.PollFd{{Fd: int32(g.fd), Events: events}, {Fd: int32(g.ev), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return false
		}
		if fds[1].Revents != 0 {
			return false
		}
		if fds[0].Revents != 0 {
			return true
		}
	}
}

// Read reads what is there once the descriptor is readable; a stopped
// guard reads as the end of the input.
func (g *guarded) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if !g.hold() {
		return 0, io.EOF
	}
	defer g.release()
	for {
		if !g.wait(unix.POLLIN) {
			return 0, io.EOF
		}
		n, err := unix.Read(g.fd, p)
		switch {
		case err == unix.EINTR || err == unix.EAGAIN:
			continue
		case err != nil:
			return 0, err
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// Write writes all of p, waiting for room each time.
func (g *guarded) Write(p []byte) (int, error) {
	if !g.hold() {
		return 0, errStopped
	}
	defer g.release()
	done := 0
	for done < len(p) {
		if !g.wait(unix.POLLOUT) {
			return done, errStopped
		}
		n, err := unix.Write(g.fd, p[done:])
		switch {
		case err == unix.EINTR || err == unix.EAGAIN:
			continue
		case err == unix.EPIPE && g.broken != nil:
			g.broken()
			return done, err
		case err != nil:
			return done, err
		}
		done += n
	}
	return done, nil
}

// streams are a call's guarded standard streams.
type streams struct {
	in, out, errw *guarded
}

// openStreams guards the call's three streams.
func (c *Call) openStreams() error {
	var s streams
	for _, p := range []struct {
		g **guarded
		f *os.File
	}{{&s.in, c.Stdin}, {&s.out, c.Stdout}, {&s.errw, c.Stderr}} {
		var err error
		if *p.g, err = newGuarded(p.f); err != nil {
			s.stop()
			return err
		}
	}
	c.streams = &s
	return nil
}

// Streams are the call's standard input, output and error as the server
// must use them: reads end when the call is over or the caller is gone,
// writes when the caller is gone; none blocks the server past that.
func (c *Call) Streams() (stdin io.Reader, stdout, stderr io.Writer) {
	return c.streams.in, c.streams.out, c.streams.errw
}

// onBrokenPipe has f called when a write to the output or the error finds
// its reader gone: what kills a cold run's process (SIGPIPE, on its
// standard output or error). Set before the call runs.
func (s *streams) onBrokenPipe(f func()) {
	s.out.broken, s.errw.broken = f, f
}

func (s *streams) stopInput() {
	if s != nil && s.in != nil {
		s.in.stop()
	}
}

func (s *streams) stop() {
	if s == nil {
		return
	}
	for _, g := range []*guarded{s.in, s.out, s.errw} {
		if g != nil {
			g.stop()
		}
	}
}
