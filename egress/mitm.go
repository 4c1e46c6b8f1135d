package egress

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/airlock-run/airlock/netrule"
)

// CA is a box's interception authority. It lives in memory only: its
// private key is never written anywhere, and it signs leaf certificates for
// the hosts the proxy intercepts. The box trusts it through the bundle
// CertPEM gives (Bundle adds the system's roots).
type CA struct {
	cert  *x509.Certificate
	key   *ecdsa.PrivateKey
	pem   []byte
	until time.Time

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// CAValidity is how long a box's CA, and every leaf it signs, is valid.
const CAValidity = 24 * time.Hour

// NewCA makes a fresh ECDSA P-256 authority named for box, valid from an
// hour ago (clock skew) for CAValidity.
func NewCA(box string, now time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("egress: ca key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("egress: ca serial: %w", err)
	}
	until := now.Add(CAValidity)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "airlock box " + box, Organization: []string{"airlock egress (this box only)"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              until,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("egress: ca certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("egress: ca certificate: %w", err)
	}
	return &CA{cert: cert, key: key, until: until, leaves: map[string]*tls.Certificate{},
		pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// CertPEM is the CA's certificate, PEM-encoded: public, safe to write.
func (ca *CA) CertPEM() []byte { return slices.Clone(ca.pem) }

// systemBundles are where distributions keep their trusted roots.
var systemBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// Bundle is the system's roots followed by the CA's certificate: the file
// the box's programs are pointed at, so they trust the intercepted hosts
// and every other host as before.
func (ca *CA) Bundle() []byte {
	var out []byte
	for _, f := range systemBundles {
		if b, err := os.ReadFile(f); err == nil {
			out = append(out, b...)
			if len(out) > 0 && out[len(out)-1] != '\n' {
				out = append(out, '\n')
			}
			break
		}
	}
	return append(out, ca.pem...)
}

// leaf returns the certificate the proxy shows the box for host.
func (ca *CA) leaf(host string) (*tls.Certificate, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c, ok := ca.leaves[host]; ok {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    ca.cert.NotBefore,
		NotAfter:     ca.until,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if a, err := netip.ParseAddr(host); err == nil {
		tmpl.IPAddresses = []net.IP{a.AsSlice()}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: key}
	ca.leaves[host] = c
	return c, nil
}

// intercepts reports whether connections to host:port are terminated by
// the proxy: a host with a bound secret (on every port, so no opaque
// tunnel to it can exist) or with request rules.
func (p *Proxy) intercepts(host string, port int) bool {
	for _, s := range p.o.Secrets {
		if s.boundTo(host) {
			return true
		}
	}
	return len(p.rulesFor(host, port)) > 0
}

// boxConn reads the box's side through the client's buffer, so bytes the
// box sent right after CONNECT (its TLS hello) are not lost.
type boxConn struct {
	net.Conn
	r io.Reader
}

func (b *boxConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// intercept terminates the box's TLS with a leaf for d.host, opens TLS to
// the upstream verified against the system's roots (UpstreamRoots in
// tests), and relays requests one at a time, each decided on its own. It
// returns the bytes moved and why it ended early, if it did.
func (p *Proxy) intercept(cl *client, d *decision, start time.Time) (upN, downN int64, errText string) {
	if p.o.CA == nil {
		return 0, 0, "no interception authority is configured"
	}
	cert, err := p.o.CA.leaf(d.host)
	if err != nil {
		return 0, 0, "cannot issue a certificate: " + err.Error()
	}
	c := cl.Conn
	c.SetDeadline(p.o.Now().Add(p.o.HeaderTimeout))
	srv := tls.Server(&boxConn{Conn: c, r: cl.br}, &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(hi *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if hi.ServerName != "" {
				if sni, err := netrule.Canonical(hi.ServerName); err != nil || sni != d.host {
					return nil, errors.New("the TLS server name differs from the CONNECT target")
				}
			}
			return cert, nil
		},
	})
	if err := srv.HandshakeContext(p.ctx); err != nil {
		p.audit(Event{Proto: "https", Host: d.host, Port: d.port, Addr: d.addr, Rule: d.rule, Start: start,
			Reason: "the box's TLS handshake failed", Error: err.Error()})
		return 0, 0, "box handshake: " + err.Error()
	}
	upTLS := tls.Client(d.up, &tls.Config{ServerName: d.host, RootCAs: p.o.UpstreamRoots,
		MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}})
	d.up.SetDeadline(p.o.Now().Add(p.o.DialTimeout))
	if err := upTLS.HandshakeContext(p.ctx); err != nil {
		writeStatus(srv, http.StatusBadGateway, "airlock egress: "+d.hostPort()+" TLS to the host failed verification or did not complete")
		p.audit(Event{Proto: "https", Host: d.host, Port: d.port, Addr: d.addr, Rule: d.rule, Start: start,
			Reason: "the upstream TLS handshake failed", Error: err.Error()})
		return 0, 0, "upstream handshake: " + err.Error()
	}
	d.up.SetDeadline(time.Time{})
	cr := &countReader{r: srv}
	br := bufio.NewReaderSize(cr, 4096)
	cw := &countWriter{w: srv}
	ubr := bufio.NewReader(upTLS)
	for first := true; ; first = false {
		if !first {
			c.SetDeadline(p.o.Now().Add(p.o.IdleTimeout))
			if _, err := br.Peek(1); err != nil {
				break
			}
		}
		c.SetDeadline(p.o.Now().Add(p.o.HeaderTimeout))
		h, err := readHead(br, p.o.MaxHeaderBytes)
		if err != nil {
			if err != errNoRequest && !errors.Is(err, io.ErrUnexpectedEOF) && !isNetErr(err) {
				writeStatus(cw, http.StatusBadRequest, "airlock egress: bad request: "+err.Error())
			}
			break
		}
		c.SetDeadline(time.Time{})
		if !p.relayOne(cw, br, h, upTLS, ubr, d) {
			break
		}
	}
	srv.Close()
	return cr.n, cw.n, ""
}

// relayOne decides one request read from an intercepted connection and,
// when allowed, sends it upstream with the bound secrets written in and
// relays the answer. It reports whether the connection may go on.
func (p *Proxy) relayOne(w io.Writer, br *bufio.Reader, h *head, up net.Conn, ubr *bufio.Reader, d *decision) bool {
	start := p.o.Now()
	ev := Event{Proto: "https", Host: d.host, Port: d.port, Addr: d.addr, Rule: d.rule, Method: h.method, Start: start}
	refuse := func(code int, why string) bool {
		ev.Reason = why
		p.audit(ev)
		writeStatus(w, code, "blocked by airlock egress policy: "+h.method+" https://"+d.hostPort()+ev.Path+" "+why)
		return false
	}
	if !strings.HasPrefix(h.target, "/") || strings.HasPrefix(h.target, "//") {
		// A path that begins with "//" is written upstream in absolute
		// form ("https://other/..."), which names another host.
		return refuse(http.StatusBadRequest, "only origin-form requests (a path not beginning with //) are accepted inside an intercepted connection")
	}
	rawPath, rawQuery, _ := strings.Cut(h.target, "?")
	ev.Path = truncate(rawPath, 256)
	if why := p.checkHost(h, d); why != "" {
		return refuse(http.StatusForbidden, why)
	}
	if why := overrideHeader(h.header); why != "" {
		return refuse(http.StatusForbidden, why)
	}
	if ok, rule, why := checkRules(p.rulesFor(d.host, d.port), h.method, rawPath); !ok {
		ev.Rule = rule
		return refuse(http.StatusForbidden, why)
	} else if rule != "" {
		ev.Rule = rule
	}
	hdr := h.header.Clone()
	stripHop(hdr)
	hdr.Del("Expect")
	hdr.Del("Content-Length")
	hdr.Del("Host")
	// A SigV4 binding re-signs the box's Authorization below; its key ID
	// placeholder is no leak there.
	pair := sigv4For(p.o.Secrets, d.host)
	signed := pair != nil && len(h.header.Values("Authorization")) > 0
	if signed {
		hdr.Del("Authorization")
	}
	boxHdr := hdr.Clone()
	query, used, l := bindSecrets(p.o.Secrets, d.host, true, rawPath, rawQuery, hdr)
	if l != nil {
		return refuse(http.StatusForbidden, l.reason())
	}
	masks := append(slices.Clone(p.o.Secrets), echoMasks(boxHdr, hdr, rawQuery, query)...)
	ev.Secrets = used
	var inUse []Secret
	for _, s := range p.o.Secrets {
		if s.boundTo(d.host) {
			inUse = append(inUse, s)
		}
	}
	if len(inUse) > 0 && !(signed && strings.Contains(h.header.Get("Authorization"), "accept-encoding")) {
		// A compressed answer would hide an echoed credential from
		// unbindReader. (A header the box signed is kept as it is.)
		hdr.Set("Accept-Encoding", "identity")
	}
	if _, ok := hdr["User-Agent"]; !ok {
		hdr["User-Agent"] = nil
	}
	authority := d.host
	if strings.Contains(authority, ":") {
		authority = "[" + authority + "]"
	}
	if d.port != 443 {
		authority = net.JoinHostPort(d.host, strconv.Itoa(d.port))
	}
	req := &http.Request{
		Method: h.method, URL: &url.URL{Scheme: "https", Host: authority, Opaque: rawPath, RawQuery: query},
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: hdr, Host: authority,
	}
	body, err := p.scannedBody(w, br, h)
	if err != nil {
		return refuse(http.StatusForbidden, bodyWhy(err))
	}
	if signed {
		if body, err = p.resign(pair, h, hdr, body, rawPath, rawQuery, query, authority); err != nil {
			return refuse(http.StatusForbidden, bodyWhy(err))
		}
		ev.Secrets = append(ev.Secrets, pair.keyID.Name, pair.secret.Name)
	}
	if body != nil {
		req.Body, req.ContentLength = io.NopCloser(body), h.contentLength
		if h.chunked {
			req.ContentLength = -1
		}
	}
	werr := req.Write(up)
	if werr == nil && h.chunked {
		werr = discardTrailer(br, p.o.MaxHeaderBytes)
	}
	if werr != nil {
		var pe *errPlaceholderInBody
		if errors.As(werr, &pe) {
			up.Close() // the request must never complete upstream
			return refuse(http.StatusForbidden, pe.Error())
		}
		ev.Allow, ev.Error = true, werr.Error()
		p.audit(ev)
		writeStatus(w, http.StatusBadGateway, "airlock egress: "+d.hostPort()+" request failed")
		return false
	}
	var resp *http.Response
	for i := 0; ; i++ {
		resp, err = http.ReadResponse(ubr, req)
		if err != nil || resp.StatusCode >= 200 || i > 8 {
			break
		}
		resp.Body.Close()
	}
	ev.Allow = true
	if err != nil || resp.StatusCode < 200 || resp.StatusCode == http.StatusSwitchingProtocols {
		ev.Error = "no valid response"
		p.audit(ev)
		writeStatus(w, http.StatusBadGateway, "airlock egress: "+d.hostPort()+" sent no valid response")
		return false
	}
	defer resp.Body.Close()
	if ce := resp.Header.Get("Content-Encoding"); len(used) > 0 && hdr.Get("Accept-Encoding") == "identity" &&
		ce != "" && !strings.EqualFold(ce, "identity") && h.method != http.MethodHead {
		// Asked for none, the host encoded its answer anyway: an echoed
		// credential inside it could not be masked.
		ev.Error = "the host answered with Content-Encoding " + truncate(ce, 40) + " after being asked for none"
		p.audit(ev)
		writeStatus(w, http.StatusBadGateway, "airlock egress: "+d.hostPort()+" answered a request carrying a credential with an encoded body, which the proxy cannot search; it was asked for none")
		return false
	}
	stripHop(resp.Header)
	// Trailers are not relayed: a second header block, filled in after
	// the body, that the masks would not see.
	resp.Trailer = nil
	unbindHeader(resp.Header, masks)
	if len(masks) > 0 {
		resp.Body = io.NopCloser(newUnbindReader(resp.Body, masks))
	}
	framed := resp.ContentLength >= 0 || len(resp.TransferEncoding) > 0 || h.method == http.MethodHead ||
		resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified
	keep := framed && !h.close && !resp.Close
	resp.Close = !keep
	if h.proto == "HTTP/1.0" && len(resp.TransferEncoding) > 0 {
		resp.TransferEncoding, resp.ContentLength, resp.Close, keep = nil, -1, true, false
	}
	dw := &countWriter{w: w}
	err = resp.Write(dw)
	ev.BytesDown = dw.n
	if err != nil {
		ev.Error = err.Error()
		keep = false
	}
	if p.audit(ev) != nil {
		keep = false
	}
	return keep
}

// checkHost refuses a request whose Host header names another host than
// the one the connection was decided for: behind a shared front end it
// would reach a host the policy never saw.
func (p *Proxy) checkHost(h *head, d *decision) string {
	hs := h.header.Values("Host")
	if len(hs) != 1 {
		return "an intercepted request needs exactly one Host header"
	}
	name, portText := hs[0], ""
	if hp, pt, err := net.SplitHostPort(hs[0]); err == nil {
		name, portText = hp, pt
	}
	got, err := netrule.Canonical(strings.TrimSuffix(strings.TrimPrefix(name, "["), "]"))
	port := 443
	if portText != "" {
		if port, err = strconv.Atoi(portText); err != nil {
			return "the Host header's port is malformed"
		}
	}
	if err != nil || got != d.host || port != d.port {
		return "the Host header " + strconv.Quote(truncate(hs[0], 80)) + " differs from the connection's target"
	}
	return ""
}

// scannedBody returns the request's body with every placeholder search in
// place: the first MaxBodyScan bytes are read and searched now; the rest is
// searched as it is sent. nil when the request has no body.
// A client that asked to be told to go on (Expect: 100-continue) is told
// now, before its body is read.
func (p *Proxy) scannedBody(w io.Writer, br *bufio.Reader, h *head) (io.Reader, error) {
	if (h.chunked || h.contentLength > 0) && strings.EqualFold(h.header.Get("Expect"), "100-continue") {
		io.WriteString(w, "HTTP/1.1 100 Continue\r\n\r\n")
	}
	var r io.Reader
	switch {
	case h.chunked:
		r = httputil.NewChunkedReader(br)
	case h.contentLength > 0:
		r = io.LimitReader(br, h.contentLength)
	default:
		return nil, nil
	}
	if len(p.o.Secrets) == 0 {
		return r, nil
	}
	if ce := h.header.Values("Content-Encoding"); len(ce) > 0 {
		return scanEncoded(r, ce, p.o.Secrets)
	}
	sr := newScanReader(r, p.o.Secrets)
	pre, err := io.ReadAll(io.LimitReader(sr, MaxBodyScan))
	if err != nil {
		return nil, err
	}
	return io.MultiReader(strings.NewReader(string(pre)), sr), nil
}

// resign writes the SigV4 signature made with the real key into hdr (see
// resignSigV4), reading the body whole first when its hash is not in the
// box's headers. It returns the body to send.
func (p *Proxy) resign(pair *sigv4Pair, h *head, hdr http.Header, body io.Reader, rawPath, boxQuery, upQuery, authority string) (io.Reader, error) {
	hash, need, why := payloadHash(h.header, nil)
	if need {
		all := []byte{}
		if body != nil {
			b, err := io.ReadAll(io.LimitReader(body, MaxBodyScan+1))
			if err != nil {
				return nil, err
			}
			if len(b) > MaxBodyScan {
				return nil, signRefusal("a SigV4 request body over 1 MiB needs its SHA-256 in x-amz-content-sha256 to be signed again")
			}
			all = b
		}
		hash, _, why = payloadHash(h.header, all)
		body = bytes.NewReader(all)
	}
	if why == "" {
		why = resignSigV4(pair, h.method, rawPath, boxQuery, upQuery, h.header, hdr, authority, hash)
	}
	if why != "" {
		return nil, signRefusal(why)
	}
	return body, nil
}

// signRefusal is an error whose message is the reason shown to the box.
type signRefusal string

func (r signRefusal) Error() string { return string(r) }

func bodyWhy(err error) string {
	var pe *errPlaceholderInBody
	if errors.As(err, &pe) {
		return pe.Error()
	}
	var r signRefusal
	if errors.As(err, &r) {
		return string(r)
	}
	var e encodedRefusal
	if errors.As(err, &e) {
		return string(e)
	}
	return "the request body could not be read"
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
