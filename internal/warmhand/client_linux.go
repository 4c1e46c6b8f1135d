package warmhand

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"syscall"
	"unsafe"

	"github.com/airlock-run/airlock/internal/starttrace"
)

// HandOver hands req to the server in dir with the descriptors fds
// (standard input, output and error, then the terminal when req.TTY). It
// does nothing else before: no policy, no kernel. ctx ending (a signal)
// cancels the call on the server.
func HandOver(ctx context.Context, dir string, req Request, fds []int) Result {
	defer starttrace.Begin("warm-handover")()
	endConnect := starttrace.Begin("warm-connect")
	defer func() { endConnect() }()
	if err := CheckDir(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Result{Outcome: Cold}
		}
		return Result{Outcome: Cold, Reason: err.Error(), Warn: err.Error() + "; the warm server there is not used"}
	}
	fd, err := dial(SocketPath(dir))
	if err != nil {
		return Result{Outcome: Cold, Reason: "no warm server: " + err.Error()}
	}
	c := &conn{fd: fd}
	defer c.close()
	if r := checkServer(fd); r != "" {
		if confinedFrom(fd) {
			// Not a stranger's server: this process may not read it,
			// and a run served there would not be confined as this
			// process is. No warning; it is what such a run does.
			return Result{Outcome: Cold, Reason: "cannot read the warm server's process: this process is confined apart from it, as by Landlock"}
		}
		return Result{Outcome: Cold, Reason: r, Warn: "warm: the server at " + SocketPath(dir) + " is refused (" + r + "); running cold"}
	}
	endConnect()
	endConnect = func() {}
	return exchange(ctx, c, req, fds)
}

// Exchange sends req with fds on the connected SOCK_SEQPACKET socket fd
// and reads the answers to the end. fd stays open.
func Exchange(ctx context.Context, fd int, req Request, fds []int) Result {
	c := &conn{fd: fd}
	defer c.detach()
	return exchange(ctx, c, req, fds)
}

// conn is the client's socket. A cancel may be written from another
// goroutine (the signal's) while the exchange reads: the lock keeps it
// from writing to a descriptor number closed, and perhaps reused, after
// the exchange ended.
type conn struct {
	mu sync.Mutex
	fd int
}

func (c *conn) write(b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return syscall.EBADF
	}
	_, err := syscall.Write(c.fd, b)
	return err
}

func (c *conn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd >= 0 {
		syscall.Close(c.fd)
		c.fd = -1
	}
}

// detach ends the writes without closing the descriptor (its owner does).
func (c *conn) detach() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fd = -1
}

