package testsupport

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// probeNetNS moves one locked thread into a new network namespace. The
// thread is never unlocked, so the runtime ends it with the goroutine and
// the namespace goes with it; no other goroutine ever runs there.
func probeNetNS() string {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		errc <- unix.Unshare(unix.CLONE_NEWNET)
	}()
	if err := <-errc; err != nil {
		return "the kernel refuses a new network namespace (unshare(CLONE_NEWNET): " + err.Error() + ")"
	}
	return ""
}

// Namespace is a named network namespace a test made (`ip netns add`), with
// its loopback up. It is deleted when the test ends; the processes a test
// started in it must have ended by then (Cleanup runs in reverse order,
// so register their stop after making the namespace).
type Namespace struct {
	Name string
}

// nsSeq makes namespace names unique within a test binary; the pid
// makes them unique across binaries running at once.
var nsSeq atomic.Int64

// NewNetNS makes a network namespace for the test; short names only (the
// interface names derive from it).
func NewNetNS(t testing.TB, name string) *Namespace {
	t.Helper()
	Require(t, NetNS)
	ns := &Namespace{Name: fmt.Sprintf("al%d-%d-%s", os.Getpid()%100000, nsSeq.Add(1), name)}
	ipCmd(t, "netns", "add", ns.Name)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns.Name).Run() })
	ns.IP(t, "link", "set", "lo", "up")
	return ns
}

// IP runs `ip ARGS...` inside the namespace, failing the test on error.
func (ns *Namespace) IP(t testing.TB, args ...string) {
	t.Helper()
	ipCmd(t, append([]string{"netns", "exec", ns.Name, "ip"}, args...)...)
}

// Command is name with args run inside the namespace, through nsenter,
// which joins the network namespace only and execs name: the process is
// name itself, so a signal to it reaches the program. (`ip netns exec`
// would also mount a fresh /sys in a mount namespace of its own, hiding
// the host's cgroup hierarchies from the program.)
func (ns *Namespace) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "nsenter", append([]string{"--net=/run/netns/" + ns.Name, "--", name}, args...)...)
}

// Link wires a and b with a veth pair, addrA/prefix on a's end and
// addrB/prefix on b's, both up. The addresses are the test's own (pick them
// from a private range no host network uses, such as 10.231.0.0/16); no
// route beyond the pair's subnet is added.
func Link(t testing.TB, a *Namespace, addrA string, b *Namespace, addrB string, prefix int) {
	t.Helper()
	n := nsSeq.Add(1)
	ifA, ifB := fmt.Sprintf("va%d", n), fmt.Sprintf("vb%d", n)
	// Made in a's namespace, so no end ever appears in the host's.
	a.IP(t, "link", "add", ifA, "type", "veth", "peer", "name", ifB, "netns", b.Name)
	a.IP(t, "addr", "add", fmt.Sprintf("%s/%d", addrA, prefix), "dev", ifA)
	b.IP(t, "addr", "add", fmt.Sprintf("%s/%d", addrB, prefix), "dev", ifB)
	a.IP(t, "link", "set", ifA, "up")
	b.IP(t, "link", "set", ifB, "up")
}

func ipCmd(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// Dial connects to addr from inside the namespace: the socket is made on
// a thread moved into it, which is never unlocked (the runtime ends it
// with its goroutine, so no other goroutine runs in the namespace). The
// connection then works from any thread. For an http.Transport's
// DialContext, so a test reaches a server in the namespace without an
// address in the host's.
func (ns *Namespace) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open("/run/netns/" + ns.Name)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("setns %s: %w", ns.Name, err)}
			return
		}
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}
