package warmrun

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/starttrace"
)

// RequestTimeout bounds the time from a connection to its request: a
// client that connects and says nothing holds one goroutine that long.
const RequestTimeout = 5 * time.Second

// Server is a listening `airlock warm`: its socket, the lock that makes it
// the only one in its directory, and its own facts to compare callers with.
type Server struct {
	dir, path string
	ln        *net.UnixListener
	lock      *os.File
	sockDev   uint64
	sockIno   uint64
	// self are the server's own facts as read at start: a check that
	// they can be read at all, and what a test of the old shape compares
	// with; every call compares with facts read for it (ownFacts).
	self facts
	log  *slog.Logger

	// skip names checks left out; nil (always, but in tests that show
	// what a check refuses) leaves none out.
	skip map[string]bool

	mu     sync.Mutex
	active int
	last   time.Time
	// pending counts the connections not yet accepted or turned away,
	// pendingHigh the most there were at once.
	pending, pendingHigh int
}

// maxPending bounds the connections the server holds before each is
// accepted or turned away (each has a goroutine, and a request buffer
// once it sends): more wait in the kernel's listen queue, with nothing
// allocated for them, until one ends (each within RequestTimeout). Calls
// already accepted do not count.
var maxPending = 256

// Listen makes dir (mode 0700) when it is missing, checks it as CheckDir
// does, takes its lock (another server there fails with one line naming it)
// and listens on its socket.
func Listen(dir string, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if !filepath.IsAbs(dir) {
		return nil, errs.Invalidf("warm: socket directory %q is not absolute", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "warm: create %s", dir)
	}
	if err := CheckDir(dir); err != nil {
		return nil, err
	}
	s := &Server{dir: dir, path: SocketPath(dir), log: log, last: time.Now()}
	if len(s.path) >= len(unix.RawSockaddrUnix{}.Path) {
		return nil, errs.Unavailablef("warm: socket path %s is too long for a Unix socket (set XDG_RUNTIME_DIR to a shorter directory)", s.path)
	}
	self, err := readFacts(0)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "warm: read this process's own facts")
	}
	s.self = self
	if err := s.takeLock(); err != nil {
		return nil, err
	}
	// The lock is held: a socket left here is a dead server's.
	if fi, err := os.Lstat(s.path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		os.Remove(s.path)
	}
	ln, err := listenPrivate(s.path)
	if err != nil {
		s.lock.Close()
		return nil, errs.Wrap(errs.Unavailable, err, "warm: listen on %s", s.path)
	}
	ln.SetUnlinkOnClose(false)
	if testAfterBind != nil {
		testAfterBind(s.path)
	}
	var st unix.Stat_t
	err = passCred(ln)
	if err == nil {
		err = unix.Lstat(s.path, &st)
	}
	if err == nil && (st.Mode&unix.S_IFMT != unix.S_IFSOCK || st.Mode&0o777 != 0o600) {
		err = fmt.Errorf("not the socket just made (mode %o)", st.Mode)
	}
	if err != nil {
		ln.Close()
		os.Remove(s.path)
		s.lock.Close()
		return nil, errs.Wrap(errs.Unavailable, err, "warm: socket %s", s.path)
	}
	s.ln, s.sockDev, s.sockIno = ln, st.Dev, st.Ino
	warnUndumpable(log)
	return s, nil
}

// testAfterBind, set only by tests, runs between the bind and the checks
// of the socket's path.
var testAfterBind func(path string)

// listenPrivate binds path with mode 0600 as it is made (under umask
// 0177), so no chmod by name follows: a chmod would follow a link put in
// the socket's place and change the mode of the file it names. The umask
// is this process's, set back at once; Listen runs before any call.
func listenPrivate(path string) (*net.UnixListener, error) {
	old := unix.Umask(0o177)
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	unix.Umask(old)
	return ln, err
}

// passCred has the kernel name the sender of every record the server
// reads (SO_PASSCRED, which each accepted connection inherits; a record
// sent before its connection is accepted carries its sender too): a
// request is taken only from the process that connected and was checked.
func passCred(ln *net.UnixListener) error {
	raw, err := ln.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
	}); err != nil {
		return err
	}
	return serr
}