func (c *conn) read(buf []byte) (int, error) {
	for {
		n, err := syscall.Read(c.fd, buf)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// dial connects a SOCK_SEQPACKET socket to the Unix socket at path.
func dial(path string) (int, error) {
	var sa syscall.SockaddrUnix
	sa.Name = path
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, errors.New("socket: " + err.Error())
	}
	for {
		err = syscall.Connect(fd, &sa)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		syscall.Close(fd)
		return -1, errors.New("dial unixpacket " + path + ": connect: " + err.Error())
	}
	return fd, nil
}

// exchange sends req with fds on c and reads the answers to the end.
func exchange(ctx context.Context, c *conn, req Request, fds []int) Result {
	if len(fds) != req.Fds() {
		return Result{Outcome: Cold, Reason: strconv.Itoa(len(fds)) + " descriptors for a request of " + strconv.Itoa(req.Fds())}
	}
	b, err := req.Encode()
	if err != nil {
		return Result{Outcome: Cold, Reason: err.Error()}
	}
	// A record either goes whole or not at all: a failed send leaves
	// nothing on the server to run.
	if err := sendmsg(c.fd, b, syscall.UnixRights(fds...)); err != nil {
		return Result{Outcome: Cold, Reason: "send: " + err.Error()}
	}
	// A cancel is sent only once the call is accepted (at once then, if
	// ctx ended before): before, the server may still answer cold after
	// reading the challenge's answer, and a record it left unread would
	// reset the connection, losing that answer.
	stop := func() bool { return false }
	defer func() { stop() }()
	cancelOnDone := func() { stop = context.AfterFunc(ctx, func() { c.write([]byte(CancelRecord)) }) }
	accepted, challenged := false, false
	endPhase := starttrace.Begin("warm-answer")
	defer func() { endPhase() }()
	buf := make([]byte, MaxReply)
	for {
		n, err := c.read(buf)
		if err != nil || n <= 0 {
			return Result{Outcome: Lost, Reason: "the warm server went away; the command may have run, and is not run again"}
		}
		r, err := DecodeReply(buf[:n])
		if err != nil {
			return Result{Outcome: Lost, Reason: "the warm server answered what is not an answer; the command may have run, and is not run again"}
		}
		switch {
		case r.Answer == AnswerCold && !accepted:
			return Result{Outcome: Cold, Reason: r.Reason}
		case r.Answer == AnswerRefused && !accepted:
			return Result{Outcome: Lost, Reason: "the warm server refused the run: " + r.Reason + " (AIRLOCK_WARM=off runs without it)"}
		case r.Answer == AnswerChallenge && !accepted && !challenged:
			// Sent by this process, the one that connected and was
			// checked (the kernel names the sender of every record).
			challenged = true
			secret, err := ReadProof(c.fd, r.Fd)
			if err != nil {
				// Nothing is sent: without the answer the server
				// runs nothing, and the run is this process's own.
				return Result{Outcome: Cold, Reason: "cannot read the warm server's process (" + err.Error() + "): this process is confined apart from it, as by Landlock"}
			}
			if err := c.write([]byte(ChallengeRecord + secret)); err != nil {
				return Result{Outcome: Cold, Reason: "the challenge: " + err.Error()}
			}
		case r.Answer == AnswerAccepted && !accepted:
			accepted = true
			cancelOnDone()
			endPhase()
			endPhase = starttrace.Begin("warm-call")
		case r.Answer == AnswerExit && accepted:
			return Result{Outcome: Ran, Code: r.Code}
		default:
			return Result{Outcome: Lost, Reason: "the warm server answered " + r.Answer + " out of turn; the command may have run, and is not run again"}
		}
	}
}

// sendmsg sends b with the control message oob as one record.
func sendmsg(fd int, b, oob []byte) error {
	for {
		err := syscall.Sendmsg(fd, b, oob, nil, 0)
		if err != syscall.EINTR {
			return err
		}
	}
}

// checkServer is why the server on fd is not this user's own ("" when it
// is): the kernel's uid of it must be the effective uid, and it must live
// in this process's user, mount and pid namespaces.
func checkServer(fd int) string {
	cred, err := syscall.GetsockoptUcred(fd, syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	if err != nil {
		return "cannot tell who listens: " + err.Error()
	}
	if cred.Pid <= 0 {
		return "cannot tell who listens: the kernel names no peer process"
	}
	if int(cred.Uid) != os.Geteuid() {
		return "it runs as uid " + strconv.FormatUint(uint64(cred.Uid), 10)
	}
	if ns := SameNamespaces(int(cred.Pid), "user", "mnt", "pid"); ns != "" {
		return "it lives in another " + ns + " namespace"
	}
	return ""
}

// SameNamespaces reports the first of names in which process pid lives in
// a namespace other than this process's, "" when none; an entry that
// cannot be read counts as different. Every entry is looked up from one
// open /proc/<pid>, so a process that ended meanwhile answers ESRCH rather
// than naming whatever took its pid.
func SameNamespaces(pid int, names ...string) string {
	dir := "/proc/" + strconv.Itoa(pid)
	if pid == 0 {
		dir = "/proc/self"
	}
	d, derr := syscall.Open(dir, oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if derr == nil {
		defer syscall.Close(d)
	}
	for _, ns := range names {
		if derr != nil {
			return ns
		}
		var mine, theirs syscall.Stat_t
		if syscall.Stat("/proc/self/ns/"+ns, &mine) != nil {
			return ns
		}
		if fstatat(d, "ns/"+ns, &theirs) != nil || theirs.Dev != mine.Dev || theirs.Ino != mine.Ino {
			return ns
		}
	}
	return ""
}

// oPath is O_PATH, which package syscall does not name.
const oPath = 0x200000

// CheckDir makes sure dir is a real directory only this user can enter:
// owned by the effective uid, mode 0700, not a symbolic link — the checks,
// and the messages, of approvals.CheckDir("warm", dir) (the test holds them
// equal). In /tmp another user could have made it first, and a socket
// there could be anyone's.
func CheckDir(dir string) error {
	var st syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		return &dirError{msg: "warm: " + dir + ": " + err.Error(), err: err}
	}
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFDIR:
		return &dirError{msg: "warm: " + dir + " is not a directory (remove it)"}
	case int(st.Uid) != os.Geteuid():
		return &dirError{msg: "warm: " + dir + " belongs to uid " + strconv.FormatUint(uint64(st.Uid), 10) + ", not to you (remove it, or set XDG_RUNTIME_DIR)"}
	case st.Mode&0o077 != 0:
		return &dirError{msg: "warm: " + dir + " is open to others (mode 0" + strconv.FormatUint(uint64(st.Mode&0o777), 8) + ") (chmod 700 " + dir + ")"}
	}
	return nil
}

type dirError struct {
	msg string
	err error
}

func (e *dirError) Error() string { return e.msg }
func (e *dirError) Unwrap() error { return e.err }

// openTerminal opens the controlling terminal as approvals.OpenTerminal
// does, for the server to ask the person on.
func openTerminal() (*os.File, error) {
	return os.OpenFile("/dev/tty", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
}

// isTerminal reports whether fd is a terminal (TCGETS succeeds), as
// golang.org/x/term.IsTerminal does.
func isTerminal(fd int) bool {
	var t syscall.Termios
	_, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TCGETS, uintptr(unsafe.Pointer(&t)))
	return e == 0
}
