//go:build linux

package escape

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/egress"
	"github.com/airlock-run/airlock/egress/forward"
	"github.com/airlock-run/airlock/egress/wire"
	"github.com/airlock-run/airlock/netrule"
	"github.com/airlock-run/airlock/sandbox"
)

// world is everything the attempts aim at, set up outside the box: a flag
// file beside the working directory, canaries on every loopback and
// host address, Unix sockets, an egress proxy for the box and a naive proxy
// for the unconfined runs. Every target answers with the world's token, a
// secret the box cannot know unless it reached one.
type world struct {
	base, flag, token string
	flagFile          *os.File

	tcp4, tcp6, hostTCP string // canaries, "host:port"; hostTCP "" without a host address
	hostIP              string
	udp4, udp6, dns     string
	unixPath, abstract  string
	httpCanary          string // 127.0.0.1:port, answers GET with the token
	redirect            string // 127.0.0.2:port, redirects to httpCanary

	egressSock, egressToken string
	egressLookups           *lookups
	naiveProxy              string // host:port of the proxy without checks
	naiveLookups            *lookups

	// caches are the boxes' host caches (their /etc views); nil, none.
	caches *sandbox.Caches

	seq     int
	mu      sync.Mutex
	closers []func()
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (w *world) onClose(f func()) { w.closers = append(w.closers, f) }

func (w *world) close() {
	for i := len(w.closers) - 1; i >= 0; i-- {
		w.closers[i]()
	}
}

// newWorld builds the targets under a fresh directory in parent ("" for the
// system's temporary directory).
func newWorld(parent string) (_ *world, err error) {
	w := &world{token: "airlock-canary-" + randHex(12)}
	defer func() {
		if err != nil {
			w.close()
		}
	}()
	w.base, err = os.MkdirTemp(parent, "airlock-escape-")
	if err != nil {
		return nil, err
	}
	w.onClose(func() { os.RemoveAll(w.base) })
	w.flag = filepath.Join(w.base, "flag.txt")
	if err := os.WriteFile(w.flag, []byte(w.token+"\n"), 0o644); err != nil {
		return nil, err
	}
	// Held open for the whole matrix: a descriptor leak would show it.
	if w.flagFile, err = os.Open(w.flag); err != nil {
		return nil, err
	}
	w.onClose(func() { w.flagFile.Close() })

	greet := func(c net.Conn) { c.Write([]byte(w.token + "\n")) }
	if w.tcp4, err = w.serveTCP("tcp4", "127.0.0.1:0", greet); err != nil {
		return nil, err
	}
	if w.tcp6, err = w.serveTCP("tcp6", "[::1]:0", greet); err != nil {
		w.tcp6 = "" // no IPv6 loopback on this host
	}
	if ip := hostAddress(); ip != "" {
		if w.hostTCP, err = w.serveTCP("tcp4", net.JoinHostPort(ip, "0"), greet); err == nil {
			w.hostIP = ip
		} else {
			w.hostTCP = ""
		}
	}
	if w.udp4, err = w.serveUDP("udp4", "127.0.0.1:0", func([]byte) []byte { return []byte(w.token) }); err != nil {
		return nil, err
	}
	if w.udp6, err = w.serveUDP("udp6", "[::1]:0", func([]byte) []byte { return []byte(w.token) }); err != nil {
		w.udp6 = ""
	}
	// DNS over UDP and TCP on one port number. The TCP port is taken
	// first and UDP then asked for the same number; another process may
	// hold that UDP port, so a few numbers are tried (a TCP listener of a
	// number given up stays open until the world closes: harmless).
	for try := 0; ; try++ {
		var addr string
		if addr, err = w.serveTCP("tcp4", "127.0.0.1:0", w.dnsOverTCP); err != nil {
			return nil, err
		}
		if w.dns, err = w.serveUDP("udp4", addr, w.dnsAnswer); err == nil {
			break
		}
		if try == 9 {
			return nil, err
		}
	}
	w.unixPath = filepath.Join(w.base, "canary.sock")
	if _, err = w.serveTCP("unix", w.unixPath, greet); err != nil {
		return nil, err
	}
	w.abstract = "@airlock-canary-" + randHex(8)
	if _, err = w.serveTCP("unix", "\x00"+w.abstract[1:], greet); err != nil {
		return nil, err
	}
	if w.httpCanary, err = w.serveHTTP("127.0.0.1:0", http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		io.WriteString(rw, w.token+"\n")
	})); err != nil {
		return nil, err
	}
	if w.redirect, err = w.serveHTTP("127.0.0.2:0", http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		http.Redirect(rw, r, "http://"+w.httpCanary+"/", http.StatusFound)
	})); err != nil {
		return nil, err
	}
	if err := w.startEgress(); err != nil {
		return nil, err
	}
	if err := w.startNaive(); err != nil {
		return nil, err
	}
	return w, nil
}

