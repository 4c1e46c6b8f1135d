package egress_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/proxy"
	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/egress"
	"github.com/airlock-run/airlock/egress/forward"
	"github.com/airlock-run/airlock/egress/wire"
	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/netrule"
)

// canary is a server that counts every TCP connection it accepts; a refused
// attempt must leave its count at zero.
type canary struct {
	name  string
	ln    net.Listener
	addr  netip.AddrPort
	conns atomic.Int64
	srv   *http.Server
}

// newCanary serves HTTP on ln: "/" answers "canary NAME", "/redirect?to=U"
// redirects to U, "/echo" echoes the request body.
func newCanary(t testing.TB, name string, ln net.Listener) *canary {
	t.Helper()
	c := &canary{name: name, ln: ln, addr: netip.MustParseAddrPort(ln.Addr().String())}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "canary %s host=%s", name, r.Host)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(w, r.Body)
	})
	c.srv = &http.Server{Handler: mux, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			c.conns.Add(1)
		}
	}}
	go c.srv.Serve(ln)
	t.Cleanup(func() { c.srv.Close() })
	return c
}

func loopbackCanary(t testing.TB, name, addr string) *canary {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	return newCanary(t, name, ln)
}

func (c *canary) port() int { return int(c.addr.Port()) }

// waitConns waits until the canary has accepted n connections. A proxy
// answers a CONNECT once its dial completes, which the kernel does before
// the canary's server goroutine accepts and counts the connection: a count
// read right after the answer may not include it yet.
func (c *canary) waitConns(t testing.TB, n int64) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); c.conns.Load() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("canary %s accepted %d connections, want %d", c.name, c.conns.Load(), n)
		}
	}
}

func (c *canary) mustBeUntouched(t testing.TB) {
	t.Helper()
	if n := c.conns.Load(); n != 0 {
		t.Fatalf("canary %s accepted %d connections, want 0", c.name, n)
	}
}

// fakeResolver answers from a table; a name with several answers gives the
// next one on each lookup (a rebinding DNS server). It counts every lookup.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][]netip.Addr
	asked   map[string]int
}

func newResolver(m map[string][]string) *fakeResolver {
	r := &fakeResolver{answers: map[string][]netip.Addr{}, asked: map[string]int{}}
	for k, vs := range m {
		for _, v := range vs {
			r.answers[k] = append(r.answers[k], netip.MustParseAddr(v))
		}
	}
	return r
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.asked[host]
	r.asked[host]++
	as := r.answers[host]
	if len(as) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []netip.Addr{as[n%len(as)]}, nil
}

func (r *fakeResolver) lookups(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.asked[host]
}

func (r *fakeResolver) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, v := range r.asked {
		n += v
	}
	return n
}

// stack is a proxy on its socket plus a forwarder in front of it, as a box
// sees them.
type stack struct {
	proxy     *egress.Proxy
	socket    string
	token     string
	httpAddr  string // the forwarder's HTTP port
	socksAddr string // the forwarder's SOCKS port
	env       []string
	cancel    context.CancelFunc

	mu     sync.Mutex
	events []egress.Event
}

// audited returns the final record of every decision: refusals, and allowed
// connections that have ended.
func (s *stack) audited() []egress.Event {
	return s.eventsWhere(func(e egress.Event) bool { return !e.Opened })
}

// opened returns the admission records of allowed connections.
func (s *stack) opened() []egress.Event {
	return s.eventsWhere(func(e egress.Event) bool { return e.Opened })
}

func (s *stack) eventsWhere(keep func(egress.Event) bool) []egress.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []egress.Event
	for _, e := range s.events {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// policyOpts wires a netrule list in as the daemon does.
func policyOpts(t testing.TB, allow, deny []string) egress.Options {
	t.Helper()
	l, err := netrule.Parse(allow, deny)
	if err != nil {
		t.Fatal(err)
	}
	return egress.Options{
		Check: func(_ context.Context, host string, port int) egress.Verdict {
			ok, rule := l.Match(host, port)
			if rule == "" {
				rule = "default"
			}
			return egress.Verdict{Allow: ok, Rule: rule}
		},
		AllowAddr: l.AllowsAddr,
		DenyAddr:  l.DeniesAddr,
	}
}

// newStack starts a proxy with o and a forwarder for it; both stop at the
// end of the test.
func newStack(t testing.TB, o egress.Options) *stack {
	t.Helper()
	tok, err := wire.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{token: tok}
	o.Token = tok
	o.Box = "test-box"
	audit := o.Audit
	o.Audit = func(e egress.Event) error {
		s.mu.Lock()
		s.events = append(s.events, e)
		s.mu.Unlock()
		if audit != nil {
			return audit(e)
		}
		return nil
	}
	p, err := egress.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ln, path, dir, err := egress.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	s.proxy, s.socket = p, path
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	env, err := forward.Start(ctx, forward.Config{Socket: path, Token: tok, Exe: "/airlock"})
	if err != nil {
		t.Fatal(err)
	}
	s.env = env
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "HTTP_PROXY":
			u, _ := url.Parse(v)
			s.httpAddr = u.Host
		case "ALL_PROXY":
			u, _ := url.Parse(v)
			s.socksAddr = u.Host
		}
	}
	t.Cleanup(func() {
		cancel()
		p.Close()
		if err := <-served; !errors.Is(err, egress.ErrClosed) {
			t.Errorf("Serve returned %v, want ErrClosed", err)
		}
		os.RemoveAll(dir)
	})
	return s
}

