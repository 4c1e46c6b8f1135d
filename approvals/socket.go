package approvals

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
)

// DefaultSocketDir is $XDG_RUNTIME_DIR/airlock, else /tmp/airlock-<uid>.
func DefaultSocketDir(getenv func(string) string) string {
	if d := getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "airlock")
	}
	return filepath.Join(os.TempDir(), "airlock-"+strconv.Itoa(os.Geteuid()))
}

const sockPrefix, sockSuffix = "approvals-", ".sock"

// ioTimeout bounds one exchange on the socket, so a client that connects
// and says nothing cannot hold a broker's goroutine.
const ioTimeout = 10 * time.Second

// checkDir makes sure dir is a real directory that only this user can
// enter (CheckDir).
func checkDir(dir string) error { return CheckDir("approvals", dir) }

// CheckDir makes sure dir is a real directory that only this user can
// enter: owned by the effective uid, mode 0700, not a symbolic link. In
// /tmp another user could have made the directory first. what names the
// socket in the error (the approvals socket, the warm server's).
func CheckDir(what, dir string) error {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return errs.Wrap(errs.Unavailable, err, "%s: %s", what, dir)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return errs.Unavailablef("%s: %s is not a directory (remove it)", what, dir)
	case int(st.Uid) != os.Geteuid():
		return errs.Unavailablef("%s: %s belongs to uid %d, not to you (remove it, or set XDG_RUNTIME_DIR)", what, dir, st.Uid)
	case st.Mode&0o077 != 0:
		return errs.Unavailablef("%s: %s is open to others (mode %#o) (chmod 700 %s)", what, dir, st.Mode&0o777, dir)
	}
	return nil
}

// socketState is whether and where a broker listens (Broker.listen).
type socketState struct {
	mu sync.Mutex
	// path is the socket to make, "" for none; tried is set once listen
	// ran (or Close did), err is then listen's failure, kept.
	path  string
	tried bool
	err   error
}

// prepareSocket makes and checks dir, and names the socket listen makes in
// it: what New refuses (a directory another user may enter, a path too
// long) it refuses at once, before any call.
func (b *Broker) prepareSocket(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return errs.Wrap(errs.Unavailable, err, "approvals: create %s", dir)
	}
	if err := checkDir(dir); err != nil {
		return err
	}
	path := filepath.Join(dir, sockPrefix+strconv.Itoa(b.pid)+sockSuffix)
	if len(newSocketName(path)) >= len(unix.RawSockaddrUnix{}.Path) {
		return errs.Unavailablef("approvals: socket path %s is too long for a Unix socket (set XDG_RUNTIME_DIR to a shorter directory)", path)
	}
	b.sock.path = path
	return nil
}

// newSocketName is where the socket at path is made before it listens: a
// name List does not read (no sockPrefix), as long as path.
func newSocketName(path string) string {
	return filepath.Join(filepath.Dir(path), "."+strings.TrimSuffix(filepath.Base(path), sockSuffix)+".new")
}

// listen makes the broker's socket, once: the first call put to a person
// waits for it, and fails when it cannot be made, as every later one
// does. It does nothing when the broker has no socket, or is closed.
func (b *Broker) listen() error {
	b.sock.mu.Lock()
	defer b.sock.mu.Unlock()
	if b.sock.tried || b.sock.path == "" {
		return b.sock.err
	}
	b.sock.tried = true
	b.sock.err = b.listenAt(filepath.Dir(b.sock.path), b.sock.path)
	return b.sock.err
}

// listenAt listens on path, in dir, checked again: it may have changed
// since New. The caller holds b.sock.mu.
func (b *Broker) listenAt(dir, path string) error {
	if err := checkDir(dir); err != nil {
		return err
	}
	// The socket is made under a name List does not read and renamed
	// into place once it listens: between a bind and its listen, a
	// connect is refused, and List removes a socket that refuses as its
	// dead process's. A socket left by a dead process with our pid, at
	// either name, is ours to replace.
	tmp := newSocketName(path)
	for _, p := range []string{tmp, path} {
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
			os.Remove(p)
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "approvals: listen on %s", path)
	}
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		ln.Close()
		os.Remove(tmp)
		return errs.Wrap(errs.Unavailable, err, "approvals: chmod %s", tmp)
	}
	if err := os.Rename(tmp, path); err != nil {
		ln.Close()
		os.Remove(tmp)
		return errs.Wrap(errs.Unavailable, err, "approvals: rename %s into place", tmp)
	}
	b.ln, b.sockPath = ln, path
	b.wg.Add(1)
	go b.serve()
	return nil
}

