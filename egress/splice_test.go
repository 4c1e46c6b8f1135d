package egress_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/egress/wire"
)

// readChars is this process's rchar from /proc/self/io: the bytes its
// read-like system calls have copied into user space. splice(2) moves bytes
// between descriptors in the kernel and does not count.
func readChars(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("read /proc/self/io: %v", err)
		}
		t.Skipf("no /proc/self/io to count reads with: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("/proc/self/io has no rchar")
	return 0
}

// TestTunnelsSplice moves 64 MiB from a loopback server through a tunnel
// of each kind the proxy serves, counting what the whole process reads into
// user space: the client's own reads of the 64 MiB, and nearly nothing else.
// A relay that copied through a buffer (a wrapped connection io.Copy cannot
// see through, a buffered reader left in the path) would read every byte a
// second time. The tunnels: the box client's socket passed by the forwarder
// (the path every box uses), and the proxy's own socket carrying the
// conversation (a forwarder that passes no descriptor).
func TestTunnelsSplice(t *testing.T) {
	const size = 64 << 20
	ln := sink(t, size)
	target := ln.Addr().String()
	s := benchStack(t, ln.Addr().(*net.TCPAddr).Port)
	buf := make([]byte, 256<<10)
	drain := func(r io.Reader) int64 {
		n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{r}, buf)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, tc := range []struct {
		name string
		open func() (io.Closer, io.Reader, error)
	}{
		{"passed descriptor", func() (io.Closer, io.Reader, error) {
			c, br, err := tunnel(s.httpAddr, target)
			return c, br, err
		}},
		{"proxy socket", func() (io.Closer, io.Reader, error) {
			c, err := net.Dial("unix", s.socket)
			if err != nil {
				return nil, nil, err
			}
			fmt.Fprintf(c, "%sCONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", wire.Preamble(wire.ModeHTTP, s.token), target, target)
			br := bufio.NewReaderSize(c, 256<<10)
			resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
			if err != nil || resp.StatusCode != http.StatusOK {
				c.Close()
				return nil, nil, fmt.Errorf("CONNECT through the socket: %v %v", resp, err)
			}
			return c, br, nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, r, err := tc.open()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			before := readChars(t)
			if n := drain(r); n != size {
				t.Fatalf("got %d bytes, want %d", n, size)
			}
			// The client's reads are size; allow an eighth more for the
			// rest of the process (the test framework, the runtime).
			if read := readChars(t) - before; read > size+size/8 {
				t.Errorf("the process read %d bytes into user space to move %d: the relay copies them instead of splicing", read, size)
			}
		})
	}
}
