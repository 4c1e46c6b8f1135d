package forward

import (
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pair is a SOCK_SEQPACKET socket pair as the plan makes it: airlock's end
// and the box's.
func pair(t *testing.T) (host, box *os.File) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	host, box = os.NewFile(uintptr(fds[0]), "host"), os.NewFile(uintptr(fds[1]), "box")
	t.Cleanup(func() { host.Close(); box.Close() })
	return host, box
}

// fdOf is a duplicate of the socket under c (a listener or connection).
func fdOf(t *testing.T, c interface{ File() (*os.File, error) }) int {
	t.Helper()
	f, err := c.File()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return int(f.Fd())
}

// tcpListener is a plain TCP listener on addr:0 as the box's exec step
// makes it (Go's own listeners may be multipath TCP, which a box cannot
// make), and its address.
func tcpListener(t *testing.T, addr [4]byte) (fd int, hostport string) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: addr}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 16); err != nil {
		t.Fatal(err)
	}
	sa, _ := unix.Getsockname(fd)
	return fd, "127.0.0.1:" + strconv.Itoa(sa.(*unix.SockaddrInet4).Port)
}

// hostWord reads the byte ServeHost wrote for the box.
func hostWord(t *testing.T, box *os.File) byte {
	t.Helper()
	var b [1]byte
	if n, err := box.Read(b[:]); n != 1 || err != nil {
		t.Fatalf("read the host's byte: %d %v", n, err)
	}
	return b[0]
}

// TestHostServesHandedOutListeners: the listeners the box's exec step
// hands out are served like the in-box forwarder's (an HTTP CONNECT and a
// SOCKS5 tunnel to the allowed echo server, a refusal for anything else),
// whether each connection goes over the proxy's socket or the proxy
// accepts on them itself (Config.Serve), and Close leaves no listener
// behind.
func TestHostServesHandedOutListeners(t *testing.T) {
	px, socket, token, echo := newProxy(t)
	for _, tc := range []struct {
		name   string
		models bool
		serve  func(net.Listener, string) error
		times  string
	}{
		{"over the socket", false, nil, ""},
		{"over the socket, with models", true, nil, ""},
		{"the proxy's own accept loop", false, px.ServeBox, ""},
		{"with the exec step's times", false, px.ServeBox, " 5 9"},
	} {
		models := tc.models
		host, box := pair(t)
		h, err := ServeHost(host, Config{Socket: socket, Token: token, Serve: tc.serve}, models)
		if err != nil {
			t.Fatal(err)
		}
		want := byte('-')
		if models {
			want = 'm'
		}
		if got := hostWord(t, box); got != want {
			t.Fatalf("%s: the host said %q, want %q", tc.name, got, want)
		}
		hl, httpAddr := tcpListener(t, [4]byte{127, 0, 0, 1})
		sl, socksAddr := tcpListener(t, [4]byte{127, 0, 0, 1})
		if err := unix.Sendmsg(int(box.Fd()), []byte(listenWords+tc.times), unix.UnixRights(hl, sl), nil, 0); err != nil {
			t.Fatal(err)
		}
		// The exec step closes its own copies before the command runs.
		unix.Close(hl)
		unix.Close(sl)

		c, err := net.Dial("tcp", httpAddr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(30 * time.Second))
		io.WriteString(c, "CONNECT "+echo.String()+" HTTP/1.1\r\n\r\n")
		buf := make([]byte, 64)
		if n, err := c.Read(buf); err != nil || !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 200") {
			t.Fatalf("%s: CONNECT through the handed-out listener: got %q %v, want 200", tc.name, buf[:n], err)
		}
		io.WriteString(c, "ping")
		if n, err := io.ReadFull(c, buf[:4]); err != nil || string(buf[:n]) != "ping" {
			t.Fatalf("tunnel: got %q %v, want the echo", buf[:n], err)
		}
		c.Close()

		s, err := net.Dial("tcp", socksAddr)
		if err != nil {
			t.Fatal(err)
		}
		s.SetDeadline(time.Now().Add(30 * time.Second))
		ip := echo.Addr().As4()
		s.Write([]byte{5, 1, 0})
		s.Write([]byte{5, 1, 0, 1, ip[0], ip[1], ip[2], ip[3], byte(echo.Port() >> 8), byte(echo.Port())})
		if _, err := io.ReadFull(s, buf[:2+10]); err != nil || buf[0] != 5 || buf[3] != 0 {
			t.Fatalf("SOCKS5 through the handed-out listener: got % x %v, want a success", buf[:12], err)
		}
		s.Close()

		d, _ := net.Dial("tcp", httpAddr)
		d.SetDeadline(time.Now().Add(30 * time.Second))
		io.WriteString(d, "CONNECT 127.0.0.1:9 HTTP/1.1\r\n\r\n")
		if n, _ := d.Read(buf); !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 403") {
			t.Fatalf("a destination off the allowlist: got %q, want the proxy's 403", buf[:n])
		}
		d.Close()

		began, sent, ok := h.BoxTimes()
		if ok != (tc.times != "") || (ok && (began != 5 || sent != 9)) {
			t.Errorf("%s: the exec step's times read as %d %d %v", tc.name, began, sent, ok)
		}
		h.Close()
		for _, a := range []string{httpAddr, socksAddr} {
			if c, err := net.Dial("tcp", a); err == nil {
				c.Close()
				t.Fatalf("%s: %s still accepts after Close", tc.name, a)
			}
		}
	}
}

