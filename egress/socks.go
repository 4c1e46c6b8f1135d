package egress

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net/netip"
	"time"
)

// SOCKS5 constants (RFC 1928, RFC 1929).
const (
	socksVersion   = 5
	socksNoAuth    = 0x00
	socksUserPass  = 0x02
	socksNoMethod  = 0xff
	socksConnect   = 0x01
	atypIPv4       = 0x01
	atypDomain     = 0x03
	atypIPv6       = 0x04
	repSucceeded   = 0x00
	repGeneralFail = 0x01
	repNotAllowed  = 0x02
	repHostUnreach = 0x04
	repRefused     = 0x05
	repCmdNotSupp  = 0x07
	repAtypNotSupp = 0x08
)

// socksRequest is a parsed SOCKS5 request.
type socksRequest struct {
	cmd  byte
	host string
	port int
}

var errSocks = errors.New("malformed SOCKS5 handshake")

// socksHandshake reads the greeting (answering it on w) and the request. It
// accepts "no authentication", and username/password only so that a client
// configured with credentials still works: the box is already authenticated
// by the preamble, and the credentials are read and ignored.
func socksHandshake(br *bufio.Reader, w io.Writer) (*socksRequest, error) {
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return nil, err
	}
	if hdr[0] != socksVersion || hdr[1] == 0 {
		return nil, errSocks
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return nil, err
	}
	method := byte(socksNoMethod)
	for _, m := range methods {
		if m == socksNoAuth {
			method = socksNoAuth
			break
		}
		if m == socksUserPass {
			method = socksUserPass
		}
	}
	if _, err := w.Write([]byte{socksVersion, method}); err != nil {
		return nil, err
	}
	switch method {
	case socksNoMethod:
		return nil, errSocks
	case socksUserPass:
		// RFC 1929: VER(1) ULEN(1) UNAME PLEN(1) PASSWD.
		var b [2]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return nil, err
		}
		if b[0] != 1 {
			return nil, errSocks
		}
		if _, err := br.Discard(int(b[1])); err != nil {
			return nil, err
		}
		plen, err := br.ReadByte()
		if err != nil {
			return nil, err
		}
		if _, err := br.Discard(int(plen)); err != nil {
			return nil, err
		}
		if _, err := w.Write([]byte{1, 0}); err != nil {
			return nil, err
		}
	}
	var req [4]byte
	if _, err := io.ReadFull(br, req[:]); err != nil {
		return nil, err
	}
	if req[0] != socksVersion || req[2] != 0 {
		return nil, errSocks
	}
	r := &socksRequest{cmd: req[1]}
	switch req[3] {
	case atypIPv4:
		var a [4]byte
		if _, err := io.ReadFull(br, a[:]); err != nil {
			return nil, err
		}
		r.host = netip.AddrFrom4(a).String()
	case atypIPv6:
		var a [16]byte
		if _, err := io.ReadFull(br, a[:]); err != nil {
			return nil, err
		}
		r.host = netip.AddrFrom16(a).String()
	case atypDomain:
		n, err := br.ReadByte()
		if err != nil {
			return nil, err
		}
		name := make([]byte, n)
		if _, err := io.ReadFull(br, name); err != nil {
			return nil, err
		}
		r.host = string(name)
	default:
		socksReply(w, repAtypNotSupp)
		return nil, errSocks
	}
	var port [2]byte
	if _, err := io.ReadFull(br, port[:]); err != nil {
		return nil, err
	}
	r.port = int(binary.BigEndian.Uint16(port[:]))
	return r, nil
}

// socksReply answers a request; the bound address is always 0.0.0.0:0, since
// the box has no use for the proxy's own addresses.
func socksReply(w io.Writer, rep byte) error {
	_, err := w.Write([]byte{socksVersion, rep, 0, atypIPv4, 0, 0, 0, 0, 0, 0})
	return err
}

// serveSOCKS serves one SOCKS5 CONNECT on c.
func (p *Proxy) serveSOCKS(cl *client) {
	c := cl.Conn
	start := p.o.Now()
	req, err := socksHandshake(cl.br, c)
	if err != nil {
		return
	}
	if req.cmd != socksConnect {
		// BIND and UDP ASSOCIATE would open listeners or datagrams on the
		// host: the box gets neither.
		d := decision{outcome: refused, host: req.host, port: req.port, reason: "only SOCKS5 CONNECT is supported"}
		p.audit(d.event("socks5", start))
		socksReply(c, repCmdNotSupp)
		return
	}
	c.SetDeadline(time.Time{})
	d := p.connect(p.ctx, req.host, req.port)
	if d.outcome == allowed {
		p.admit(&d, "socks5", start)
	}
	if d.outcome != allowed {
		p.audit(d.event("socks5", start))
		rep := byte(repNotAllowed)
		switch d.outcome {
		case unrecorded:
			rep = repGeneralFail
		case failed:
			rep = repHostUnreach
			if d.reason == "cannot connect" {
				rep = repRefused
			}
		}
		socksReply(c, rep)
		return
	}
	defer p.untrack(d.up)
	if err := socksReply(c, repSucceeded); err != nil {
		ev := d.event("socks5", start)
		ev.Error = err.Error()
		p.audit(ev)
		return
	}
	p.tunnel(cl, &d, "socks5", start)
}