// takeLock takes the directory's lock file, writing this process's pid in
// it so a second server can name the first.
func (s *Server) takeLock() error {
	lp := filepath.Join(s.dir, LockName)
	f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "warm: lock %s", lp)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		b := make([]byte, 32)
		n, _ := f.ReadAt(b, 0)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return errs.Unavailablef("warm: another airlock warm (pid %s) serves %s; stop it first", strings.TrimSpace(string(b[:n])), s.dir)
		}
		return errs.Wrap(errs.Unavailable, err, "warm: lock %s", lp)
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	s.lock = f
	return nil
}

// Path is the server's socket.
func (s *Server) Path() string { return s.path }

// Serve answers connections until ctx ends or no call came for idle (0:
// never), then stops listening (turnAwayQueued: the calls queued are
// answered cold, as are those not yet accepted), ends the calls still
// running (as a signal ends a cold run) and waits for their answers. It
// removes the socket only if the path is still the one it made, and
// releases the lock.
func (s *Server) Serve(ctx context.Context, h Handler, idle time.Duration) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	go func() {
		<-ctx.Done()
		s.ln.SetDeadline(time.Now()) // wakes the accept below
	}()
	if idle > 0 {
		go s.watchIdle(ctx, stop, idle)
	}
	slots := make(chan struct{}, maxPending)
	for {
		if !s.skip["pending-cap"] {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				break
			}
		}
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if !s.skip["pending-cap"] {
				<-slots
			}
			if ctx.Err() != nil {
				break // the deadline set as ctx ended
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			s.log.Error("warm: accept", "err", err)
			stop()
			break
		}
		s.begin()
		wg.Add(1)
		var once sync.Once
		settled := func() {
			once.Do(func() {
				s.mu.Lock()
				s.pending--
				s.mu.Unlock()
				if !s.skip["pending-cap"] {
					<-slots
				}
			})
		}
		s.mu.Lock()
		s.pending++
		s.pendingHigh = max(s.pendingHigh, s.pending)
		s.mu.Unlock()
		go func() {
			defer wg.Done()
			defer s.end()
			defer c.Close()
			defer settled()
			s.serveConn(ctx, c, h, settled)
		}()
	}
	s.turnAwayQueued(&wg)
	wg.Wait()
	s.close()
	return nil
}

// drainQuiet is how long a stopping server waits for another connection
// once its socket is gone: a connect that found the socket before it went
// is queued within that time.
const drainQuiet = 50 * time.Millisecond

// turnAwayQueued ends the listening: the socket goes first (no connect
// reaches it any more), then every connection already queued is answered
// cold, each in its goroutine (at most maxPending at once, beside those
// still pending, which may all be silent), and only then is the listener
// closed. Closing it with connections queued resets them, and a caller
// whose request was sent cannot tell a reset from a server that died
// running its command: it would exit 125 for one that never ran.
func (s *Server) turnAwayQueued(wg *sync.WaitGroup) {
	defer s.ln.Close()
	if s.skip["turn-away"] {
		return
	}
	s.removeSocket()
	slots := make(chan struct{}, maxPending)
	for {
		slots <- struct{}{}
		s.ln.SetDeadline(time.Now().Add(drainQuiet))
		c, err := s.ln.AcceptUnix()
		if err != nil {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			defer func() { <-slots }()
			s.stopping(c)
		}()
	}
}

// stopWait bounds the wait for a queued connection's request while the
// server stops.
const stopWait = time.Second

// stopping answers c cold: the server stops, and nothing was done. Its
// request, if it comes, is read first (its descriptors closed), so the
// answer is not lost to the reset of a record left unread.
func (s *Server) stopping(c *net.UnixConn) {
	c.SetDeadline(time.Now().Add(stopWait))
	if size, err := waitRequest(c); err == nil {
		if call, _, err := readCall(c, size); err == nil {
			call.close()
		}
	}
	c.Write(encodeReply(reply{Answer: answerCold, Reason: "the warm server is stopping"}))
}

