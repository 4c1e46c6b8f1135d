package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-run/airlock/netrule"
)

// head is a request line and header, read strictly.
type head struct {
	method, target, proto string
	header                http.Header
	// contentLength is -1 when the request has no Content-Length.
	contentLength int64
	chunked       bool
	// close is set when the client asked for the connection to end after
	// this request (Connection: close, or HTTP/1.0 without keep-alive).
	close bool
}

// errHeadTooLarge is returned when a request head passes MaxHeaderBytes.
var errHeadTooLarge = errors.New("request head too large")

// errNoRequest is a clean end of the connection before a request began.
var errNoRequest = errors.New("no request")

// maxHeaderLines bounds the number of header fields.
const maxHeaderLines = 200

// readLine reads one CRLF-terminated line, charging its length to *budget.
// A bare LF is refused: two parsers that disagree about line ends are how
// requests are smuggled.
func readLine(br *bufio.Reader, budget *int) (string, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		*budget -= len(frag)
		if *budget < 0 {
			return "", errHeadTooLarge
		}
		line = append(line, frag...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF && len(line) > 0 {
				return "", io.ErrUnexpectedEOF
			}
			return "", err
		}
		break
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return "", errors.New("line not ended by CRLF")
	}
	return string(line[:len(line)-2]), nil
}

func isTokenChar(c byte) bool {
	return c < 0x80 && c > 0x20 && c != 0x7f && !strings.ContainsRune("\"(),/:;<=>?@[\\]{}", rune(c))
}

func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isTokenChar(s[i]) {
			return false
		}
	}
	return true
}