// httpGet fetches rawURL through the forwarder's HTTP port (absolute-form).
func (s *stack) httpGet(rawURL string, follow bool) (int, string, error) {
	pu, _ := url.Parse("http://" + s.httpAddr)
	cl := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), DisableKeepAlives: true}, Timeout: 20 * time.Second}
	if !follow {
		cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	resp, err := cl.Get(rawURL)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// viaConnect opens a CONNECT tunnel to target through the forwarder and, if
// it is established, sends a GET / over it. It returns the proxy's status,
// the proxy's body on refusal or the server's body on success.
func (s *stack) viaConnect(target string) (int, string, error) {
	c, err := net.DialTimeout("tcp", s.httpAddr, 10*time.Second)
	if err != nil {
		return 0, "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return 0, "", err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: tunnel\r\nConnection: close\r\n\r\n")
	r2, err := http.ReadResponse(br, nil)
	if err != nil {
		return 200, "", err
	}
	b, err := io.ReadAll(r2.Body)
	return 200, string(b), err
}

// viaSOCKS dials target through the forwarder's SOCKS port and sends a GET /.
func (s *stack) viaSOCKS(target string) (string, error) {
	d, err := proxy.SOCKS5("tcp", s.socksAddr, nil, proxy.Direct)
	if err != nil {
		return "", err
	}
	c, err := d.Dial("tcp", target)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: tunnel\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// raw sends bytes to the forwarder's HTTP port and returns everything the
// proxy answers until it closes.
func (s *stack) raw(t testing.TB, req string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.httpAddr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	io.WriteString(c, req)
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading the answer to %.80q: %v (the proxy must answer or close)", req, err)
	}
	return string(b)
}

// leakCheck records goroutines and descriptors now, and at cleanup waits
// for them to return to that level, failing if they do not.
func leakCheck(t *testing.T) {
	t.Helper()
	g0, f0 := runtime.NumGoroutine(), openFDs(t)
	t.Cleanup(func() {
		var g, f int
		for i := 0; i < 200; i++ {
			// splice(2) keeps pipes in a pool that a collection empties
			// (their finalizers close them); they are a cache, not a leak.
			runtime.GC()
			g, f = runtime.NumGoroutine(), openFDs(t)
			if g <= g0 && f <= f0 {
				return
			}
			time.Sleep(25 * time.Millisecond)
		}
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Errorf("leak: goroutines %d -> %d, descriptors %d -> %d %v\n%s", g0, g, f0, f, fdTargets(), buf[:n])
	})
}

func openFDs(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		testsupport.Missing(t, "cannot count descriptors: %v", err)
	}
	return len(ents)
}

// netns is a network namespace made for one test, joined to this one by a
// veth pair: the host side is .1, the namespace side .2 of a /30.
type netns struct {
	name     string
	hostAddr netip.Addr
	nsAddr   netip.Addr
}

func requireRoot(t testing.TB) {
	t.Helper()
	testsupport.Require(t, testsupport.NetNS)
}

var netnsSeq atomic.Int32

func newNetns(t testing.TB) *netns {
	t.Helper()
	requireRoot(t)
	k := int(netnsSeq.Add(1))
	tag := fmt.Sprintf("%d%d", os.Getpid()%100000, k)
	n := &netns{name: "alkeg" + tag}
	octet := (os.Getpid()+k)%250 + 1
	n.hostAddr = netip.AddrFrom4([4]byte{10, 213, byte(octet), 1})
	n.nsAddr = netip.AddrFrom4([4]byte{10, 213, byte(octet), 2})
	hostIf, nsIf := "aeh"+tag, "aen"+tag
	if len(hostIf) > 15 {
		t.Fatalf("interface name %q too long", hostIf)
	}
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			testsupport.Missing(t, "ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	run("netns", "add", n.name)
	t.Cleanup(func() {
		exec.Command("ip", "link", "del", hostIf).Run()
		exec.Command("ip", "netns", "del", n.name).Run()
	})
	run("link", "add", hostIf, "type", "veth", "peer", "name", nsIf)
	run("link", "set", nsIf, "netns", n.name)
	run("addr", "add", n.hostAddr.String()+"/30", "dev", hostIf)
	run("link", "set", hostIf, "up")
	run("netns", "exec", n.name, "ip", "addr", "add", n.nsAddr.String()+"/30", "dev", nsIf)
	run("netns", "exec", n.name, "ip", "link", "set", nsIf, "up")
	run("netns", "exec", n.name, "ip", "link", "set", "lo", "up")
	return n
}

// listen opens a TCP listener inside the namespace.
func (n *netns) listen(t testing.TB, addr string) net.Listener {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	target, err := os.Open(filepath.Join("/run/netns", n.name))
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		t.Fatalf("setns: %v", err)
	}
	ln, lerr := net.Listen("tcp", addr)
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		panic("cannot return to the test's network namespace: " + err.Error())
	}
	if lerr != nil {
		t.Fatal(lerr)
	}
	return ln
}

func hostPort(a netip.Addr, port int) string { return net.JoinHostPort(a.String(), strconv.Itoa(port)) }

func fdTargets() []string {
	ents, _ := os.ReadDir("/proc/self/fd")
	var out []string
	for _, e := range ents {
		l, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		out = append(out, e.Name()+"="+l)
	}
	return out
}