// watchIdle stops the server once idle passed with no call in flight.
func (s *Server) watchIdle(ctx context.Context, stop func(), idle time.Duration) {
	tick := time.NewTicker(max(time.Millisecond, min(idle/4, time.Second)))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			s.mu.Lock()
			done := s.active == 0 && time.Since(s.last) >= idle
			s.mu.Unlock()
			if done {
				s.log.Info("warm: idle; stopping", "idle", idle)
				stop()
				return
			}
		}
	}
}

func (s *Server) begin() {
	s.mu.Lock()
	s.active++
	s.mu.Unlock()
}

func (s *Server) end() {
	s.mu.Lock()
	s.active--
	s.last = time.Now()
	s.mu.Unlock()
}

// close removes the socket (if turnAwayQueued has not) and releases the
// lock.
func (s *Server) close() {
	s.removeSocket()
	s.lock.Close()
}

// removeSocket removes the socket when the path is still the one this
// server made (another server may have replaced it).
func (s *Server) removeSocket() {
	var st unix.Stat_t
	if unix.Lstat(s.path, &st) == nil && st.Dev == s.sockDev && st.Ino == s.sockIno {
		os.Remove(s.path)
	}
}

// serveConn checks the peer, reads its request, checks that the call would
// run warm as it would cold, answers, and runs it.
// settled is called once the call is accepted (it then holds no slot of
// maxPending); serveConn's caller calls it too when it ends.
func (s *Server) serveConn(ctx context.Context, c *net.UnixConn, h Handler, settled func()) {
	c.SetDeadline(time.Now().Add(RequestTimeout))
	answer := func(r reply) error { _, err := c.Write(encodeReply(r)); return err }
	p, err := peerOf(c, true)
	if err != nil {
		s.log.Warn("warm: cannot tell who connected; refused", "err", err)
		answer(reply{Answer: answerRefused, Reason: "the server cannot tell who connected"})
		return
	}
	defer p.close()
	// Before a byte of the request is read: a box's process lives in
	// other user and pid namespaces and is refused here (its peer gets
	// the reset of a record left unread, or this line).
	if p.uid != os.Geteuid() && !s.skip["uid"] {
		s.log.Warn("warm: refused a connection from another user", "uid", p.uid, "pid", p.pid)
		answer(reply{Answer: answerRefused, Reason: "another user"})
		return
	}
	if ns := sameNamespaces(p.pid, "user", "pid"); ns != "" && !s.skip[ns] {
		s.log.Warn("warm: refused a connection from another namespace", "pid", p.pid, "ns", ns)
		answer(reply{Answer: answerRefused, Reason: "another " + ns + " namespace"})
		return
	}
	endCheck := starttrace.Begin("warm-check")
	defer func() { endCheck() }()
	// The server's own facts, for this call, are read while the caller
	// sends its request: they are not the caller's, of which nothing is
	// read before its request is here.
	mine := s.ownFacts()
	// The request buffer is taken only once the request is there, and
	// only as large as it is.
	size, err := waitRequest(c)
	if err != nil {
		s.log.Warn("warm: no request; refused", "pid", p.pid, "err", err)
		answer(reply{Answer: answerRefused, Reason: "no request"})
		return
	}
	call, sender, err := readCall(c, size)
	if err != nil {
		s.log.Warn("warm: bad request; refused", "pid", p.pid, "err", err)
		answer(reply{Answer: answerRefused, Reason: "bad request: " + err.Error()})
		return
	}
	defer call.close()
	if sender != p.pid && !s.skip["sender"] {
		s.refuseSender(answer, p, sender)
		return
	}
	call.Pid = p.pid
	call.early = readLater(h.Read, call)
	// Stopped when the call ends, and when it is not accepted (admit
	// opens them).
	defer func() { call.streams.stop() }()
	if !s.admit(c, answer, p, call, h, mine) {
		return
	}
	if ctx.Err() != nil && !s.skip["stopping"] {
		// The server stops: accepted now, the call would start under an
		// ended context and be ended at once, as if signalled.
		s.cold(answer, p, "the warm server is stopping")
		return
	}
	endCheck()
	endCheck = func() {}
	if err := answer(reply{Answer: answerAccepted}); err != nil {
		return // the client is gone: nothing was done
	}
	c.SetDeadline(time.Time{})
	settled()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A cold run writing to an output whose reader is gone dies of
	// SIGPIPE at once, and its box with it: so does the call, with
	// nothing more written to the caller.
	var piped atomic.Bool
	if !s.skip["sigpipe"] {
		call.streams.onBrokenPipe(func() {
			piped.Store(true)
			cancel()
			call.streams.stop()
		})
	}
	go func() {
		// A cancel record ends the call as a signal ends a cold run;
		// the connection's end (the client gone) ends it and its
		// streams, as the client's death ends a cold run's.
		b := make([]byte, 16)
		for {
			if _, err := c.Read(b); err != nil {
				cancel()
				call.streams.stop()
				return
			}
			cancel()
		}
	}()
	endRun := starttrace.Begin("warm-run")
	code := h.Run(cctx, call)
	endRun()
	if piped.Load() {
		code = 128 + int(unix.SIGPIPE)
	}
	// The call is over: nothing more is read of the caller's input,
	// which is the caller's again (a cold run's reader ends with it).
	call.streams.stopInput()
	answer(reply{Answer: answerExit, Code: code})
}

