package egress

import (
	"bufio"
	"io"
	"net/netip"
)

// WithGlobal returns o with its address classifier replaced, so a test can
// treat an address in a network namespace it made as a public server.
func WithGlobal(o Options, global func(netip.Addr) bool) Options {
	o.global = global
	return o
}

// ReadHead exposes the request-head parser to the fuzz test.
func ReadHead(br *bufio.Reader, max int) (method, target string, contentLength int64, chunked bool, err error) {
	h, err := readHead(br, max)
	if err != nil {
		return "", "", 0, false, err
	}
	for _, k := range []string{"Content-Length", "Transfer-Encoding"} {
		if len(h.header.Values(k)) > 1 {
			panic("two " + k + " headers accepted")
		}
	}
	for _, vs := range h.header {
		for _, v := range vs {
			for i := 0; i < len(v); i++ {
				if v[i] == '\r' || v[i] == '\n' || v[i] == 0 {
					panic("control byte in an accepted header value")
				}
			}
		}
	}
	return h.method, h.target, h.contentLength, h.chunked, nil
}

// SOCKSHandshake exposes the SOCKS5 handshake reader to the fuzz test.
func SOCKSHandshake(br *bufio.Reader, w io.Writer) (cmd byte, host string, port int, err error) {
	r, err := socksHandshake(br, w)
	if err != nil {
		return 0, "", 0, err
	}
	return r.cmd, r.host, r.port, nil
}

// Open reports how many box connections p counts against MaxConns.
func (p *Proxy) Open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.open
}