// hostAddress is this host's first non-loopback IPv4 address, "" if none.
func hostAddress() string {
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
				return n.IP.String()
			}
		}
	}
	return ""
}

func (w *world) serveTCP(network, addr string, handle func(net.Conn)) (string, error) {
	ln, err := net.Listen(network, addr)
	if err != nil {
		return "", err
	}
	w.onClose(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				handle(c)
			}()
		}
	}()
	return ln.Addr().String(), nil
}

func (w *world) serveUDP(network, addr string, answer func([]byte) []byte) (string, error) {
	pc, err := net.ListenPacket(network, addr)
	if err != nil {
		return "", err
	}
	w.onClose(func() { pc.Close() })
	go func() {
		b := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(b)
			if err != nil {
				return
			}
			pc.WriteTo(answer(b[:n]), from)
		}
	}()
	return pc.LocalAddr().String(), nil
}

func (w *world) serveHTTP(addr string, h http.Handler) (string, error) {
	ln, err := net.Listen("tcp4", addr)
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	w.onClose(func() { srv.Close() })
	go srv.Serve(ln)
	return ln.Addr().String(), nil
}

// dnsAnswer answers a query: a TXT question with the token, an A question
// for a name under canary.test with 127.0.0.1 (so a proxy resolving names
// over real DNS is led to the loopback canary), anything else with no
// answer.
func (w *world) dnsAnswer(q []byte) []byte {
	if len(q) < 12 {
		return nil
	}
	end := 12
	var labels []string
	for end < len(q) && q[end] != 0 {
		n := int(q[end])
		if n > 63 || end+1+n > len(q) {
			return nil
		}
		labels = append(labels, string(q[end+1:end+1+n]))
		end += 1 + n
	}
	if end+5 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[end+1:])
	end += 5 // the root label, type and class
	a := append([]byte{}, q[:end]...)
	a[2], a[3] = 0x81, 0x80 // a response; recursion available
	binary.BigEndian.PutUint16(a[4:], 1)
	binary.BigEndian.PutUint16(a[6:], 0)
	binary.BigEndian.PutUint16(a[8:], 0)
	binary.BigEndian.PutUint16(a[10:], 0) // no additional section (EDNS)
	name := strings.ToLower(strings.Join(labels, "."))
	var rdata []byte
	switch {
	case qtype == 16:
		rdata = append([]byte{byte(len(w.token))}, w.token...)
	case qtype == 1 && (name == "canary.test" || strings.HasSuffix(name, ".canary.test")):
		rdata = []byte{127, 0, 0, 1}
	default:
		return a
	}
	binary.BigEndian.PutUint16(a[6:], 1)
	a = append(a, 0xc0, 12) // the question's name
	a = binary.BigEndian.AppendUint16(a, qtype)
	a = append(a, 0, 1, 0, 0, 0, 60) // IN, TTL 60
	a = binary.BigEndian.AppendUint16(a, uint16(len(rdata)))
	return append(a, rdata...)
}

// rebindFirst is rebind.test's first answer, admitted by an IP entry.
var rebindFirst = netip.MustParseAddr("127.0.0.3")

// metadataAddr is the cloud metadata service's address. Nothing here ever
// connects to it: the unconfined run's proxy stands the canary in for it.
var metadataAddr = netip.MustParseAddr("169.254.169.254")

// lookups is a resolver for the made-up names the egress attempts use; it
// records every name it was asked.
type lookups struct {
	// dns is the world's DNS canary, host:port; names under
	// udp.canary.test and tcp.canary.test are resolved there for real,
	// over that transport.
	dns   string
	mu    sync.Mutex
	asked []string
	// rebind counts lookups of rebind.test: the first answer is a public
	// address, every later one loopback.
	rebind int
}

func (l *lookups) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	l.mu.Lock()
	l.asked = append(l.asked, host)
	l.mu.Unlock()
	if transport, ok := strings.CutSuffix(host, ".canary.test"); ok && (transport == "udp" || transport == "tcp") {
		r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, transport, l.dns)
		}}
		return r.LookupNetIP(ctx, "ip4", host)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch host {
	case "localhost", "canary.test", "refused.test":
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	case "rebind.test":
		// The first answer is an address the policy admits (an IP entry
		// names 127.0.0.3, where nothing listens); every later one is the
		// canary. A proxy that checks one lookup and dials another
		// reaches it.
		l.rebind++
		if l.rebind == 1 {
			return []netip.Addr{rebindFirst}, nil
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (l *lookups) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.asked)
}

// sawSince reports whether name was looked up after the first n lookups.
func (l *lookups) sawSince(name string, n int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range l.asked[n:] {
		if a == name {
			return true
		}
	}
	return false
}