// admit reads the caller and checks it against the server's own facts
// (mine), and is true when the call may run warm; false once it has
// answered why not (cold, or refused). The caller's streams are opened
// when it is true.
func (s *Server) admit(c *net.UnixConn, answer func(reply) error, p peer, call *Call, h Handler, mine <-chan factsRead) bool {
	if s.skip["challenge-first"] {
		// For tests only, the shape that overlaps the challenge with
		// every read: answered before the caller is read.
		if reason := s.challenge(c, answer, p)(); reason != "" {
			answer(reply{Answer: answerRefused, Reason: reason})
			return false
		}
	}
	// The caller's facts are read only once its request is here, never
	// ahead of it: a caller may take on confinement between connecting and
	// sending (chroot, no_new_privs, a seccomp filter), and what it asks is
	// run as it is when it asks; confinement taken on cannot be shed, so a
	// change after the request only goes further from the server's.
	theirs, err := readCaller(p.pid)
	if err != nil {
		// Nothing was sent since the request: the answer is not lost
		// to the reset of a record left unread.
		s.cold(answer, p, "cannot read the client's process: "+err.Error())
		return false
	}
	// Compared before any challenge, so that a caller unlike the server
	// (another airlock binary, which may answer no challenge) hears why.
	own := <-mine
	if own.err != nil {
		s.cold(answer, p, "cannot read the server's own process: "+own.err.Error())
		return false
	}
	if r := own.f.differ(theirs.facts, s.skip); r != "" {
		s.cold(answer, p, r)
		return false
	}
	// Every fact of the caller is read: its challenge goes out now, and
	// what is left is done while it is answered, nothing of it read of the
	// caller (its directory and terminal compared with its request, the
	// handler's check, the streams).
	answered := func() string { return "" }
	if !s.skip["challenge-first"] {
		answered = s.challenge(c, answer, p)
	}
	reason := s.check(call, h, theirs)
	if reason == "" {
		if err := call.openStreams(); err != nil {
			reason = "cannot guard the streams: " + err.Error()
		}
	}
	// The answer is read even for a call that goes cold, so the "cold"
	// is not lost to the reset of a record left unread.
	if r := answered(); r != "" {
		s.log.Warn("warm: the connecting process did not answer its challenge; refused", "pid", p.pid, "reason", r)
		answer(reply{Answer: answerRefused, Reason: r})
		return false
	}
	if reason != "" {
		s.cold(answer, p, reason)
		return false
	}
	// Last, after every read of /proc/<pid> and the answer: the pid still
	// names the process that connected.
	if err := p.alive(); err != nil {
		answer(reply{Answer: answerRefused, Reason: err.Error()})
		return false
	}
	return true
}

