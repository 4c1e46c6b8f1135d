package egress_test

import (
	"net"
	"testing"

	"github.com/airlock-run/airlock/egress"
	"github.com/airlock-run/airlock/egress/wire"
)

// TestServeBoxModes: a box's own listener is served as plain HTTP-proxy or
// SOCKS5 clients only; a mode that expects a preamble (the socket's) is
// refused and the listener closed, so nothing is served unauthenticated in
// the socket's protocol.
func TestServeBoxModes(t *testing.T) {
	tok, err := wire.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	p, err := egress.New(egress.Options{Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, mode := range []string{wire.ModeHTTPFD, wire.ModeSOCKSFD, wire.ModePing, ""} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if err := p.ServeBox(ln, mode); err == nil {
			t.Fatalf("ServeBox served mode %q", mode)
		}
		if _, err := ln.Accept(); err == nil {
			t.Fatalf("mode %q: the listener is still open", mode)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.ServeBox(ln, wire.ModeSOCKS) }()
	p.Close()
	if err := <-done; err != egress.ErrClosed {
		t.Fatalf("ServeBox after Close: %v, want ErrClosed", err)
	}
}
