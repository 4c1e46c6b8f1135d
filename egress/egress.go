// Package egress is airlock's allowlist proxy: the only way out of a tier-1
// box. It runs on the host, outside the box, and serves one box on one Unix
// socket (see Listen) that is bound into the box, where the in-box forwarder
// (egress/forward) hands it each connection made to the box's loopback proxy
// ports. Each connection opens with the box's token (package egress/wire),
// then speaks HTTP (CONNECT and absolute-form requests) or SOCKS5 (CONNECT
// only), on the socket itself or on the box client's socket passed with the
// token.
//
// Every destination is decided before anything is sent to it:
//
//  1. the host is made canonical (netrule.Canonical); a host that is not one
//     is refused;
//  2. the caller's Check decides the canonical host and port (the daemon wires
//     the policy in; this package does not import policy);
//  3. only then is a name resolved, by the proxy itself, so a name the policy
//     refuses is never even looked up;
//  4. each address is checked: deny entries first, then an address that is
//     not globally routable (loopback, private, link-local, metadata, this
//     host's own, …) is refused unless AllowAddr names it as an IP or CIDR;
//  5. the proxy connects to exactly the address it checked; nothing is
//     resolved twice.
//
// A refusal is a 403 whose body is one line the agent can read, "blocked by
// airlock egress policy: <host:port> <why>" (SOCKS5 has no room for text and
// answers "connection not allowed by ruleset"). Every decision is audited
// (see Event), and an allowed connection whose admission cannot be recorded
// is refused. The daemon, the runner's host half and tests import this
// package.
package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/airlock-run/airlock/egress/wire"
	"github.com/airlock-run/airlock/netrule"
)

// Verdict is what Check says about one destination.
type Verdict struct {
	Allow bool
	// Rule names what decided, for the audit record ("net.allow[0]").
	Rule string
	// Reason is one sentence safe to show the agent; "" on a refusal becomes
	// "not in the network allowlist".
	Reason string
}