func (s *Server) refuseSender(answer func(reply) error, p peer, sender int) {
	s.log.Warn("warm: a record from another process than the one that connected; refused", "pid", p.pid, "sender", sender)
	answer(reply{Answer: answerRefused, Reason: fmt.Sprintf("the request came from process %d, not %d that connected", sender, p.pid)})
}

// challenge asks the connecting process, once its facts were read, for
// the secret of a fresh proof (proof_linux.go), and returns what waits for
// the answer: "" when that same process sends the secret back on the same
// connection. The caller could then read the server's process, so no
// Landlock domain (nor other confinement the kernel checks that read
// against) stands between them; and the request is the checked process's
// own, not one sent for it by a child it forked (another pid), nor by a
// process that has since exec'd another program there (an airlock command,
// which answers no challenge): what answers has seen the secret, made
// after the facts were read, so it is the program they were read of or one
// it became after.
func (s *Server) challenge(c *net.UnixConn, answer func(reply) error, p peer) (answered func() string) {
	if s.skip["challenge"] {
		return func() string { return "" }
	}
	failed := func(r string) func() string { return func() string { return r } }
	pr, err := newProof()
	if err != nil {
		return failed("the server cannot make a challenge: " + err.Error())
	}
	if err := answer(reply{Answer: answerChallenge, Fd: pr.fd}); err != nil {
		pr.close()
		return failed("the challenge: " + err.Error())
	}
	return func() string {
		defer pr.close()
		return s.checkAnswer(c, p, challengeRecord+pr.secret)
	}
}

// checkAnswer reads the answer to the challenge want: "" when p sent want
// back on c, else why not.
func (s *Server) checkAnswer(c *net.UnixConn, p peer, want string) string {
	buf := make([]byte, len(want)+1)
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred)+unix.CmsgSpace(5*4))
	n, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return "no answer to the challenge: " + err.Error()
	}
	fds, sender, ferr := rights(oob[:oobn])
	for _, fd := range fds {
		unix.Close(fd)
	}
	switch {
	case ferr != nil || len(fds) > 0 || flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0:
		return "a bad answer to the challenge"
	case sender != p.pid && !s.skip["sender"]:
		return fmt.Sprintf("the challenge was answered by process %d, not %d that connected", sender, p.pid)
	case s.skip["proof"]:
		// The old shape sent its nonce on the connection: any answer
		// from the connecting process passed.
	case subtle.ConstantTimeCompare(buf[:n], []byte(want)) != 1:
		return "no proof that the caller may read the server's process (confined apart from it, as by Landlock)"
	}
	return ""
}

func (s *Server) cold(answer func(reply) error, p peer, reason string) {
	s.log.Debug("warm: a run goes cold", "pid", p.pid, "reason", reason)
	answer(reply{Answer: answerCold, Reason: reason})
}

// check is why the call must go cold, "" when it may run warm: the
// caller's working directory and terminal against what its request says,
// and the handler's own checks. It reads nothing of the caller's process:
// theirs is what was read.
func (s *Server) check(call *Call, h Handler, theirs caller) string {
	if err := sameDir(theirs.cwd, call.Dir); err != nil {
		return err.Error()
	}
	call.CTTY = theirs.ctty
	if call.TTY != nil {
		// The client sends the /dev/tty it opened, whose own device is
		// /dev/tty's (5:0) for every process: the kernel names the
		// terminal behind it (TIOCGDEV), encoded as /proc's tty_nr is.
		dev, err := unix.IoctlGetUint32(int(call.TTY.Fd()), unix.TIOCGDEV)
		if err != nil || call.CTTY == 0 || uint64(dev) != call.CTTY {
			return "the terminal sent is not the client's controlling terminal"
		}
	}
	if h.Check != nil {
		return h.Check(call)
	}
	return ""
}

