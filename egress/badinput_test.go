package egress_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/egress"
	"github.com/airlock-run/airlock/egress/wire"
)

// TestBadRequests: malformed, ambiguous and oversized requests get a 400 (or
// a closed connection) and never reach the destination, even an allowed one.
func TestBadRequests(t *testing.T) {
	leakCheck(t)
	c := loopbackCanary(t, "smuggle-target", "127.0.0.1:0")
	tgt := c.addr.String()
	o := policyOpts(t, []string{"127.0.0.1:" + strconv.Itoa(c.port())}, nil)
	o.HeaderTimeout = time.Second // a head with no line end is closed at the timeout
	s := newStack(t, o)
	abs := "http://" + tgt + "/"
	tests := []struct {
		name, req string
	}{
		{"origin-form", "GET / HTTP/1.1\r\nHost: " + tgt + "\r\n\r\n"},
		{"CL and TE", "POST " + abs + " HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"TE and CL", "POST " + abs + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n"},
		{"two CL", "POST " + abs + " HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcde"},
		{"two equal CL", "POST " + abs + " HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\nabcd"},
		{"CL list", "POST " + abs + " HTTP/1.1\r\nHost: x\r\nContent-Length: 4, 4\r\n\r\nabcd"},
		{"CL sign", "POST " + abs + " HTTP/1.1\r\nHost: x\r\nContent-Length: +4\r\n\r\nabcd"},
		{"TE gzip chunked", "POST " + abs + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"},
		{"TE chunked twice", "POST " + abs + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"TE odd spelling", "POST " + abs + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n"},
		{"TE space before colon", "POST " + abs + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n"},
		{"chunked GET", "GET " + abs + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"GET with body", "GET " + abs + " HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"},
		{"chunked HTTP/1.0", "POST " + abs + " HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"folded header", "GET " + abs + " HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n"},
		{"bare LF", "GET " + abs + " HTTP/1.1\nHost: x\n\n"},
		{"bare LF in header", "GET " + abs + " HTTP/1.1\r\nHost: x\nX: y\r\n\r\n"},
		{"NUL in header", "GET " + abs + " HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n"},
		{"CR in value", "GET " + abs + " HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n"},
		{"no colon", "GET " + abs + " HTTP/1.1\r\nHost x\r\n\r\n"},
		{"bad version", "GET " + abs + " HTTP/1.2\r\nHost: x\r\n\r\n"},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"},
		{"extra space", "GET  " + abs + " HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"space in target", "GET http://" + tgt + "/a b HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"https absolute", "GET https://" + tgt + "/ HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"userinfo", "GET http://user@" + tgt + "/ HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"userinfo confusion", "GET http://" + tgt + "@evil.test/ HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"CONNECT no port", "CONNECT 127.0.0.1 HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"CONNECT body", "CONNECT " + tgt + " HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"},
		{"CONNECT port text", "CONNECT 127.0.0.1:http HTTP/1.1\r\n\r\n"},
		{"binary junk", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"},
		{"oversized header", "GET " + abs + " HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 40<<10) + "\r\n\r\n"},
		{"too many headers", "GET " + abs + " HTTP/1.1\r\n" + strings.Repeat("X-A: b\r\n", 300) + "\r\n"},
		{"oversized request line", "GET http://" + tgt + "/" + strings.Repeat("a", 40<<10) + " HTTP/1.1\r\n\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := s.raw(t, tc.req)
			if out != "" && !strings.HasPrefix(out, "HTTP/1.1 400 ") {
				t.Fatalf("got %.80q, want 400 or a closed connection", firstLine(out))
			}
		})
	}
	c.mustBeUntouched(t)
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// TestSmuggledSecondRequest: bytes after a well-framed body are read as the
// next request and decided on their own; a chunked body cannot hide one.
func TestSmuggledSecondRequest(t *testing.T) {
	leakCheck(t)
	ok := loopbackCanary(t, "allowed", "127.0.0.1:0")
	hidden := loopbackCanary(t, "hidden", "127.0.0.1:0")
	s := newStack(t, policyOpts(t, []string{"127.0.0.1:" + strconv.Itoa(ok.port())}, nil))
	smuggled := "GET http://" + hidden.addr.String() + "/ HTTP/1.1\r\nHost: x\r\n\r\n"
	out := s.raw(t, "POST http://"+ok.addr.String()+"/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"+
		"5\r\nhello\r\n0\r\n\r\n"+smuggled)
	if !strings.HasPrefix(out, "HTTP/1.1 200") || !strings.Contains(out, "HTTP/1.1 403") {
		t.Fatalf("got %q, want 200 for the body and then 403 for the request after it", out)
	}
	hidden.mustBeUntouched(t)
}

// TestSlowClient: a client that never finishes its head, or never sends a
// preamble, is cut off at the header timeout.
func TestSlowClient(t *testing.T) {
	leakCheck(t)
	c := loopbackCanary(t, "slow", "127.0.0.1:0")
	o := policyOpts(t, []string{"127.0.0.1:" + strconv.Itoa(c.port())}, nil)
	o.HeaderTimeout = 300 * time.Millisecond
	s := newStack(t, o)
	for name, partial := range map[string]string{
		"half a request line": "GET http://" + c.addr.String(),
		"no end of head":      "GET http://" + c.addr.String() + "/ HTTP/1.1\r\nHost: x\r\n",
		"nothing":             "",
	} {
		t.Run(name, func(t *testing.T) {
			conn, err := net.Dial("tcp", s.httpAddr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			io.WriteString(conn, partial)
			conn.SetReadDeadline(time.Now().Add(30 * time.Second))
			b, err := io.ReadAll(conn)
			if err != nil {
				t.Fatalf("got %v after %q, want the proxy to close the connection", err, b)
			}
		})
	}
	t.Run("no preamble on the socket", func(t *testing.T) {
		conn, err := net.Dial("unix", s.socket)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		io.WriteString(conn, "AIRLOCK-EGRESS/1 http ")
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.ReadAll(conn); err != nil {
			t.Fatalf("got %v, want the proxy to close the connection", err)
		}
	})
	c.mustBeUntouched(t)
}

// TestToken: the socket serves only a connection that opens with the box's
// token; the attempts below would reach an allowed canary with it.
func TestToken(t *testing.T) {
	leakCheck(t)
	c := loopbackCanary(t, "token", "127.0.0.1:0")
	s := newStack(t, policyOpts(t, []string{"127.0.0.1:" + strconv.Itoa(c.port())}, nil))
	other, _ := wire.NewToken()
	req := "CONNECT " + c.addr.String() + " HTTP/1.1\r\n\r\n"
	try := func(pre string) string {
		conn, err := net.Dial("unix", s.socket)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		io.WriteString(conn, pre+req)
		line, _ := bufio.NewReader(conn).ReadString('\n')
		return line
	}
	// With the token, the same bytes get through: the attempts are real.
	if out := try(string(wire.Preamble(wire.ModeHTTP, s.token))); !strings.HasPrefix(out, "HTTP/1.1 200") {
		t.Fatalf("with the token: got %q, want 200", firstLine(out))
	}
	c.waitConns(t, 1)
	c.conns.Store(0)
	for name, pre := range map[string]string{
		"no preamble":    "",
		"other token":    string(wire.Preamble(wire.ModeHTTP, other)),
		"token prefix":   string(wire.Preamble(wire.ModeHTTP, s.token[:32])),
		"token in upper": string(wire.Preamble(wire.ModeHTTP, strings.ToUpper(s.token))),
		"bad mode":       "AIRLOCK-EGRESS/1 raw " + s.token + "\n",
		"wrong magic":    "AIRLOCK-EGRESS/2 http " + s.token + "\n",
		"proxy auth":     "",
	} {
		t.Run(name, func(t *testing.T) {
			if out := try(pre); strings.HasPrefix(out, "HTTP/1.1 200") {
				t.Fatalf("got %q, want the connection refused", firstLine(out))
			}
		})
	}
	c.mustBeUntouched(t)
	if _, err := egress.New(egress.Options{Token: "short"}); err == nil {
		t.Fatal("New accepted an invalid token")
	}
}

// TestSOCKSRefusals: commands other than CONNECT, unknown address types and
// other versions are refused.
func TestSOCKSRefusals(t *testing.T) {
	leakCheck(t)
	s := newStack(t, egress.Options{Check: allowAll})
	tests := []struct {
		name string
		req  []byte
		rep  byte // expected reply code to the request; 0xff: closed without one
	}{
		{"udp associate", []byte{5, 3, 0, 1, 127, 0, 0, 1, 0, 53}, 7},
		{"bind", []byte{5, 2, 0, 1, 127, 0, 0, 1, 0, 80}, 7},
		{"bad atyp", []byte{5, 1, 0, 9, 127, 0, 0, 1, 0, 80}, 8},
		{"metadata", []byte{5, 1, 0, 1, 169, 254, 169, 254, 0, 80}, 2},
		{"name with NUL", append(append([]byte{5, 1, 0, 3, 9}, "a\x00b.test."...), 0, 80), 2},
		{"bad reserved byte", []byte{5, 1, 1, 1, 127, 0, 0, 1, 0, 80}, 0xff},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", s.socksAddr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(30 * time.Second))
			conn.Write([]byte{5, 1, 0})
			br := bufio.NewReader(conn)
			var greet [2]byte
			if _, err := io.ReadFull(br, greet[:]); err != nil || greet != [2]byte{5, 0} {
				t.Fatalf("greeting: got %v %v, want [5 0]", greet, err)
			}
			conn.Write(tc.req)
			rest, _ := io.ReadAll(br)
			if tc.rep == 0xff {
				if len(rest) != 0 {
					t.Fatalf("got %v, want the connection closed", rest)
				}
				return
			}
			if len(rest) < 2 || rest[1] != tc.rep {
				t.Fatalf("got %v, want reply code %d", rest, tc.rep)
			}
		})
	}
	t.Run("socks4", func(t *testing.T) {
		conn, err := net.Dial("tcp", s.socksAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		conn.Write([]byte{4, 1, 0, 80, 127, 0, 0, 1, 0})
		if b, _ := io.ReadAll(conn); len(b) != 0 {
			t.Fatalf("got %v, want the connection closed", b)
		}
	})
}

// TestHangUpMidTunnel: a client that goes away with a tunnel open leaves
// nothing behind, and the audit record says what moved.
func TestHangUpMidTunnel(t *testing.T) {
	leakCheck(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	s := newStack(t, policyOpts(t, []string{"127.0.0.1:" + strconv.Itoa(port)}, nil))
	for i := 0; i < 20; i++ {
		conn, err := net.Dial("tcp", s.httpAddr)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		io.WriteString(conn, "CONNECT "+ln.Addr().String()+" HTTP/1.1\r\n\r\nping")
		br := bufio.NewReader(conn)
		line, _ := br.ReadString('\n')
		if !strings.HasPrefix(line, "HTTP/1.1 200") {
			t.Fatalf("got %q, want 200", line)
		}
		br.ReadString('\n')
		echo := make([]byte, 4)
		if _, err := io.ReadFull(br, echo); err != nil || !bytes.Equal(echo, []byte("ping")) {
			t.Fatalf("got %q %v, want the echo", echo, err)
		}
		conn.Close() // mid-tunnel
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(s.audited()) < 20 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	for _, e := range s.audited() {
		if !e.Allow || e.BytesUp != 4 || e.BytesDown != 4 {
			t.Errorf("audit event %+v, want 4 bytes each way", e)
		}
	}
}

// TestMaxConns: a box cannot open more conversations than MaxConns; one more
// is closed unanswered, and room comes back when one ends.
func TestMaxConns(t *testing.T) {
	leakCheck(t)
	ln := sink(t, 0)
	o := policyOpts(t, []string{"127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)}, nil)
	o.MaxConns = 2
	s := newStack(t, o)
	// The forwarder's start-up check is a connection of its own; let the
	// proxy finish with it so the count starts from zero.
	for i := 0; s.proxy.Open() != 0; i++ {
		if i == 500 {
			t.Fatalf("the proxy still counts %d connections after start-up", s.proxy.Open())
		}
		time.Sleep(10 * time.Millisecond)
	}
	target := ln.Addr().String()
	a, _, err := tunnel(s.httpAddr, target)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, _, err := tunnel(s.httpAddr, target)
	if err != nil {
		t.Fatal(err)
	}
	if c, _, err := tunnel(s.httpAddr, target); err == nil {
		c.Close()
		t.Fatal("a third tunnel opened with MaxConns 2")
	}
	b.Close()
	// The proxy notices the close and frees the slot.
	var err2 error
	for i := 0; i < 200; i++ {
		var c net.Conn
		if c, _, err2 = tunnel(s.httpAddr, target); err2 == nil {
			c.Close()
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no tunnel after one ended: %v", err2)
}
