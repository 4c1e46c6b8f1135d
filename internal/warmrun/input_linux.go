package warmrun

import (
	"errors"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Input is the call's standard input as the call may read it: a read waits
// (poll) for input or for stop, and after stop reads nothing. The server
// outlives the call, and whatever copies the input into the box stays in a
// read of the caller's descriptor until something comes: a plain read would
// take the next line the caller's own process or its shell was to read,
// after the call had ended. stop is safe to call more than once.
func (c *Call) Input() (r io.Reader, stop func(), err error) {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return nil, nil, err
	}
	in := &callInput{f: c.Stdin, efd: efd}
	return in, in.stop, nil
}

// callInput is Input's reader. The eventfd is closed by whichever of stop
// and an ongoing Read comes last, so a Read never polls a closed (or
// reused) descriptor.
type callInput struct {
	f   *os.File
	efd int

	mu      sync.Mutex
	reading bool
	stopped bool
	closed  bool
}

func (in *callInput) stop() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.stopped {
		return
	}
	in.stopped = true
	unix.Write(in.efd, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	if !in.reading {
		in.closeEventfd()
	}
}

func (in *callInput) closeEventfd() {
	if !in.closed {
		in.closed = true
		unix.Close(in.efd)
	}
}

// Read reads from the caller's input only once poll says there is
// something (or its end) and the call has not stopped; a descriptor left
// non-blocking by the caller (EAGAIN) is polled again.
func (in *callInput) Read(p []byte) (int, error) {
	in.mu.Lock()
	if in.stopped {
		in.closeEventfd()
		in.mu.Unlock()
		return 0, io.EOF
	}
	in.reading = true
	in.mu.Unlock()
	defer func() {
		in.mu.Lock()
		in.reading = false
		if in.stopped {
			in.closeEventfd()
		}
		in.mu.Unlock()
	}()
	raw, err := in.f.SyscallConn()
	if err != nil {
		return 0, err
	}
	// Under the file's own reference (RawConn.Read), so the descriptor is
	// not closed, and its number not reused, while it is polled or read.
	var n int
	var rerr error
	if err := raw.Read(func(fd uintptr) bool {
		n, rerr = in.pollRead(int(fd), p)
		return true
	}); err != nil {
		return 0, err
	}
	return n, rerr
}

func (in *callInput) pollRead(fd int, p []byte) (int, error) {
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(in.efd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return 0, err
		}
		if fds[1].Revents != 0 {
			return 0, io.EOF
		}
		if fds[0].Revents == 0 {
			continue
		}
		n, err := unix.Read(fd, p)
		switch {
		case errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN):
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}
