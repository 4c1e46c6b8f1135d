package sandbox

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/starttrace"
	"github.com/airlock-run/airlock/sandbox/boxconf"
	"github.com/airlock-run/airlock/sandbox/landlock"
)

// A tier-1 box with network has two shapes.
//
// Without an init (the usual one): bubblewrap starts the exec step, which
// makes the forwarder's two loopback listeners inside the box's network
// namespace, hands them to airlock on the host over a socket pair
// (boxconf.Listen), puts on the walls and the filter and executes the
// command. airlock accepts on the listeners and hands each connection to
// the proxy (egress/forward's Host). No Go process stays in the box, the
// proxy's socket is not bound into it and the box holds no egress token:
// its only way out is the two ports, which lead to the proxy as before.
//
// A warm box (PlanWarm) has the same listeners, made once by its init as
// the box begins and handed out the same way; the host serves each call's
// connections through that call's egress proxy, so the box holds no token
// and no proxy socket, and its plan names neither (one box serves calls
// with different proxies).
//
// With airlock's init as PID 1 and no listeners (a bubblewrap without
// --ro-bind-fd, a kernel without Landlock): the init runs the forwarder
// inside and reaches the proxy through its socket, bound into the box.

// netDirect reports whether a box with network can do without the init:
// the exec step that hands out the listeners is started only where the
// kernel has Landlock (execWall plans no step without it).
func netDirect() bool {
	abi, err := landlock.ABI()
	return err == nil && abi >= 1
}

// planListen plans the way out of a box with network and no init: the
// socket pair the exec step hands the listeners out on, and the in-box
// code under the name airlock-connect for git (linkConnect).
func (p *planner) planListen() error {
	n := p.spec.Net
	if n.ProxySocket == "" || n.Token == "" {
		return errs.Invalidf("sandbox: network needs the proxy socket and a token")
	}
	p.linkConnect()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "sandbox: the egress listeners' socket pair")
	}
	p.box.netHost = os.NewFile(uintptr(fds[0]), "egress-listen")
	fd := p.file(os.NewFile(uintptr(fds[1]), "egress-listen-box"), true)
	// A warm box's init hands them out once, traced by no call.
	p.listen = &boxconf.Listen{FD: fd, HTTPPort: boxHTTPPort, SOCKSPort: boxSOCKSPort, Exe: boxInitPath, ConnectExe: boxConnPath,
		Trace: starttrace.On() && !p.warm}
	return nil
}

// linkConnect names the in-box code airlock-connect for git, which runs
// its proxy command by name with only HOST PORT: a symbolic link at
// boxConnPath to boxInitPath, where the pinned binary is bound. A second
// bind of it (bindConnect, as a box with an init or of tier 2 has) would
// be one more mount for bubblewrap to make and check against the whole
// mount table; the link is none, and executing it executes the bound
// file. The box cannot put another file in its place: this box always has
// the exec step's write wall (execWall), which does not take in /run, and
// the link itself is no way to change the file it names (a write through
// it meets the read-only bind).
func (p *planner) linkConnect() {
	p.ops = append(p.ops, op{dest: boxConnPath, order: 0, args: []string{"--symlink", boxInitPath, boxConnPath}})
	if p.boxOnly == nil {
		p.boxOnly = map[string]bool{}
	}
	p.boxOnly[boxConnPath] = true
}

// NetHost is airlock's end of the socket pair a box with network and no
// init, or a warm box with network, hands its forwarder's listeners out on
// (boxconf.Listen), for the runner to serve; nil for every other box. The
// box closes it in Close.
func (b *Box) NetHost() *os.File { return b.netHost }
