package warmrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"syscall"

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
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: SocketPath(dir), Net: "unixpacket"})
	if err != nil {
		return Result{Outcome: Cold, Reason: "no warm server: " + err.Error()}
	}
	defer c.Close()
	if r := checkServer(c); r != "" {
		if confinedFrom(c) {
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

// exchange sends req with fds on c and reads the answers to the end.
func exchange(ctx context.Context, c *net.UnixConn, req Request, fds []int) Result {
	if len(fds) != req.fds() {
		return Result{Outcome: Cold, Reason: fmt.Sprintf("%d descriptors for a request of %d", len(fds), req.fds())}
	}
	b, err := req.encode()
	if err != nil {
		return Result{Outcome: Cold, Reason: err.Error()}
	}
	// A record either goes whole or not at all: a failed send leaves
	// nothing on the server to run.
	if _, _, err := c.WriteMsgUnix(b, syscall.UnixRights(fds...), nil); err != nil {
		return Result{Outcome: Cold, Reason: "send: " + err.Error()}
	}
	// A cancel is sent only once the challenge is answered (at once then,
	// if ctx ended before): the server reads the answer as the next record.
	stop := func() bool { return false }
	defer func() { stop() }()
	cancelOnDone := func() { stop = context.AfterFunc(ctx, func() { c.Write([]byte(cancelRecord)) }) }
	accepted, challenged := false, false
	endPhase := starttrace.Begin("warm-answer")
	defer func() { endPhase() }()
	buf := make([]byte, maxReply)
	for {
		n, err := c.Read(buf)
		if err != nil || n == 0 {
			return Result{Outcome: Lost, Reason: "the warm server went away; the command may have run, and is not run again"}
		}
		var r reply
		if json.Unmarshal(buf[:n], &r) != nil {
			return Result{Outcome: Lost, Reason: "the warm server answered what is not an answer; the command may have run, and is not run again"}
		}
		switch {
		case r.Answer == answerCold && !accepted:
			return Result{Outcome: Cold, Reason: r.Reason}
		case r.Answer == answerRefused && !accepted:
			return Result{Outcome: Lost, Reason: "the warm server refused the run: " + r.Reason + " (AIRLOCK_WARM=off runs without it)"}
		case r.Answer == answerChallenge && !accepted && !challenged:
			// Sent by this process, the one that connected and was
			// checked (the kernel names the sender of every record).
			challenged = true
			secret, err := answerProof(c, r.Fd)
			if err != nil {
				// Nothing is sent: without the answer the server
				// runs nothing, and the run is this process's own.
				return Result{Outcome: Cold, Reason: "cannot read the warm server's process (" + err.Error() + "): this process is confined apart from it, as by Landlock"}
			}
			if _, err := c.Write([]byte(challengeRecord + secret)); err != nil {
				return Result{Outcome: Cold, Reason: "the challenge: " + err.Error()}
			}
			cancelOnDone()
		case r.Answer == answerAccepted && !accepted:
			accepted = true
			if !challenged {
				cancelOnDone()
			}
			endPhase()
			endPhase = starttrace.Begin("warm-call")
		case r.Answer == answerExit && accepted:
			return Result{Outcome: Ran, Code: r.Code}
		default:
			return Result{Outcome: Lost, Reason: "the warm server answered " + r.Answer + " out of turn; the command may have run, and is not run again"}
		}
	}
}

// checkServer is why the server on c is not this user's own ("" when it
// is): the kernel's uid of it must be the effective uid, and it must live
// in this process's user, mount and pid namespaces.
func checkServer(c *net.UnixConn) string {
	p, err := peerOf(c, false)
	if err != nil {
		return "cannot tell who listens: " + err.Error()
	}
	if p.uid != os.Geteuid() {
		return fmt.Sprintf("it runs as uid %d", p.uid)
	}
	if ns := sameNamespaces(p.pid, "user", "mnt", "pid"); ns != "" {
		return "it lives in another " + ns + " namespace"
	}
	return ""
}