// startEgress runs airlock's egress proxy for the box with the widest policy
// a user could write — every name allowed but refused.test, and one local
// service (the redirector) named by address — so only the proxy's own
// address checks stand between the box and the canaries.
func (w *world) startEgress() error {
	tok, err := wire.NewToken()
	if err != nil {
		return err
	}
	// The socket's directory is the system's temporary one, as a real
	// box's is: the targets' base may be too deep for a socket's path
	// (a home under a test's directory), and the box sees only the
	// directory bound at its own place.
	ln, path, dir, err := egress.Listen("")
	if err != nil {
		return err
	}
	w.onClose(func() { os.RemoveAll(dir) })
	redirHost, redirPortS, _ := net.SplitHostPort(w.redirect)
	redirPort, _ := strconv.Atoi(redirPortS)
	redirAddr := netip.MustParseAddr(redirHost)
	w.egressLookups = &lookups{dns: w.dns}
	p, err := egress.New(egress.Options{
		Box:   "escape-matrix",
		Token: tok,
		Check: func(ctx context.Context, host string, port int) egress.Verdict {
			if host == "refused.test" {
				return egress.Verdict{Rule: "net.deny[0]", Reason: "refused.test is refused"}
			}
			return egress.Verdict{Allow: true, Rule: "net.allow[0]"}
		},
		AllowAddr: func(a netip.Addr, port int) (bool, string) {
			if a == rebindFirst {
				return true, "net.allow[2]"
			}
			return a == redirAddr && port == redirPort, "net.allow[1]"
		},
		Resolver:    w.egressLookups,
		DialTimeout: 2 * time.Second,
	})
	if err != nil {
		ln.Close()
		return err
	}
	go p.Serve(ln)
	w.onClose(func() { p.Close() })
	w.egressSock, w.egressToken = path, tok
	return nil
}

// startNaive runs the unconfined runs' proxy: it resolves names the same
// way (checking one lookup and dialling another, as a naive proxy would)
// and refuses nothing, so it shows each spelling does lead to a canary.
func (w *world) startNaive() error {
	w.naiveLookups = &lookups{dns: w.dns}
	dial := func(ctx context.Context, network, hostport string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(hostport)
		if err != nil {
			return nil, err
		}
		canon, err := netrule.Canonical(host)
		if err != nil {
			return nil, err
		}
		if a, err := netip.ParseAddr(canon); err == nil && a == metadataAddr {
			// Stand-in: this machine's tests touch nothing beyond it.
			return (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, "tcp", w.tcp4)
		}
		if _, perr := netip.ParseAddr(canon); perr != nil {
			w.naiveLookups.LookupNetIP(ctx, "ip", canon) // the check's lookup
			addrs, err := w.naiveLookups.LookupNetIP(ctx, "ip", canon)
			if err != nil {
				return nil, err
			}
			canon = addrs[0].String()
		}
		d := net.Dialer{Timeout: 2 * time.Second}
		return d.DialContext(ctx, "tcp", net.JoinHostPort(canon, port))
	}
	tr := &http.Transport{DialContext: dial, Proxy: nil}
	h := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect {
			up, err := dial(r.Context(), "tcp", r.Host)
			if err != nil {
				http.Error(rw, err.Error(), http.StatusBadGateway)
				return
			}
			hj, ok := rw.(http.Hijacker)
			if !ok {
				up.Close()
				return
			}
			c, brw, err := hj.Hijack()
			if err != nil {
				up.Close()
				return
			}
			io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
			go func() { io.Copy(up, brw); up.Close() }()
			io.Copy(c, up)
			c.Close()
			return
		}
		r.RequestURI = ""
		resp, err := tr.RoundTrip(r)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			rw.Header()[k] = v
		}
		rw.WriteHeader(resp.StatusCode)
		io.Copy(rw, resp.Body)
	})
	addr, err := w.serveHTTP("127.0.0.1:0", h)
	if err != nil {
		return err
	}
	w.onClose(tr.CloseIdleConnections)
	w.naiveProxy = addr
	return nil
}