// validValue accepts visible ASCII, obs-text, space and tab; never CR, LF,
// NUL or another control byte.
func validValue(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// readHead reads a request head no larger than max bytes. It refuses
// anything that two HTTP parsers could read differently: bare LF, folded
// lines, space before the colon, more than one Content-Length, a
// Transfer-Encoding other than exactly "chunked", both framings at once, and
// a body on GET, HEAD, CONNECT or TRACE.
func readHead(br *bufio.Reader, max int) (*head, error) {
	budget := max
	if _, err := br.Peek(1); err != nil {
		return nil, errNoRequest
	}
	line, err := readLine(br, &budget)
	if err != nil {
		return nil, err
	}
	method, rest, ok1 := strings.Cut(line, " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || !validToken(method) || target == "" {
		return nil, errors.New("malformed request line")
	}
	for i := 0; i < len(target); i++ {
		if target[i] <= 0x20 || target[i] >= 0x7f {
			return nil, errors.New("request target has a space or non-ASCII byte")
		}
	}
	if proto != "HTTP/1.1" && proto != "HTTP/1.0" {
		return nil, errors.New("unsupported protocol version")
	}
	h := &head{method: method, target: target, proto: proto, header: http.Header{}, contentLength: -1}
	for n := 0; ; n++ {
		if n > maxHeaderLines {
			return nil, errHeadTooLarge
		}
		line, err := readLine(br, &budget)
		if err != nil {
			return nil, err
		}
		if line == "" {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			return nil, errors.New("folded header line")
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || !validToken(name) {
			return nil, errors.New("malformed header line")
		}
		value = strings.Trim(value, " \t")
		if !validValue(value) {
			return nil, errors.New("control character in a header value")
		}
		h.header.Add(textproto.CanonicalMIMEHeaderKey(name), value)
	}
	if err := h.framing(); err != nil {
		return nil, err
	}
	return h, nil
}

// framing reads how the body is delimited, refusing every ambiguity.
func (h *head) framing() error {
	cl := h.header.Values("Content-Length")
	te := h.header.Values("Transfer-Encoding")
	switch {
	case len(cl) > 1:
		return errors.New("more than one Content-Length")
	case len(te) > 1:
		return errors.New("more than one Transfer-Encoding")
	case len(cl) == 1 && len(te) == 1:
		return errors.New("both Content-Length and Transfer-Encoding")
	}
	if len(cl) == 1 {
		v := cl[0]
		if v == "" || len(v) > 18 || strings.TrimLeft(v, "0123456789") != "" {
			return errors.New("invalid Content-Length")
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return errors.New("invalid Content-Length")
		}
		h.contentLength = n
	}
	if len(te) == 1 {
		if !strings.EqualFold(te[0], "chunked") {
			return errors.New("unsupported Transfer-Encoding")
		}
		if h.proto == "HTTP/1.0" {
			return errors.New("chunked body in an HTTP/1.0 request")
		}
		h.chunked = true
	}
	switch h.method {
	case "GET", "HEAD", "CONNECT", "TRACE":
		if h.chunked || h.contentLength > 0 {
			return fmt.Errorf("a %s request carries a body", h.method)
		}
	}
	conn := strings.ToLower(strings.Join(h.header.Values("Connection"), ","))
	h.close = hasToken(conn, "close") || (h.proto == "HTTP/1.0" && !hasToken(conn, "keep-alive"))
	return nil
}

func hasToken(list, tok string) bool {
	for _, t := range strings.Split(list, ",") {
		if strings.TrimSpace(t) == tok {
			return true
		}
	}
	return false
}

// hopHeaders are meaningful only between one client and one proxy; they are
// removed before anything is forwarded (RFC 9110 section 7.6.1).
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// stripHop removes the hop-by-hop headers and any header the Connection
// header names.
func stripHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// refusal is the one line a refused client reads.
func refusal(d *decision) string {
	return "blocked by airlock egress policy: " + d.hostPort() + " " + d.reason
}

// writeStatus sends a short plain-text answer and asks the client to close.
func writeStatus(w io.Writer, code int, line string) {
	body := line + "\n"
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\nX-Airlock-Egress: %s\r\n\r\n%s",
		code, http.StatusText(code), len(body), statusWord(code), body)
}

func statusWord(code int) string {
	switch code {
	case http.StatusForbidden:
		return "blocked"
	case http.StatusBadRequest:
		return "bad-request"
	}
	return "error"
}

// writeDecision answers a decision that did not allow a connection.
func writeDecision(w io.Writer, d *decision) {
	switch d.outcome {
	case refused:
		writeStatus(w, http.StatusForbidden, refusal(d))
	case badInput:
		writeStatus(w, http.StatusBadRequest, refusal(d))
	case unrecorded:
		writeStatus(w, http.StatusServiceUnavailable, "airlock egress: "+d.hostPort()+" refused: the connection "+d.reason)
	default:
		writeStatus(w, http.StatusBadGateway, "airlock egress: "+d.hostPort()+" "+d.reason)
	}
}

// serveHTTP serves HTTP proxy requests on c until the client or an error
// ends the connection.
func (p *Proxy) serveHTTP(cl *client) {
	c, br := cl.Conn, cl.br
	for first := true; ; first = false {
		if !first {
			c.SetDeadline(p.o.Now().Add(p.o.IdleTimeout))
			if _, err := br.Peek(1); err != nil {
				return
			}
		}
		c.SetDeadline(p.o.Now().Add(p.o.HeaderTimeout))
		h, err := readHead(br, p.o.MaxHeaderBytes)
		if err != nil {
			if err == errNoRequest || errors.Is(err, io.ErrUnexpectedEOF) || isNetErr(err) {
				return
			}
			writeStatus(c, http.StatusBadRequest, "airlock egress: bad request: "+err.Error())
			return
		}
		if h.method == http.MethodConnect {
			p.httpConnect(cl, h)
			return
		}
		if !p.httpForward(c, br, h) {
			return
		}
	}
}

func isNetErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, net.ErrClosed)
}

// httpConnect decides a CONNECT request and, when allowed, tunnels.
func (p *Proxy) httpConnect(cl *client, h *head) {
	c := cl.Conn
	start := p.o.Now()
	host, portText, err := net.SplitHostPort(h.target)
	port, perr := strconv.Atoi(portText)
	if err != nil || perr != nil || strings.TrimLeft(portText, "0123456789") != "" || len(portText) > 5 {
		writeStatus(c, http.StatusBadRequest, "airlock egress: bad request: CONNECT needs host:port")
		return
	}
	c.SetDeadline(time.Time{})
	d := p.connect(p.ctx, host, port)
	if d.outcome == allowed {
		p.admit(&d, "connect", start)
	}
	if d.outcome != allowed {
		p.audit(d.event("connect", start))
		writeDecision(c, &d)
		return
	}
	defer p.untrack(d.up)
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		ev := d.event("connect", start)
		ev.Error = err.Error()
		p.audit(ev)
		return
	}
	p.tunnel(cl, &d, "connect", start)
}

