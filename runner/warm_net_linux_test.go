package runner

import (
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/egress"
	"github.com/airlock-run/airlock/egress/wire"
	"github.com/airlock-run/airlock/sandbox"
)

// TestWarmNetConformance runs the conformance suite with every call going
// through one warm pool and each call with network served by its own
// proxy's accept loop, the shape a warm box with network takes: a call
// with network in a warm box must give what one in a box of its own
// gives.
func TestWarmNetConformance(t *testing.T) {
	requireTier1(t)
	netOwnServe = true
	t.Cleanup(func() { netOwnServe = false })
	nets := 0
	warmConformance(t, func(req Request) bool {
		if req.Spec.Net != nil && Warm(req) {
			nets++
		}
		return true
	})
	if nets == 0 {
		t.Fatal("no call with network went through the warm pool, so this test shows nothing")
	}
}

// callProxy is one call's egress proxy, in this process (its Serve is the
// proxy's own accept loop), counting the connections it was handed and
// keeping its audit events.
type callProxy struct {
	px     *egress.Proxy
	ns     *sandbox.NetSpec
	conns  atomic.Int64
	mu     sync.Mutex
	events []egress.Event
}

// newCallProxy starts a proxy that refuses every destination. hold makes
// its accept loop take nothing: what the box's listeners accept for the
// call waits, as a slow proxy's would.
func newCallProxy(t *testing.T, hold bool) *callProxy {
	t.Helper()
	token, err := wire.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	cp := &callProxy{}
	cp.px, err = egress.New(egress.Options{Box: "test", Token: token, Audit: func(e egress.Event) error {
		cp.mu.Lock()
		defer cp.mu.Unlock()
		cp.events = append(cp.events, e)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	ln, path, dir, err := egress.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	go cp.px.Serve(ln)
	t.Cleanup(func() { cp.px.Close(); ln.Close(); os.RemoveAll(dir) })
	serve := func(ln net.Listener, mode string) error {
		return cp.px.ServeBox(countingListener{ln, &cp.conns}, mode)
	}
	if hold {
		serve = func(ln net.Listener, mode string) error {
			<-closedOf(ln)
			return net.ErrClosed
		}
	}
	cp.ns = &sandbox.NetSpec{ProxySocket: path, Token: token, Serve: serve}
	return cp
}

// closedOf is closed once ln, the call's queue of connections, is closed
// (the call's network released); nothing is taken from it before.
func closedOf(ln net.Listener) <-chan struct{} {
	return ln.(*connQueue).done
}

type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func (cp *callProxy) audit() []egress.Event {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return append([]egress.Event(nil), cp.events...)
}

// netSpecWith is spec with cp's network.
func netSpecWith(spec sandbox.Spec, cp *callProxy) sandbox.Spec {
	spec.Net = cp.ns
	return spec
}

// flood is a Python program that opens many connections to the box's HTTP
// proxy port, writes the start of a request on each, half-closes some,
// and exits without waiting for an answer: most wait in the listener's
// queue when the call ends.
const flood = `
import os, socket
port = int(os.environ["HTTP_PROXY"].rsplit(":", 1)[1])
held = []
for i in range(200):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET http://192.0.2.1/ HTTP/1.1\r\nHost: 192.0.2.1\r\n")
    if i % 2:
        s.shutdown(socket.SHUT_WR)
    held.append(s)
print("FLOODED")
`

// TestWarmNetQueuedNotForwarded: connections a call leaves waiting in the
// listener's queue, half-closed or not, are closed before the next call
// begins; none reaches the next call's proxy, which sees only its own.
// On a shape that leaves the queue alone between calls, the next call's
// proxy is handed the first call's connections.
func TestWarmNetQueuedNotForwarded(t *testing.T) {
	requireTier1(t)
	p := warmPool(t)
	spec := baseSpec(t)
	for round := 1; round <= 2; round++ {
		a, b := newCallProxy(t, true), newCallProxy(t, false)
		o := mustWarm(t, p, netSpecWith(spec, a), "python3", "-c", flood)
		if !strings.Contains(o.stdout, "FLOODED") {
			t.Fatalf("the first call could not open its connections (%q, %q), so this test shows nothing", o.stdout, o.stderr)
		}
		o = mustWarm(t, p, netSpecWith(spec, b), "sleep", "0.3")
		if want := "call " + string(rune('0'+2*round)); !strings.Contains(lastNote(o), want) {
			t.Fatalf("round %d: the second call did not run in the first call's box (notes %q), so this test shows nothing", round, o.res.Description.Notes)
		}
		if n := b.conns.Load(); n != 0 {
			t.Errorf("round %d: the second call's proxy was handed %d connections it did not make", round, n)
		}
		if ev := b.audit(); len(ev) != 0 {
			t.Errorf("round %d: the second call's proxy recorded %d events for connections it did not make: %+v", round, len(ev), ev[0])
		}
	}
}

// TestWarmNetLearnsNothing: a call whose connection went through its proxy
// leaves nothing of it in the box's network namespace for the next call:
// no socket in TIME_WAIT on the proxy's port, none on the port the client
// used. The next call finds the two listeners and nothing else: in the
// same box when the pool could destroy what the connection left, in
// another when it could not.
func TestWarmNetLearnsNothing(t *testing.T) {
	requireTier1(t)
	p := warmPool(t)
	spec := baseSpec(t)
	for i := 0; i < 3; i++ {
		a, b := newCallProxy(t, false), newCallProxy(t, false)
		o := mustWarm(t, p, netSpecWith(spec, a), "curl", "-sS", "-x", "http://127.0.0.1:3128", "http://192.0.2.1:80/")
		if !strings.Contains(o.stdout, "blocked by airlock egress policy") {
			t.Fatalf("the first call's request did not reach its proxy (%q, %q), so this test shows nothing", o.stdout, o.stderr)
		}
		o = mustWarm(t, p, netSpecWith(spec, b), "cat", "/proc/net/tcp", "/proc/net/tcp6")
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(o.stdout), "\n") {
			if f := strings.Fields(l); len(f) > 3 && f[0] != "sl" {
				lines = append(lines, f[1]+" "+f[2]+" "+f[3])
			}
		}
		want := []string{"0100007F:0438 00000000:0000 0A", "0100007F:0C38 00000000:0000 0A"}
		if got := strings.Join(sorted(lines), ", "); got != strings.Join(want, ", ") {
			t.Errorf("the next call finds %q in the box's network namespace, want the two listeners only", got)
		}
		if want := fmt.Sprintf("call %d of", 2*i+2); destroys(p) && !strings.Contains(lastNote(o), want) {
			t.Errorf("the pool can destroy what a call's connections left, yet the next call ran in another box (notes %q)", o.res.Description.Notes)
		}
		if len(a.audit()) != 1 || len(b.audit()) != 0 {
			t.Errorf("audit events: first call %d, want 1; second %d, want 0", len(a.audit()), len(b.audit()))
		}
	}
}

// destroys reports whether the pool's boxes can have the sockets a call
// left destroyed (nsDiag): then a call's connections do not cost it its
// box.
func destroys(p *Pool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for wb := range p.all {
		if wb.net != nil && wb.net.diag != nil {
			return true
		}
	}
	return false
}

// TestWarmNetListenerGone: a box whose listener no longer listens (shut
// down on the host here; the box itself holds no descriptor of it) serves
// no other call: the next call runs in a box whose port leads to its
// proxy.
func TestWarmNetListenerGone(t *testing.T) {
	p, spec, wb := oneNetBox(t)
	rc, err := wb.net.lns[0].SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	rc.Control(func(fd uintptr) { unix.Shutdown(int(fd), unix.SHUT_RDWR) })
	o := mustWarm(t, p, netSpecWith(spec, newCallProxy(t, false)), "curl", "-sS", "-x", "http://127.0.0.1:3128", "http://192.0.2.1:80/")
	if !strings.Contains(lastNote(o), "call 1") || !strings.Contains(o.stdout, "blocked by airlock egress policy") {
		t.Errorf("after its listener was shut down the box served another call (%q, notes %q)", o.stdout, o.res.Description.Notes)
	}
}

// TestWarmNetNoSecretsLeft: once a call with network has ended and its
// box is idle, the pool holds nothing of the call's network: no proxy
// serve function, token or socket, no connection.
func TestWarmNetNoSecretsLeft(t *testing.T) {
	_, _, wb := oneNetBox(t)
	if wb.net == nil {
		t.Fatal("the box has no network, so this test shows nothing")
	}
	wb.net.mu.Lock()
	cur := wb.net.cur
	wb.net.mu.Unlock()
	if cur != nil {
		t.Errorf("an idle box still serves the last call's network (%d connections)", len(cur.conns))
	}
	if n := wb.r.req.Spec.Net; n == nil || n.Token != "" || n.ProxySocket != "" || n.Serve != nil {
		t.Errorf("the box keeps its first call's network: %+v", n)
	}
}

// oneNetBox is a pool that ran one call with network, the spec of that
// call's box and the box, idle again.
func oneNetBox(t *testing.T) (*Pool, sandbox.Spec, *warmBox) {
	t.Helper()
	requireTier1(t)
	p := warmPool(t)
	spec := baseSpec(t)
	mustWarm(t, p, netSpecWith(spec, newCallProxy(t, false)), "true")
	p.settledAll()
	p.mu.Lock()
	defer p.mu.Unlock()
	for wb := range p.all {
		return p, spec, wb
	}
	t.Fatal("the call left no box in the pool")
	return nil, spec, nil
}