// TestHostRefusesWhatIsNotTheListeners: only two TCP sockets listening on
// 127.0.0.1, sent with the right words, are served; anything else is
// closed and nothing is accepted. A box that ends without sending ends the
// wait.
func TestHostRefusesWhatIsNotTheListeners(t *testing.T) {
	socket, token, _ := proxyFor(t)
	loop := func(t *testing.T) int {
		fd, _ := tcpListener(t, [4]byte{127, 0, 0, 1})
		return fd
	}
	tests := []struct {
		name  string
		words string
		fds   func(t *testing.T) []int
	}{
		{"one listener", listenWords, func(t *testing.T) []int { return []int{loop(t)} }},
		{"three listeners", listenWords, func(t *testing.T) []int { return []int{loop(t), loop(t), loop(t)} }},
		{"other words", "socks http", func(t *testing.T) []int { return []int{loop(t), loop(t)} }},
		{"longer words", listenWords + "x", func(t *testing.T) []int { return []int{loop(t), loop(t)} }},
		{"times that are not numbers", listenWords + " 1 x", func(t *testing.T) []int { return []int{loop(t), loop(t)} }},
		{"one time", listenWords + " 1", func(t *testing.T) []int { return []int{loop(t), loop(t)} }},
		{"no descriptors", listenWords, func(t *testing.T) []int { return nil }},
		{"a listener on every address", listenWords, func(t *testing.T) []int {
			fd, _ := tcpListener(t, [4]byte{})
			return []int{fd, loop(t)}
		}},
		{"a multipath TCP listener", listenWords, func(t *testing.T) []int {
			ln, err := net.Listen("tcp4", "127.0.0.1:0") // Go listens with MPTCP where the kernel has it
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			fd := fdOf(t, ln.(*net.TCPListener))
			if p, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PROTOCOL); p != unix.IPPROTO_MPTCP {
				t.Skipf("this kernel gave Go a socket of protocol %d, not multipath TCP", p)
			}
			return []int{loop(t), fd}
		}},
		{"a connected socket", listenWords, func(t *testing.T) []int {
			_, addr := tcpListener(t, [4]byte{127, 0, 0, 1})
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return []int{loop(t), fdOf(t, c.(*net.TCPConn))}
		}},
		{"a UDP socket", listenWords, func(t *testing.T) []int {
			c, err := net.ListenPacket("udp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return []int{loop(t), fdOf(t, c.(*net.UDPConn))}
		}},
		{"a Unix listener", listenWords, func(t *testing.T) []int {
			ln, err := net.Listen("unix", t.TempDir()+"/s")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			return []int{loop(t), fdOf(t, ln.(*net.UnixListener))}
		}},
		{"a file", listenWords, func(t *testing.T) []int {
			f, err := os.Open("/dev/null")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return []int{loop(t), int(f.Fd())}
		}},
	}
	// served is a Host on a fresh pair whose byte the box has read.
	served := func(t *testing.T) (*Host, *os.File) {
		host, box := pair(t)
		h, err := ServeHost(host, Config{Socket: socket, Token: token}, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.Close)
		hostWord(t, box)
		return h, box
	}
	ended := func(t *testing.T, h *Host, why string) {
		select {
		case <-h.done:
		case <-time.After(30 * time.Second):
			t.Fatal("the host still waits " + why)
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, box := served(t)
			fds := tc.fds(t)
			var oob []byte
			if len(fds) > 0 {
				oob = unix.UnixRights(fds...)
			}
			if err := unix.Sendmsg(int(box.Fd()), []byte(tc.words), oob, nil, 0); err != nil {
				t.Fatal(err)
			}
			ended(t, h, "after a message that is not the listeners")
			if h.f.http != nil || h.f.socks != nil {
				t.Fatal("the host serves what is not the two loopback listeners")
			}
		})
	}
	t.Run("the box ends without sending", func(t *testing.T) {
		h, box := served(t)
		box.Close()
		ended(t, h, "for a box that has ended")
	})
	t.Run("an invalid token", func(t *testing.T) {
		host, _ := pair(t)
		if _, err := ServeHost(host, Config{Socket: socket, Token: "x y"}, false); err == nil {
			t.Fatal("ServeHost took an invalid token")
		}
	})
}
