// Package warmrun is the hand-over of one `airlock run` to `airlock warm`,
// the per-user server of warm boxes: the socket and its directory, the
// lock that keeps one server per directory, the wire (one request with the
// caller's descriptors, answers, a cancel), and what the kernel says about
// the two ends (SO_PEERCRED, SO_PEERPIDFD, /proc/<pid>) that decides
// whether a call may run warm at all. It decides nothing about commands and
// runs none. Only internal/cli imports it.
//
// The exchange, one SOCK_SEQPACKET record each:
//
//	client                                   server
//	  ── connect ───────────────────────────▶  peer: uid, user/pid ns (else refused,
//	                                           nothing read), mount ns (else cold)
//	  ── request + SCM_RIGHTS 0,1,2[,tty] ──▶  exact decoding, the peer's facts
//	                                           against the server's own, pidfd alive
//	  ◀── cold (reason) | challenge (fd n) ─   a fresh secret in a pipe at fd n
//	  ── the secret, read through ─────────▶   same sender; proof the caller may
//	     /proc/<server>/fd/<n>                 read the server (no Landlock domain apart)
//	  ◀── accepted | refused ───────────────   nothing with a side effect before this
//	  ── cancel (a signal arrived) ─────────▶  the call's context ends
//	  ◀── exit (code) ──────────────────────
//
// A client that sent its request runs the command itself only on "cold", or
// when it cannot read the secret (it then answers nothing, and nothing runs
// without the answer): once sent, no answer means the command may have run
// (exactly once).
package warmrun

import (
	"context"
	"os"

	"github.com/airlock-run/airlock/approvals"
	"github.com/airlock-run/airlock/internal/warmhand"
)

// SocketName and LockName are the server's socket and lock file in its
// directory.
const (
	SocketName = warmhand.SocketName
	LockName   = "warm.lock"
)

// Env is the variable that turns the hand-over off ("off") or has a run
// say why it went cold ("verbose").
const Env = warmhand.Env

// CheckDir makes sure dir is a real directory only this user can enter:
// owned by the effective uid, mode 0700, not a symbolic link (the checks of
// the approvals socket's directory, whose default it shares). In /tmp
// another user could have made it first, and a socket there could be
// anyone's.
func CheckDir(dir string) error { return approvals.CheckDir("warm", dir) }

// SocketPath is the server's socket in dir.
func SocketPath(dir string) string { return warmhand.SocketPath(dir) }

// Call is one request the server received, with its descriptors (each
// close-on-exec, closed when the call ends).
type Call struct {
	Request
	Stdin, Stdout, Stderr *os.File
	// TTY is the client's controlling terminal, nil when it sent none.
	TTY *os.File
	// Pid is the client's process id, as the kernel gives it.
	Pid int
	// CTTY is the device of the client's controlling terminal as the
	// kernel says (/proc/<pid>/stat), 0 for none.
	CTTY uint64

	// streams guard the three streams (Streams), made before the call
	// is accepted.
	streams *streams
	// early waits for Handler.Read's value; nil when there is none.
	early func() any
}

// Early is what Handler.Read read of c ahead of its run (waiting for it
// to finish), nil when the handler reads nothing ahead.
func (c *Call) Early() any {
	if c.early == nil {
		return nil
	}
	return c.early()
}

func (c *Call) close() {
	for _, f := range []*os.File{c.Stdin, c.Stdout, c.Stderr, c.TTY} {
		if f != nil {
			f.Close()
		}
	}
}

// Handler is what the server does with a call that passed its checks.
type Handler struct {
	// Check returns why c must run cold ("" when it may run warm). It
	// reads only: nothing it does may have a side effect.
	Check func(c *Call) string
	// Read, when set, starts the reading part of c's run beside the
	// server's checks of the caller (its value is c.Early's once c is
	// accepted). It reads only, like Check: a call that goes cold drops
	// its value with nothing to undo.
	Read func(c *Call) any
	// Run runs c and returns its exit code. ctx ends when the client
	// cancels (a signal reached it) or goes away, or the server stops.
	Run func(ctx context.Context, c *Call) int
}

// Outcome is how a hand-over ended; Result is what HandOver found (the
// client's, internal/warmhand).
type (
	Outcome = warmhand.Outcome
	Result  = warmhand.Result
)

const (
	// Cold: nothing was run; the client runs the command itself.
	Cold = warmhand.Cold
	// Ran: the server ran the call; Result.Code is its exit code.
	Ran = warmhand.Ran
	// Lost: the request was sent and no answer came, or the server
	// refused it: the client must not run the command (it may have run).
	Lost = warmhand.Lost
)
