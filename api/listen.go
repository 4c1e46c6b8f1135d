package api

import (
	"bufio"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"time"
)

// Listener serves the API over TLS on ln and, when plain is set (a
// loopback address, or the operator's --insecure-listen), plain HTTP on
// the same port: each connection's first byte says which (a TLS record of
// a handshake begins with 22). A plain request where plain is off gets a
// 400 naming https and is closed: its token was sent in clear already,
// but nothing answers it.
//
// Each new connection's first byte is read on a goroutine of its own,
// within sniffTimeout, so a client that sends nothing holds up no other.
func Listener(ln net.Listener, config *tls.Config, plain bool) net.Listener {
	l := &sniffListener{Listener: ln, config: config, plain: plain, conns: make(chan net.Conn), done: make(chan struct{})}
	go l.accept()
	return l
}

// sniffTimeout bounds the wait for a connection's first byte.
const sniffTimeout = 10 * time.Second

// tlsHandshake is the first byte of a TLS handshake record.
const tlsHandshake = 0x16

type sniffListener struct {
	net.Listener
	config *tls.Config
	plain  bool
	conns  chan net.Conn
	done   chan struct{}
	once   sync.Once
	mu     sync.Mutex
	err    error // the inner listener's, once it failed
}

func (l *sniffListener) accept() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			l.mu.Lock()
			l.err = err
			l.mu.Unlock()
			l.Close()
			return
		}
		go l.sniff(c)
	}
}

// sniff hands c on as TLS or plain, by its first byte.
func (l *sniffListener) sniff(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(sniffTimeout))
	br := bufio.NewReaderSize(c, 512)
	first, err := br.Peek(1)
	c.SetReadDeadline(time.Time{})
	if err != nil {
		c.Close()
		return
	}
	var out net.Conn = &peeked{Conn: c, r: br}
	switch {
	case first[0] == tlsHandshake:
		out = tls.Server(out, l.config)
	case !l.plain:
		c.SetWriteDeadline(time.Now().Add(sniffTimeout))
		c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n" +
			"this airlock server serves its API over TLS only here: use https:// and the fleet CA (the server's STATE/pki/ca.pem)\n"))
		c.Close()
		return
	}
	select {
	case l.conns <- out:
	case <-l.done:
		c.Close()
	}
}

func (l *sniffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.err != nil && !errors.Is(l.err, net.ErrClosed) {
			return nil, l.err
		}
		return nil, net.ErrClosed
	}
}

func (l *sniffListener) Close() error {
	var err error
	l.once.Do(func() {
		close(l.done)
		err = l.Listener.Close()
	})
	return err
}

// peeked is a connection whose first bytes were read into r.
type peeked struct {
	net.Conn
	r *bufio.Reader
}

func (p *peeked) Read(b []byte) (int, error) { return p.r.Read(b) }
