package egress_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/proxy"

	"github.com/airlock-run/airlock/egress"
)

// byteSink accepts connections on loopback and counts every byte it is
// sent, answering each connection's first read with a line of its own.
type byteSink struct {
	ln       net.Listener
	received atomic.Int64
}

func newByteSink(t *testing.T) *byteSink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("cannot listen on loopback: %v", err)
	}
	s := &byteSink{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(20 * time.Second))
				buf := make([]byte, 4096)
				for first := true; ; first = false {
					n, err := c.Read(buf)
					s.received.Add(int64(n))
					if first && n > 0 {
						io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nsink\n")
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return s
}

func (s *byteSink) addr() string { return s.ln.Addr().String() }

// TestAuditFailureRefuses: an allowed connection whose admission cannot be
// recorded is refused and closed by every protocol, and the destination
// receives nothing. With a hook that records, the same connections go
// through (the control).
func TestAuditFailureRefuses(t *testing.T) {
	leakCheck(t)
	sink := newByteSink(t)
	port := sink.ln.Addr().(*net.TCPAddr).Port
	var failing atomic.Bool
	o := policyOpts(t, []string{"127.0.0.1:" + strconv.Itoa(port)}, nil)
	o.Audit = func(e egress.Event) error {
		if failing.Load() {
			return errors.New("audit log: disk full")
		}
		return nil
	}
	s := newStack(t, o)

	attempts := []struct {
		name string
		try  func() (ok bool, detail string)
	}{
		{"connect", func() (bool, string) {
			code, body, err := s.viaConnect(sink.addr())
			return err == nil && code == 200, fmt.Sprintf("%d %q %v", code, body, err)
		}},
		{"absolute-form", func() (bool, string) {
			out := s.raw(t, "GET http://"+sink.addr()+"/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
			return strings.HasPrefix(out, "HTTP/1.1 200"), fmt.Sprintf("%q", firstLine(out))
		}},
		{"socks5", func() (bool, string) {
			d, err := proxy.SOCKS5("tcp", s.socksAddr, nil, proxy.Direct)
			if err != nil {
				return false, err.Error()
			}
			c, err := d.Dial("tcp", sink.addr())
			if err != nil {
				return false, err.Error()
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				return false, err.Error()
			}
			resp.Body.Close()
			return resp.StatusCode == 200, resp.Status
		}},
	}

	for _, a := range attempts {
		t.Run(a.name+" recorded", func(t *testing.T) {
			failing.Store(false)
			before := sink.received.Load()
			if ok, detail := a.try(); !ok {
				t.Fatalf("got %s, want the sink reached while the audit log works", detail)
			}
			if sink.received.Load() == before {
				t.Fatalf("the sink received nothing")
			}
		})
		t.Run(a.name+" unrecorded", func(t *testing.T) {
			failing.Store(true)
			defer failing.Store(false)
			before := sink.received.Load()
			if ok, detail := a.try(); ok {
				t.Fatalf("got %s, want the connection refused when its admission cannot be recorded", detail)
			}
			if got := sink.received.Load() - before; got != 0 {
				t.Fatalf("the sink received %d bytes from a connection that was never recorded", got)
			}
		})
	}

	t.Run("the refusal says why", func(t *testing.T) {
		failing.Store(true)
		defer failing.Store(false)
		code, body, err := s.viaConnect(sink.addr())
		if err != nil || code != http.StatusServiceUnavailable || !strings.Contains(body, "cannot be recorded in the audit log") {
			t.Fatalf("got %d %q %v, want 503 saying the connection cannot be recorded", code, body, err)
		}
	})

	// Each refused attempt was offered to the hook as an admission first,
	// then as a refusal.
	var refusals int
	for _, e := range s.audited() {
		if !e.Allow && strings.Contains(e.Reason, "cannot be recorded") {
			refusals++
			if e.Error != "audit log: disk full" {
				t.Errorf("refusal %+v: want the hook's error in Error", e)
			}
		}
	}
	if refusals != len(attempts)+1 {
		t.Errorf("got %d refusals recorded, want %d", refusals, len(attempts)+1)
	}
	if n := len(s.opened()); n < 2*len(attempts)+1 {
		t.Errorf("got %d admission records, want at least %d", n, 2*len(attempts)+1)
	}
}