// workdir makes a fresh working directory beside the flag file, with the
// protected paths a project has (a git hook and config that names a hooks
// directory and an include in the tree, a nested repository, a shell
// start-up file) and a symbolic link to the flag planted by its owner.
func (w *world) workdir() (string, error) {
	w.mu.Lock()
	w.seq++
	n := w.seq
	w.mu.Unlock()
	wd := filepath.Join(w.base, fmt.Sprintf("work-%d", n))
	for _, d := range []string{".git/hooks", ".git/objects", ".git/refs", "pkg/.git/objects", "pkg/.git/refs", "mnt"} {
		if err := os.MkdirAll(filepath.Join(wd, d), 0o755); err != nil {
			return "", err
		}
	}
	files := map[string]string{
		".git/hooks/pre-commit": "#!/bin/sh\nexit 0\n",
		".git/config":           "[core]\n\tbare = false\n\thooksPath = .husky\n[include]\n\tpath = ../.gitconfig\n",
		".git/HEAD":             "ref: refs/heads/main\n",
		// A nested repository, as a monorepo's vendored package has.
		"pkg/.git/config": "[core]\n\tbare = false\n",
		"pkg/.git/HEAD":   "ref: refs/heads/main\n",
		".bashrc":         "# the owner's\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(wd, name), []byte(body), 0o644); err != nil {
			return "", err
		}
	}
	if err := os.Symlink(w.flag, filepath.Join(wd, "planted")); err != nil {
		return "", err
	}
	return wd, nil
}

// fileHas reports whether p exists and, when marker is not "", holds it.
func fileHas(p, marker string) bool {
	b, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	return marker == "" || strings.Contains(string(b), marker)
}

// processesWith lists the processes whose command line holds marker.
func processesWith(marker string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if strings.Contains(string(b), marker) {
			// A zombie has no command line; this one is alive.
			if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
				out = append(out, pid)
			}
		}
	}
	return out
}

// proxyEnv is what the box's forwarder gives a boxed process, pointed at
// the naive proxy for unconfined runs.
func (w *world) naiveEnv() []string {
	_, port, _ := net.SplitHostPort(w.naiveProxy)
	p, _ := strconv.Atoi(port)
	return forward.Env(p, p, "/nonexistent", "")
}

// victim is a process of the same user outside the box, holding the token
// in its environment, and a terminal whose input the box must not reach.
type victim struct {
	pid  int
	proc *os.Process
	file string   // where it writes "signalled"
	tty  *os.File // a terminal's slave side; nil when not asked for
	ptm  *os.File
}

func startVictim(w *world, tty bool) (*victim, error) {
	v := &victim{file: filepath.Join(w.base, "victim-"+randHex(6))}
	if tty {
		m, s, err := openPty()
		if err != nil {
			return nil, err
		}
		v.ptm, v.tty = m, s
		return v, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer pr.Close()
	p, err := os.StartProcess(exe, []string{exe, AttackArg, "victim", v.file, "60"}, &os.ProcAttr{
		Env: []string{"AIRLOCK_ESCAPE_CANARY=" + w.token}, Files: []*os.File{nil, pw, pw},
	})
	pw.Close()
	if err != nil {
		return nil, err
	}
	v.proc, v.pid = p, p.Pid
	// Wait until it listens for the signal.
	line, _ := bufio.NewReader(pr).ReadString('\n')
	if !strings.HasPrefix(line, "ready") {
		v.stop()
		return nil, errors.New("the outside process did not start: " + strings.TrimSpace(line))
	}
	return v, nil
}

// signalled reports whether the victim got SIGUSR1, giving it a moment to
// write its file after the attack has ended.
func (v *victim) signalled() bool {
	for i := 0; i < 50; i++ {
		if fileHas(v.file, "signalled") {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// ttyGot reports whether text was pushed into the terminal's input.
func (v *victim) ttyGot(text string) bool {
	if v.tty == nil {
		return false
	}
	fd := int(v.tty.Fd())
	unix.SetNonblock(fd, true)
	var got []byte
	b := make([]byte, 4096)
	for {
		n, err := unix.Read(fd, b)
		if n <= 0 || err != nil {
			break
		}
		got = append(got, b[:n]...)
	}
	return strings.Contains(string(got), text)
}

func (v *victim) stop() {
	if v.proc != nil {
		v.proc.Kill()
		v.proc.Wait()
	}
	if v.tty != nil {
		v.tty.Close()
		v.ptm.Close()
	}
	os.Remove(v.file)
}

// openPty opens a new pseudo-terminal pair.
func openPty() (master, slave *os.File, err error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		return nil, nil, err
	}
	fd, _, e := unix.Syscall(unix.SYS_IOCTL, m.Fd(), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if e != 0 {
		m.Close()
		return nil, nil, e
	}
	return m, os.NewFile(fd, "pty"), nil
}

// lockedBuffer collects stdout and stderr, which the runner writes from two
// goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 64<<10 {
		return len(p), nil
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// dnsOverTCP answers one length-prefixed DNS query on c.
func (w *world) dnsOverTCP(c net.Conn) {
	var n uint16
	if binary.Read(c, binary.BigEndian, &n) != nil {
		return
	}
	q := make([]byte, n)
	if _, err := io.ReadFull(c, q); err != nil {
		return
	}
	a := w.dnsAnswer(q)
	c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(a))), a...))
}