func (b *Broker) serve() {
	defer b.wg.Done()
	for {
		c, err := b.ln.AcceptUnix()
		if err != nil {
			select {
			case <-b.closed:
				return
			default:
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			b.log.Error("approvals socket stopped", "err", err)
			return
		}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			defer c.Close()
			b.serveConn(c)
		}()
	}
}

// wireRequest is what a client sends.
type wireRequest struct {
	Op     string `json:"op"` // "list" or "decide"
	ID     string `json:"id,omitempty"`
	Answer string `json:"answer,omitempty"`
	// GrantSHA256 is the hex sha256 of the grant line the person was shown
	// (allow-always); a digest keeps the request small whatever the grant.
	GrantSHA256 string `json:"grant_sha256,omitempty"`
}

// wireReply is what a broker answers.
type wireReply struct {
	Pending []Pending `json:"pending,omitempty"`
	Decided string    `json:"decided,omitempty"`
	Saved   string    `json:"saved,omitempty"`
	File    string    `json:"file,omitempty"`
	Error   string    `json:"error,omitempty"`
}

// peer is who is on the other end of a Unix socket, as the kernel says.
// pidfd, when not -1, pins the process Pid named when it connected.
type peer struct {
	Uid, Pid int
	pidfd    int
}

func (b *Broker) serveConn(c *net.UnixConn) {
	c.SetDeadline(time.Now().Add(ioTimeout))
	cred, err := peerCred(c)
	if err != nil {
		b.refused("approvals: cannot tell who connected; refused", "err", err)
		return
	}
	defer cred.close()
	if cred.Uid != os.Geteuid() && !b.skipPeerCheck.Load() {
		b.refused("approvals: refused a connection from another user", "uid", cred.Uid, "pid", cred.Pid)
		return
	}
	if err := cred.sameNamespaces(); err != nil && !b.skipNamespaceCheck.Load() {
		b.refused("approvals: refused a connection from another namespace", "pid", cred.Pid, "err", err)
		return
	}
	line, err := bufio.NewReaderSize(c, maxAnswerLine).ReadSlice('\n')
	if err != nil {
		return
	}
	var req wireRequest
	reply := func(r wireReply) {
		data, _ := json.Marshal(r)
		c.Write(append(data, '\n'))
	}
	if err := json.Unmarshal(line, &req); err != nil {
		reply(wireReply{Error: "malformed request"})
		return
	}
	switch req.Op {
	case "list":
		reply(wireReply{Pending: b.snapshot()})
	case "decide":
		p, ok := b.lookup(req.ID)
		if !ok {
			reply(wireReply{Error: errDecided.Error()})
			return
		}
		a, perr := ParseAnswer(req.Answer)
		via := "socket (pid " + strconv.Itoa(cred.Pid) + ")"
		shown := "(a grant other than the one that would be saved)"
		if req.GrantSHA256 != "" && req.GrantSHA256 == lineDigest(p.grantLine) {
			shown = p.grantLine
		}
		o, err := b.answer(p, a, perr, via, shown)
		if err != nil {
			msg := err.Error()
			if !errors.Is(err, errDecided) {
				msg += "; the call was denied"
			}
			reply(wireReply{Error: msg})
			return
		}
		r := wireReply{Decided: o.Answer.String()}
		if o.Answer == AllowAlways {
			r.Saved, r.File = p.grantLine, o.GrantsFile
		}
		reply(r)
	default:
		reply(wireReply{Error: "unknown op " + strconv.Quote(req.Op)})
	}
}

// lineDigest is the hex sha256 of a grant line; "" for none.
func lineDigest(line string) string {
	if line == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(line))
	return hex.EncodeToString(sum[:])
}

// namespaces a person's terminal shares with the broker. A process in a
// sandbox has the same uid (a user namespace maps it back) but lives in
// namespaces of its own; if a policy ever let it see the socket, it could
// otherwise approve its own calls.
var namespaces = []string{"user", "mnt", "pid"}

// call sends one request to the socket at path and reads the reply.
func call(ctx context.Context, path string, req wireRequest) (wireReply, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return wireReply{}, err
	}
	c := conn.(*net.UnixConn)
	defer c.Close()
	deadline := time.Now().Add(ioTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c.SetDeadline(deadline)
	// The other end must be this user too: a socket someone else put in
	// our directory must not see our answers.
	cred, err := peerCred(c)
	if err != nil {
		return wireReply{}, err
	}
	cred.close()
	if cred.Uid != os.Geteuid() {
		return wireReply{}, fmt.Errorf("the socket belongs to uid %d, not to you", cred.Uid)
	}
	data, _ := json.Marshal(req)
	if _, err := c.Write(append(data, '\n')); err != nil {
		return wireReply{}, err
	}
	r := bufio.NewReaderSize(c, 64<<10)
	var rep wireReply
	dec := json.NewDecoder(&limitedReader{r: r, n: 64 << 20})
	if err := dec.Decode(&rep); err != nil {
		return wireReply{}, fmt.Errorf("no answer: %w", err)
	}
	return rep, nil
}