type factsRead struct {
	f   facts
	err error
}

// ownFacts reads the server's own facts for one call, on a goroutine of
// its own: a server reniced, limited, moved to another cgroup or given
// another umask since it started runs its boxes so, and is compared as it
// is now.
func (s *Server) ownFacts() <-chan factsRead {
	ch := make(chan factsRead, 1)
	if s.skip["stale-self"] {
		ch <- factsRead{f: s.self}
		return ch
	}
	go func() {
		f, err := readFacts(0)
		ch <- factsRead{f, err}
	}()
	return ch
}

// waitRequest waits, under c's deadline, until a record is there to read,
// and is its size (a peek: MSG_TRUNC has the kernel say the whole size of
// a record it copies none of).
func waitRequest(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var (
		n    int
		perr error
	)
	if err := raw.Read(func(fd uintptr) bool {
		n, _, perr = unix.Recvfrom(int(fd), nil, unix.MSG_PEEK|unix.MSG_TRUNC|unix.MSG_DONTWAIT)
		return perr != unix.EAGAIN
	}); err != nil {
		return 0, err
	}
	return n, perr
}

// readCall reads one request record with its descriptors. A record cut
// short by the buffer, lost descriptors, control messages other than
// descriptors or a count other than the request's is refused, and every
// descriptor received is closed then.
// The buffer holds size bytes and one more (at most MaxRequest and one), so
// a record larger than it was said to be, or than the bound, is cut short
// and refused.
func readCall(c *net.UnixConn, size int) (call *Call, sender int, err error) {
	buf := make([]byte, min(max(size, 0), MaxRequest)+1)
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred)+unix.CmsgSpace(5*4))
	n, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, 0, fmt.Errorf("read: %v", err)
	}
	fds, sender, ferr := rights(oob[:oobn])
	closeAll := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	switch {
	case ferr != nil:
		closeAll()
		return nil, 0, ferr
	case flags&unix.MSG_TRUNC != 0:
		closeAll()
		return nil, 0, fmt.Errorf("request over %d bytes", MaxRequest)
	case flags&unix.MSG_CTRUNC != 0:
		closeAll()
		return nil, 0, fmt.Errorf("too many descriptors")
	}
	req, err := decodeRequest(buf[:n])
	if err == nil && len(fds) != req.Fds() {
		err = fmt.Errorf("%d descriptors, want %d", len(fds), req.Fds())
	}
	if err != nil {
		closeAll()
		return nil, 0, err
	}
	call = &Call{Request: req}
	files := make([]*os.File, len(fds))
	for i, fd := range fds {
		unix.CloseOnExec(fd) // received with MSG_CMSG_CLOEXEC too; never left to a box
		files[i] = os.NewFile(uintptr(fd), "warm-fd-"+strconv.Itoa(i))
	}
	call.Stdin, call.Stdout, call.Stderr = files[0], files[1], files[2]
	if req.TTY {
		call.TTY = files[3]
	}
	return call, sender, nil
}

// rights are the descriptors in oob and the pid the kernel names as the
// record's sender (SCM_CREDENTIALS; 0 when none came); any other control
// message, or a second credentials message, is an error (the descriptors,
// if any came, are still returned to be closed).
func rights(oob []byte) (fds []int, sender int, bad error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, 0, fmt.Errorf("control message: %v", err)
	}
	creds := 0
	for _, m := range msgs {
		switch {
		case m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_CREDENTIALS:
			creds++
			cred, err := unix.ParseUnixCredentials(&m)
			if err != nil || creds > 1 {
				bad = fmt.Errorf("the sender's credentials")
				continue
			}
			sender = int(cred.Pid)
		case m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_RIGHTS:
			got, err := unix.ParseUnixRights(&m)
			if err != nil {
				bad = fmt.Errorf("descriptors: %v", err)
				continue
			}
			fds = append(fds, got...)
		default:
			bad = fmt.Errorf("a control message other than descriptors")
		}
	}
	if bad != nil {
		sender = 0
	}
	return fds, sender, bad
}
