package egress_test

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/egress"
)

// FuzzReadHead feeds the request-head parser arbitrary bytes: it must never
// panic, and what it accepts must have one unambiguous framing (ReadHead
// panics on a duplicated framing header or a control byte in a value).
func FuzzReadHead(f *testing.F) {
	for _, s := range []string{
		"GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n",
		"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
		"POST http://a/ HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
		"POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"POST http://a/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
		"GET http://a/ HTTP/1.1\r\nX: a\r\n b\r\n\r\n",
		"GET http://a/ HTTP/1.1\nHost: a\n\n",
		"GET http://a/ HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		"\r\n\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		method, target, cl, chunked, err := egress.ReadHead(bufio.NewReaderSize(strings.NewReader(s), 16), 4096)
		if err != nil {
			return
		}
		if method == "" || target == "" || strings.ContainsAny(target, " \r\n\x00") {
			t.Fatalf("accepted request line %q %q", method, target)
		}
		if chunked && cl >= 0 {
			t.Fatalf("accepted both framings: %q", s)
		}
		if (method == "GET" || method == "HEAD" || method == "CONNECT") && (chunked || cl > 0) {
			t.Fatalf("accepted a %s with a body: %q", method, s)
		}
	})
}

// FuzzSOCKSHandshake feeds the SOCKS5 reader arbitrary bytes: it must never
// panic, never read past what it was given, and return a port in range.
func FuzzSOCKSHandshake(f *testing.F) {
	for _, b := range [][]byte{
		{5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, 0, 80},
		{5, 1, 2, 1, 1, 'u', 1, 'p', 5, 1, 0, 3, 4, 'a', '.', 'b', 'c', 1, 187},
		{5, 1, 0, 5, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 22},
		{5, 1, 0, 5, 3, 0, 1, 0, 0, 0, 0, 0, 0},
		{4, 1, 0, 80, 127, 0, 0, 1, 0},
		{5, 0},
		{5, 255},
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		_, host, port, err := egress.SOCKSHandshake(bufio.NewReaderSize(r, 16), io.Discard)
		if err != nil {
			return
		}
		if port < 0 || port > 65535 || len(host) > 255 {
			t.Fatalf("accepted host %q port %d", host, port)
		}
	})
}