// Resolver looks names up; *net.Resolver satisfies it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Event is the audit record of one connection decision. A refused one is
// recorded as soon as it is refused. An allowed one is recorded twice: when
// it is admitted (Opened, after the proxy has connected to the address and
// before a byte moves either way), and when its connection ends, with the
// bytes moved and the duration.
type Event struct {
	Box string `json:"box,omitempty"`
	// Proto is how the box asked: "connect" (HTTP CONNECT), "http"
	// (absolute-form request), "socks5", or "auth" (a connection without the
	// box's token, refused before any request was read).
	Proto string `json:"proto"`
	// Host is the canonical host asked for, or the raw one, quoted, if it was
	// not a host at all.
	Host string `json:"host,omitempty"`
	Port int    `json:"port,omitempty"`
	// Addr is the address connected to, or the one refused; invalid when the
	// decision came before resolution.
	Addr netip.AddrPort `json:"addr,omitzero"`
	// Allow is the verdict.
	Allow bool `json:"allow"`
	// Opened marks the record of an allowed connection being admitted; its
	// closing record (Opened false) follows when it ends.
	Opened bool   `json:"opened,omitempty"`
	Rule   string `json:"rule,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Method and Path (without the query) describe one request on an
	// intercepted connection (Proto "https") or a plain HTTP one.
	Method string `json:"method,omitempty"`
	Path   string `json:"path,omitempty"`
	// Model is the model a model-proxy request (Proto "model") named, and
	// Usage the token counts its answer reported.
	Model string           `json:"model,omitempty"`
	Usage map[string]int64 `json:"usage,omitempty"`
	// Secrets names the secrets written into the request; never a value.
	Secrets []string `json:"secrets,omitempty"`
	// Error is set when an allowed destination could not be reached.
	Error string `json:"error,omitempty"`
	// BytesUp went from the box to the destination, BytesDown back.
	BytesUp   int64         `json:"bytes_up"`
	BytesDown int64         `json:"bytes_down"`
	Start     time.Time     `json:"start"`
	Duration  time.Duration `json:"duration_ns"`
}

// Options configure a Proxy. Every nil field has a documented meaning, and
// none of them opens anything.
type Options struct {
	// Box names the box in audit events and logs.
	Box string
	// Token is the box's secret (wire.NewToken); required.
	Token string
	// Check decides a canonical host and port. nil refuses everything.
	Check func(ctx context.Context, host string, port int) Verdict
	// AllowAddr reports whether an IP or CIDR entry names addr at port, which
	// is the only way a non-global address (loopback, private, metadata, this
	// host's own) is reached. It must never admit an address because a host
	// name entry resolved to it. nil admits no such address.
	AllowAddr func(addr netip.Addr, port int) (bool, string)
	// DenyAddr reports whether a deny entry names addr at port; it is asked
	// for every address before connecting, so a deny CIDR holds against
	// names that resolve into it. nil denies no address by itself.
	DenyAddr func(addr netip.Addr, port int) (bool, string)
	// Local reports whether addr is one of this host's own addresses. nil
	// asks the host's interfaces, at most once a second.
	Local func(addr netip.Addr) bool
	// Resolver resolves allowed names. nil uses the system's resolver.
	Resolver Resolver
	// Audit receives every Event (see Event for when). An error fails
	// closed: an allowed connection whose admission cannot be recorded is
	// refused (503, SOCKS5 general failure) and closed before a byte moves
	// either way; an HTTP connection whose request cannot be recorded as
	// ended carries no further request. nil records nothing.
	Audit func(Event) error
	// Log receives diagnostics. nil discards them.
	Log *slog.Logger
	// Now is the clock. nil is time.Now.
	Now func() time.Time
	// HeaderTimeout bounds the preamble and each request head or SOCKS
	// handshake, so a slow client cannot hold a connection without asking
	// for anything. 0 means 10 s.
	HeaderTimeout time.Duration
	// IdleTimeout bounds the wait for the next request on a kept-alive HTTP
	// connection. 0 means 60 s. Tunnels have no idle limit: a quiet SSH
	// session is legitimate.
	IdleTimeout time.Duration
	// DialTimeout bounds each connection attempt. 0 means 10 s.
	DialTimeout time.Duration
	// MaxHeaderBytes bounds a request head. 0 means 32 KiB.
	MaxHeaderBytes int
	// MaxConns bounds the box's conversations (tunnels, HTTP connections)
	// open at once; more are closed on arrival. 0 means 4096.
	MaxConns int

	// Secrets are the credentials the box holds only as placeholders (see
	// Secret). A host a secret is bound to is always intercepted, on
	// every port; a request that carries a placeholder anywhere but its
	// binding's place toward its hosts is refused. nil binds none.
	Secrets []Secret
	// Rules limit the requests to some hosts by method and path; such a
	// host is intercepted (HTTPS) or read (plain HTTP). nil limits none.
	Rules []RequestRule
	// CA signs the certificates intercepted connections show the box;
	// required when Secrets or Rules are given.
	CA *CA
	// Models, when set, serves the model proxy (see Models) under
	// ModelPrefix on the HTTP port. nil serves none.
	Models *Models
	// UpstreamRoots verify intercepted hosts' certificates. nil is the
	// system's roots, which production always uses; tests pass a test
	// root. Verification is never turned off.
	UpstreamRoots *x509.CertPool

	// global classifies addresses; nil is netrule.Global. Tests replace it
	// to treat an address in a network namespace they made as a public one.
	global func(netip.Addr) bool
}

// Proxy serves one box. It is safe for concurrent use.
type Proxy struct {
	o      Options
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	lns    map[net.Listener]struct{}
	conns  map[net.Conn]struct{} // everything Close must end
	open   int                   // conversations admitted by track
	wg     sync.WaitGroup
}

// New returns a Proxy for o. It does not listen; see Serve and Listen.
func New(o Options) (*Proxy, error) {
	if !wire.ValidToken(o.Token) {
		return nil, errors.New("egress: a valid box token is required (wire.NewToken)")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = 10 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 60 * time.Second
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = 32 << 10
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 4096
	}
	if (len(o.Secrets) > 0 || len(o.Rules) > 0) && o.CA == nil {
		return nil, errors.New("egress: secrets and request rules need an interception CA (NewCA)")
	}
	for _, s := range o.Secrets {
		if s.Name == "" || len(s.Placeholder) != len(s.Value) || s.Placeholder == s.Value || len(s.Hosts) == 0 {
			return nil, fmt.Errorf("egress: secret %q: needs a name, hosts and a placeholder of its value's length (Phantom)", s.Name)
		}
	}
	if o.Resolver == nil {
		o.Resolver = &net.Resolver{}
	}
	if o.Local == nil {
		o.Local = (&localAddrs{now: o.Now}).has
	}
	if o.global == nil {
		o.global = netrule.Global
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("box", o.Box)
	ctx, cancel := context.WithCancel(context.Background())
	return &Proxy{
		o: o, log: log, ctx: ctx, cancel: cancel,
		lns: map[net.Listener]struct{}{}, conns: map[net.Conn]struct{}{},
	}, nil
}

// localAddrs answers whether an address is assigned to one of this host's
// interfaces. A host with a public address must not let a box reach its own
// services through it. Reading the interfaces costs a netlink dump (about
// 100 µs), so the answer is kept for localTTL; an address added since is
// caught at most that much later. An error reading them counts as "yes".
type localAddrs struct {
	now   func() time.Time
	mu    sync.Mutex
	at    time.Time
	addrs map[netip.Addr]bool
	err   bool
}

const localTTL = time.Second

func (l *localAddrs) has(a netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now := l.now(); l.addrs == nil || now.Sub(l.at) > localTTL || now.Before(l.at) {
		l.at, l.addrs, l.err = now, map[netip.Addr]bool{}, false
		ias, err := net.InterfaceAddrs()
		if err != nil {
			l.err = true
		}
		for _, ia := range ias {
			if n, ok := ia.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP); ok {
					l.addrs[ip.Unmap()] = true
				}
			}
		}
	}
	return l.err || l.addrs[a.Unmap().WithZone("")]
}

// ErrClosed is returned by Serve after Close.
var ErrClosed = errors.New("egress: proxy closed")

// Serve accepts connections on ln until ln fails or the Proxy is closed, and
// serves each. It returns ErrClosed after Close.
func (p *Proxy) Serve(ln net.Listener) error { return p.serveOn(ln, p.handle) }

// ServeBox accepts, on one of the box's own forwarder listeners (a loopback
// port of the box's network namespace that the box handed out to airlock,
// egress/forward's Host), clients speaking mode's protocol (wire.ModeHTTP or
// wire.ModeSOCKS) from their first byte, and serves each as a client handed
// over on the socket would be, with the same decisions and records: the box
// reaches the proxy through the same port, with one hop fewer. No token is
// asked: the listener is the box's by construction, and the socket is not
// there to be reached. It returns ErrClosed after Close.
func (p *Proxy) ServeBox(ln net.Listener, mode string) error {
	if mode != wire.ModeHTTP && mode != wire.ModeSOCKS {
		ln.Close()
		return fmt.Errorf("egress: no box listener of mode %q", mode)
	}
	return p.serveOn(ln, func(c net.Conn) { p.handleBox(c, mode) })
}

// serveOn is Serve's accept loop, with handle for each connection.
func (p *Proxy) serveOn(ln net.Listener, handle func(net.Conn)) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		ln.Close()
		return ErrClosed
	}
	p.lns[ln] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.lns, ln)
		p.mu.Unlock()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if p.isClosed() {
				return ErrClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("egress: accept: %w", err)
		}
		if !p.track(c) {
			p.log.Warn("egress: connection refused: too many open connections", "max", p.o.MaxConns)
			c.Close()
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrackBox(c)
			handle(c)
		}()
	}
}

func (p *Proxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// track registers a connection from the box so Close can end it; it fails
// when closed or when MaxConns conversations are open.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.open >= p.o.MaxConns {
		return false
	}
	p.open++
	p.conns[c] = struct{}{}
	return true
}

// untrackBox ends a conversation that track admitted.
func (p *Proxy) untrackBox(c net.Conn) {
	p.untrack(c)
	p.mu.Lock()
	p.open--
	p.mu.Unlock()
}

// trackUp registers a further connection of a conversation (upstream, or
// the box client's passed socket); it does not count toward MaxConns.
func (p *Proxy) trackUp(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// Close stops every listener given to Serve, ends every connection and
// waits until all of the Proxy's goroutines have returned.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for ln := range p.lns {
		ln.Close()
	}
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
	return nil
}

// handle reads the preamble and hands the connection, or the box client's
// socket it carries, to its protocol.
func (p *Proxy) handle(c net.Conn) {
	start := p.o.Now()
	c.SetDeadline(start.Add(p.o.HeaderTimeout))
	line, rest, fds, err := readPreamble(c)
	defer func() {
		for _, fd := range fds {
			syscall.Close(fd)
		}
	}()
	if err != nil {
		return // a timeout, a hang-up or garbage before any preamble
	}
	mode, err := wire.ParsePreamble(line, p.o.Token)
	if err != nil {
		p.audit(Event{Proto: "auth", Reason: "connection without the box's egress token", Start: start})
		if errors.Is(err, wire.ErrBadToken) && len(fds) == 0 {
			// Say why, in case it is a misconfigured forwarder.
			io.WriteString(c, "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		}
		return
	}
	var cl *client
	switch mode {
	case wire.ModePing:
		if len(fds) == 0 {
			// The forwarder points the box's model clients at the model
			// proxy only when there is one.
			if p.o.Models != nil {
				io.WriteString(c, "ok models\n")
			} else {
				io.WriteString(c, "ok\n")
			}
		}
		return
	case wire.ModeHTTP, wire.ModeSOCKS:
		if len(fds) != 0 {
			return
		}
		cl = newClient(c, rest)
	case wire.ModeHTTPFD, wire.ModeSOCKSFD:
		if len(fds) != 1 || len(rest) != 0 {
			return
		}
		conn, err := fdConn(fds[0])
		fds = nil // fdConn closed it
		if err != nil {
			p.log.Warn("egress: refused a passed descriptor", "err", err)
			return
		}
		if !p.trackUp(conn) {
			conn.Close()
			return
		}
		defer p.untrack(conn)
		c.Close() // the socket connection has done its work
		conn.SetDeadline(start.Add(p.o.HeaderTimeout))
		cl = newClient(conn, nil)
	}
	switch mode {
	case wire.ModeHTTP, wire.ModeHTTPFD:
		p.serveHTTP(cl)
	default:
		p.serveSOCKS(cl)
	}
	linger(cl.Conn)
}

// handleBox serves c, accepted on a box's listener (ServeBox), as mode's
// protocol: what handle does for a client socket passed with mode's "-fd"
// preamble.
func (p *Proxy) handleBox(c net.Conn, mode string) {
	c.SetDeadline(p.o.Now().Add(p.o.HeaderTimeout))
	cl := newClient(c, nil)
	if mode == wire.ModeHTTP {
		p.serveHTTP(cl)
	} else {
		p.serveSOCKS(cl)
	}
	linger(cl.Conn)
}

// linger ends the box's side gently: closing a socket with unread input
// makes the kernel send a reset, which can destroy the 400 just written
// before the client reads it. So the write side is shut first and input is
// drained for a moment. A connection already closed returns at once.
func linger(c net.Conn) {
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	c.SetReadDeadline(time.Now().Add(lingerTime))
	io.CopyN(io.Discard, c, lingerBytes)
}

const (
	lingerTime  = 500 * time.Millisecond
	lingerBytes = 1 << 20
)

// maxFDs is the most descriptors read with a preamble; more are cut off by
// the kernel (MSG_CTRUNC) and closed there.
const maxFDs = 4

// readPreamble reads the opening line, any descriptors sent with it, and
// whatever bytes came after the line in the same read.
func readPreamble(c net.Conn) (line, rest []byte, fds []int, err error) {
	buf := make([]byte, wire.MaxLine+1)
	var n int
	if uc, ok := c.(*net.UnixConn); ok {
		oob := make([]byte, syscall.CmsgSpace(4*maxFDs))
		var oobn int
		n, oobn, _, _, err = uc.ReadMsgUnix(buf, oob)
		if oobn > 0 {
			msgs, perr := syscall.ParseSocketControlMessage(oob[:oobn])
			for _, m := range msgs {
				if got, e := syscall.ParseUnixRights(&m); e == nil {
					fds = append(fds, got...)
				}
			}
			if perr != nil && err == nil {
				err = perr
			}
		}
	} else {
		n, err = c.Read(buf)
	}
	for err == nil && n < len(buf) && bytes.IndexByte(buf[:n], '\n') < 0 {
		var m int
		m, err = c.Read(buf[n:])
		n += m
	}
	i := bytes.IndexByte(buf[:n], '\n')
	if i < 0 {
		if err == nil {
			err = wire.ErrBadPreamble
		}
		return nil, nil, fds, err
	}
	return buf[:i], buf[i+1 : n], fds, nil
}

// fdConn turns a descriptor passed by the forwarder into the box client's
// connection. It must be a connected TCP socket: anything else (a file, a
// listening socket, a Unix or UDP socket) is refused. fd is closed either way.
func fdConn(fd int) (*net.TCPConn, error) {
	f := os.NewFile(uintptr(fd), "box-client")
	defer f.Close()
	nc, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("passed descriptor is not a socket: %w", err)
	}
	tc, ok := nc.(*net.TCPConn)
	if !ok || tc.RemoteAddr() == nil {
		nc.Close()
		return nil, errors.New("passed descriptor is not a connected TCP socket")
	}
	return tc, nil
}

// client is the box's side of one conversation.
type client struct {
	net.Conn
	br  *bufio.Reader
	pre *prefixReader
}

func newClient(c net.Conn, rest []byte) *client {
	pre := &prefixReader{b: bytes.Clone(rest), r: c}
	return &client{Conn: c, br: bufio.NewReaderSize(pre, 4096), pre: pre}
}

// pending returns the bytes read from the client but not yet consumed.
func (c *client) pending() []byte {
	b, _ := c.br.Peek(c.br.Buffered())
	return append(bytes.Clone(b), c.pre.b...)
}

// prefixReader yields b, then r.
type prefixReader struct {
	b []byte
	r io.Reader
}

func (p *prefixReader) Read(b []byte) (int, error) {
	if len(p.b) > 0 {
		n := copy(b, p.b)
		p.b = p.b[n:]
		return n, nil
	}
	return p.r.Read(b)
}

// audit records e with the Audit hook and logs it. The hook's error is
// returned so the caller can fail closed.
func (p *Proxy) audit(e Event) error {
	e.Box = p.o.Box
	if e.Start.IsZero() {
		e.Start = p.o.Now()
	}
	var err error
	if p.o.Audit != nil {
		err = p.o.Audit(e)
	}
	lvl := slog.LevelInfo
	if !e.Allow {
		lvl = slog.LevelWarn
	}
	p.log.Log(p.ctx, lvl, "egress decision", "proto", e.Proto, "host", e.Host, "port", e.Port,
		"addr", e.Addr, "allow", e.Allow, "opened", e.Opened, "rule", e.Rule, "reason", e.Reason, "error", e.Error,
		"up", e.BytesUp, "down", e.BytesDown, "duration", e.Duration)
	if err != nil {
		p.log.Error("egress: the audit record could not be written; the connection is refused", "proto", e.Proto,
			"host", e.Host, "port", e.Port, "opened", e.Opened, "err", err)
	}
	return err
}

// admit records the admission of the allowed decision d before any byte
// moves. When the record cannot be written, d becomes unrecorded: its
// upstream connection is closed, and the caller refuses it like any other.
func (p *Proxy) admit(d *decision, proto string, start time.Time) {
	ev := d.event(proto, start)
	ev.Opened = true
	if err := p.audit(ev); err != nil {
		p.untrack(d.up)
		d.up = nil
		d.outcome, d.reason, d.err = unrecorded, "cannot be recorded in the audit log", err.Error()
	}
}

// outcome is how a decision ended.
type outcome uint8

const (
	allowed  outcome = iota
	refused          // by policy or by address class: 403
	failed           // allowed but unreachable (no such name, refused, timeout): 502
	badInput         // not a host at all: 400
	// unrecorded was allowed, but its admission could not be recorded:
	// 503, and nothing moves.
	unrecorded
)

// decision is the result of deciding and connecting to one destination.
type decision struct {
	outcome outcome
	host    string // canonical, or quoted raw when not a host
	port    int
	addr    netip.AddrPort
	rule    string
	reason  string // for the agent
	err     string // dial or resolver detail, for the audit record
	up      net.Conn
}

// hostPort renders the destination for the refusal line.
func (d *decision) hostPort() string {
	return net.JoinHostPort(d.host, strconv.Itoa(d.port))
}

// event starts the audit record of d.
func (d *decision) event(proto string, start time.Time) Event {
	return Event{Proto: proto, Host: d.host, Port: d.port, Addr: d.addr, Allow: d.outcome == allowed,
		Rule: d.rule, Reason: d.reason, Error: d.err, Start: start}
}

// connect decides rawHost:port and, when allowed, connects to the first
// acceptable address, returning the connection in d.up.
func (p *Proxy) connect(ctx context.Context, rawHost string, port int) decision {
	host, err := netrule.Canonical(rawHost)
	if err != nil {
		q := strconv.QuoteToASCII(rawHost)
		if len(q) > 80 {
			q = q[:77] + "..."
		}
		return decision{outcome: badInput, host: q, port: port, reason: "not a valid host name (" + err.Error() + ")"}
	}
	d := decision{host: host, port: port}
	if port < 1 || port > 65535 {
		d.outcome, d.reason = badInput, "port out of range"
		return d
	}
	var v Verdict
	if p.o.Check == nil {
		v = Verdict{Rule: "default", Reason: "no network access is configured for this box"}
	} else {
		v = p.o.Check(ctx, host, port)
	}
	d.rule = v.Rule
	if !v.Allow {
		d.outcome, d.reason = refused, v.Reason
		if d.reason == "" {
			d.reason = "not in the network allowlist"
		}
		return d
	}
	p.dial(ctx, &d)
	return d
}

// dial resolves and connects to an allowed d, checking every address;
// it sets d's outcome.
func (p *Proxy) dial(ctx context.Context, d *decision) {
	host, port := d.host, d.port
	// Only an allowed name is ever resolved.
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		rctx, cancel := context.WithTimeout(ctx, p.o.DialTimeout)
		addrs, err = p.o.Resolver.LookupNetIP(rctx, "ip", host)
		cancel()
		if err != nil || len(addrs) == 0 {
			d.outcome, d.reason = failed, "the name does not resolve"
			if err != nil {
				d.err = err.Error()
			}
			return
		}
	}
	var ok []netip.Addr
	for _, a := range addrs {
		a = a.Unmap().WithZone("")
		if why, rule := p.addrRefused(a, port); why != "" {
			d.addr = netip.AddrPortFrom(a, uint16(port))
			d.reason = why
			if rule != "" {
				d.rule = rule
			}
			continue
		}
		ok = append(ok, a)
	}
	if len(ok) == 0 {
		d.outcome = refused
		return
	}
	var dialErr error
	for _, a := range ok {
		d.addr = netip.AddrPortFrom(a, uint16(port))
		dctx, cancel := context.WithTimeout(ctx, p.o.DialTimeout)
		var dl net.Dialer
		c, err := dl.DialContext(dctx, "tcp", d.addr.String())
		cancel()
		if err == nil {
			if !p.trackUp(c) {
				c.Close()
				d.outcome, d.reason, d.err = failed, "the proxy is shutting down", "closed"
				return
			}
			d.outcome, d.up, d.reason = allowed, c, ""
			return
		}
		dialErr = err
	}
	d.outcome, d.reason, d.err = failed, "cannot connect", dialErr.Error()
}

// addrRefused says why a resolved or literal address may not be connected
// to, and the deny rule if one decided; "" when it may.
func (p *Proxy) addrRefused(a netip.Addr, port int) (why, rule string) {
	if p.o.DenyAddr != nil {
		if deny, rule := p.o.DenyAddr(a, port); deny {
			return "the address " + a.String() + " is denied", rule
		}
	}
	if p.o.global(a) && !p.o.Local(a) {
		return "", ""
	}
	if p.o.AllowAddr != nil {
		if ok, _ := p.o.AllowAddr(a, port); ok {
			return "", ""
		}
	}
	return "the address " + a.String() + " is not public and not allowed by address", ""
}

// pipe copies both ways between the box's connection c (with any bytes
// already buffered from it) and up until both directions end, passing a
// half-close on, and returns the bytes moved each way. An error on either
// side ends both.
func (p *Proxy) pipe(cl *client, up net.Conn) (upBytes, downBytes int64) {
	c, buffered := cl.Conn, cl.pending()
	c.SetDeadline(time.Time{})
	var once sync.Once
	stop := func() { once.Do(func() { c.Close(); up.Close() }) }
	done := make(chan int64, 1)
	go func() {
		var n int64
		if len(buffered) > 0 {
			m, err := up.Write(buffered)
			n += int64(m)
			if err != nil {
				stop()
				done <- n
				return
			}
		}
		m, err := io.Copy(up, c)
		n += m
		if err != nil {
			stop()
		} else {
			closeWrite(up)
		}
		done <- n
	}()
	downBytes, err := io.Copy(c, up)
	if err != nil {
		stop()
	} else {
		closeWrite(c)
	}
	upBytes = <-done
	stop()
	return upBytes, downBytes
}

// closeWrite passes an end of stream on without closing the other direction.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		c.Close()
	}
}