// tunnel carries an admitted connection to its end: terminated and read
// request by request when the host is intercepted, else an opaque pipe.
// Bytes the client sent after its request (a TLS hello, say) are already
// buffered; both send them first.
func (p *Proxy) tunnel(cl *client, d *decision, proto string, start time.Time) {
	var up, down int64
	var errText string
	if p.intercepts(d.host, d.port) {
		up, down, errText = p.intercept(cl, d, start)
	} else {
		up, down = p.pipe(cl, d.up)
	}
	ev := d.event(proto, start)
	ev.BytesUp, ev.BytesDown, ev.Duration, ev.Error = up, down, p.o.Now().Sub(start), errText
	p.audit(ev)
}

// httpForward decides and relays one absolute-form request. It reports
// whether the client connection may carry another request.
func (p *Proxy) httpForward(c net.Conn, br *bufio.Reader, h *head) (keep bool) {
	start := p.o.Now()
	u, err := url.Parse(h.target)
	switch {
	case err != nil || !strings.Contains(h.target, "://"):
		writeStatus(c, http.StatusBadRequest, "airlock egress: bad request: this is a proxy: send an absolute http:// URL, or CONNECT for https")
		return false
	case !strings.EqualFold(u.Scheme, "http"):
		writeStatus(c, http.StatusBadRequest, "airlock egress: bad request: only http:// URLs are forwarded; use CONNECT for "+u.Scheme)
		return false
	case u.User != nil || strings.Contains(u.Host, "@"):
		writeStatus(c, http.StatusBadRequest, "airlock egress: bad request: user information in the URL is refused")
		return false
	case u.Host == "" || u.Fragment != "" || u.Opaque != "":
		writeStatus(c, http.StatusBadRequest, "airlock egress: bad request: malformed URL")
		return false
	}
	if p.o.Models != nil && isModelRequest(u) {
		c.SetDeadline(time.Time{})
		return p.serveModel(c, br, h, u)
	}
	port := 80
	if ps := u.Port(); ps != "" {
		if port, err = strconv.Atoi(ps); err != nil || len(ps) > 5 {
			writeStatus(c, http.StatusBadRequest, "airlock egress: bad request: malformed port")
			return false
		}
	}
	// Request rules hold on plain HTTP too, and a placeholder is never
	// written into cleartext: any placeholder here refuses the request,
	// before anything is resolved or connected.
	rawPath := u.EscapedPath()
	if rawPath == "" {
		rawPath = "/"
	}
	var body io.Reader
	if host, err := netrule.Canonical(u.Hostname()); err == nil {
		why, rule := "", ""
		rules := p.rulesFor(host, port)
		if ok, r, w := checkRules(rules, h.method, rawPath); !ok {
			why, rule = w, r
		} else if o := overrideHeader(h.header); o != "" && len(rules) > 0 {
			why, rule = o, rules[0].Rule
		} else if _, _, l := bindSecrets(p.o.Secrets, host, false, rawPath, u.RawQuery, h.header.Clone()); l != nil {
			why = l.reason()
		} else if body, err = p.scannedBody(c, br, h); err != nil {
			why = bodyWhy(err)
		}
		if why != "" {
			d := decision{outcome: refused, host: host, port: port, rule: rule, reason: why}
			ev := d.event("http", start)
			ev.Method, ev.Path = h.method, truncate(rawPath, 256)
			p.audit(ev)
			writeStatus(c, http.StatusForbidden, refusal(&d))
			return false
		}
	}
	c.SetDeadline(time.Time{})
	d := p.connect(p.ctx, u.Hostname(), port)
	if d.outcome == allowed {
		p.admit(&d, "http", start)
	}
	if d.outcome != allowed {
		p.audit(d.event("http", start))
		writeDecision(c, &d)
		return false
	}
	defer p.untrack(d.up)
	authority := d.host
	if strings.Contains(authority, ":") {
		authority = "[" + authority + "]"
	}
	if port != 80 {
		authority = net.JoinHostPort(d.host, strconv.Itoa(port))
	}
	hdr := h.header.Clone()
	stripHop(hdr)
	hdr.Del("Expect")
	hdr.Del("Content-Length")
	hdr.Del("Host")
	if _, ok := hdr["User-Agent"]; !ok {
		hdr["User-Agent"] = nil // keep Go from adding its own
	}
	req := &http.Request{
		Method: h.method, URL: &url.URL{Scheme: "http", Host: authority, Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery},
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: hdr, Host: authority, Close: true,
	}
	// The chunked reader must read br itself: any other reader would be
	// wrapped in a buffer of its own that reads past the body.
	cr := &countReader{}
	switch {
	case body != nil && h.chunked:
		cr.r = body
		req.Body, req.ContentLength = io.NopCloser(cr), -1
	case body != nil:
		cr.r = body
		req.Body, req.ContentLength = io.NopCloser(cr), h.contentLength
	}
	ev := d.event("http", start)
	defer func() {
		ev.BytesUp = cr.n
		ev.Duration = p.o.Now().Sub(start)
		if p.audit(ev) != nil {
			keep = false // no further request on a connection that cannot be recorded
		}
	}()
	werr := req.Write(d.up)
	if werr == nil && h.chunked {
		werr = discardTrailer(br, p.o.MaxHeaderBytes)
	}
	if werr != nil {
		var pe *errPlaceholderInBody
		if errors.As(werr, &pe) {
			d.up.Close() // the request must never complete upstream
			ev.Allow, ev.Reason = false, pe.Error()
			d.reason = pe.Error()
			writeStatus(c, http.StatusForbidden, refusal(&d))
			return false
		}
		ev.Error = werr.Error()
		writeStatus(c, http.StatusBadGateway, "airlock egress: "+d.hostPort()+" request failed")
		return false
	}
	ubr := bufio.NewReader(d.up)
	var resp *http.Response
	for i := 0; ; i++ {
		resp, err = http.ReadResponse(ubr, req)
		if err != nil || resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols || i > 8 {
			break
		}
		resp.Body.Close() // an interim 1xx answer: wait for the real one
	}
	if err != nil || resp.StatusCode < 200 {
		if err != nil {
			ev.Error = err.Error()
		} else {
			ev.Error = "upstream answered " + resp.Status
		}
		writeStatus(c, http.StatusBadGateway, "airlock egress: "+d.hostPort()+" sent no valid response")
		return false
	}
	defer resp.Body.Close()
	stripHop(resp.Header)
	framed := resp.ContentLength >= 0 || len(resp.TransferEncoding) > 0 || h.method == http.MethodHead ||
		resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified
	// resp.Close describes the upstream connection, which ends anyway; the
	// box's connection stays open when its own request and the framing allow.
	keep = framed && !h.close
	resp.Close = !keep
	if h.proto == "HTTP/1.0" && len(resp.TransferEncoding) > 0 {
		// An HTTP/1.0 client cannot read chunks: send the body until close.
		resp.TransferEncoding, resp.ContentLength, resp.Close, keep = nil, -1, true, false
	}
	dw := &countWriter{w: c}
	err = resp.Write(dw)
	ev.BytesDown = dw.n
	if err != nil {
		ev.Error = err.Error()
		return false
	}
	return keep
}

// discardTrailer reads the trailer section after a chunked body (trailers
// are not forwarded: they would be a second header block to police).
func discardTrailer(br *bufio.Reader, max int) error {
	budget := max
	for {
		line, err := readLine(br, &budget)
		if err != nil {
			return err
		}
		if line == "" {
			return nil
		}
	}
}

type countReader struct {
	r io.Reader
	n int64
}

func (r *countReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	r.n += int64(n)
	return n, err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (w *countWriter) Write(b []byte) (int, error) {
	n, err := w.w.Write(b)
	w.n += int64(n)
	return n, err
}