type limitedReader struct {
	r interface{ Read([]byte) (int, error) }
	n int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errors.New("reply too large")
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

// sockets lists the approvals sockets in dir.
func sockets(dir string) ([]string, error) {
	if err := checkDir(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "approvals: read %s", dir)
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, sockPrefix) && strings.HasSuffix(n, sockSuffix) && e.Type()&os.ModeSocket != 0 {
			out = append(out, filepath.Join(dir, n))
		}
	}
	return out, nil
}

// List asks every airlock process of this user (every socket in dir) what
// is pending, oldest first. Sockets nobody listens on any more are
// removed. The error reports sockets that could not be asked; what could be
// gathered is returned with it.
func List(ctx context.Context, dir string) ([]Pending, error) {
	paths, err := sockets(dir)
	if err != nil {
		return nil, err
	}
	var out []Pending
	var problems []error
	for _, path := range paths {
		rep, err := call(ctx, path, wireRequest{Op: "list"})
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			os.Remove(path) // its process is gone
		case err != nil:
			problems = append(problems, fmt.Errorf("%s: %w", filepath.Base(path), err))
		case rep.Error != "":
			problems = append(problems, fmt.Errorf("%s: %s", filepath.Base(path), rep.Error))
		default:
			out = append(out, rep.Pending...)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	if len(problems) > 0 {
		return out, errs.Wrap(errs.Unavailable, errors.Join(problems...), "approvals: some airlock processes did not answer")
	}
	return out, nil
}

// socketFor returns the socket that holds escalation id.
func socketFor(dir, id string) (string, error) {
	pid, rest, ok := strings.Cut(id, "-")
	n, err := strconv.Atoi(pid)
	if !ok || err != nil || n <= 0 || rest == "" || strings.ContainsAny(rest, "/\x00") {
		return "", errs.Invalidf("approvals: %s is not an escalation id (see airlock approvals list)", Show(id))
	}
	if err := checkDir(dir); err != nil {
		return "", err
	}
	return filepath.Join(dir, sockPrefix+strconv.Itoa(n)+sockSuffix), nil
}

// Find returns the pending escalation id, asking only the process that
// holds it.
func Find(ctx context.Context, dir, id string) (Pending, error) {
	path, err := socketFor(dir, id)
	if err != nil {
		return Pending{}, err
	}
	rep, err := call(ctx, path, wireRequest{Op: "list"})
	if err != nil {
		return Pending{}, errs.Wrap(errs.NotFound, err, "approvals: escalation %s: its airlock process does not answer", Show(id))
	}
	for _, p := range rep.Pending {
		if p.ID == id {
			return p, nil
		}
	}
	return Pending{}, errs.NotFoundf("approvals: no pending escalation %s (it was answered, timed out, or never existed)", Show(id))
}

// Decision is what Decide reports.
type Decision struct {
	Answer Answer
	// Saved is the grant line written for allow-always, and File where.
	Saved, File string
}

// Decide answers escalation id. For AllowAlways, grant must be the grant
// line the person was shown (Pending.Grant); the broker refuses — and
// denies the call — if it is not the line it would save.
func Decide(ctx context.Context, dir, id string, a Answer, grant string) (Decision, error) {
	path, err := socketFor(dir, id)
	if err != nil {
		return Decision{}, err
	}
	if a != AllowOnce && a != AllowAlways && a != Deny {
		return Decision{}, errs.Invalidf("approvals: answer with allow-once, allow-always or deny")
	}
	rep, err := call(ctx, path, wireRequest{Op: "decide", ID: id, Answer: a.String(), GrantSHA256: lineDigest(grant)})
	if err != nil {
		return Decision{}, errs.Wrap(errs.Unavailable, err, "approvals: escalation %s", Show(id))
	}
	if rep.Error != "" {
		return Decision{}, errs.New(errs.NotFound, "approvals: escalation %s: %s", Show(id), rep.Error)
	}
	got, err := ParseAnswer(rep.Decided)
	if err != nil || got != a {
		return Decision{}, errs.New(errs.Internal, "approvals: escalation %s: the broker answered %s", Show(id), Show(rep.Decided))
	}
	return Decision{Answer: got, Saved: rep.Saved, File: rep.File}, nil
}

// OpenTerminal opens the controlling terminal for a Broker's questions.
// It is /dev/tty rather than standard input, which may be the agent's. It
// fails when the process has no controlling terminal.
func OpenTerminal() (*os.File, error) {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "approvals: no terminal")
	}
	return f, nil
}
