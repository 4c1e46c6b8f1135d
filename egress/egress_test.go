package egress_test

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/egress"
)

// TestAllowedReached: a destination the policy names is reached by all three
// ways a box asks (absolute-form, CONNECT, SOCKS5), and each is audited.
func TestAllowedReached(t *testing.T) {
	leakCheck(t)
	c := loopbackCanary(t, "allowed", "127.0.0.1:0")
	o := policyOpts(t, []string{"127.0.0.1:" + strconv.Itoa(c.port()), "canary.test:" + strconv.Itoa(c.port())}, nil)
	o.Resolver = newResolver(map[string][]string{"canary.test": {"127.0.0.1"}})
	s := newStack(t, o)
	target := c.addr.String()

	t.Run("absolute-form", func(t *testing.T) {
		code, body, err := s.httpGet("http://"+target+"/", false)
		if err != nil || code != 200 || !strings.HasPrefix(body, "canary allowed") {
			t.Fatalf("got %d %q %v, want 200 from the canary", code, body, err)
		}
		if !strings.Contains(body, "host="+target) {
			t.Fatalf("got %q, want the Host header rewritten to %s", body, target)
		}
	})
	t.Run("connect", func(t *testing.T) {
		code, body, err := s.viaConnect(target)
		if err != nil || code != 200 || !strings.HasPrefix(body, "canary allowed") {
			t.Fatalf("got %d %q %v, want the canary through the tunnel", code, body, err)
		}
	})
	t.Run("socks5 address", func(t *testing.T) {
		body, err := s.viaSOCKS(target)
		if err != nil || !strings.HasPrefix(body, "canary allowed") {
			t.Fatalf("got %q %v, want the canary", body, err)
		}
	})
	t.Run("socks5 name", func(t *testing.T) {
		// A name the allowlist names, resolving to an address an IP entry
		// names too.
		body, err := s.viaSOCKS("canary.test:" + strconv.Itoa(c.port()))
		if err != nil || !strings.HasPrefix(body, "canary allowed") {
			t.Fatalf("got %q %v, want the canary", body, err)
		}
	})
	t.Run("post body", func(t *testing.T) {
		out := s.raw(t, "POST http://"+target+"/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
		if !strings.HasPrefix(out, "HTTP/1.1 200") || !strings.HasSuffix(out, "hello") {
			t.Fatalf("got %q, want 200 echoing hello", out)
		}
	})
	t.Run("chunked body", func(t *testing.T) {
		out := s.raw(t, "POST http://"+target+"/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
		if !strings.HasPrefix(out, "HTTP/1.1 200") || !strings.Contains(out, "hello world") {
			t.Fatalf("got %q, want 200 echoing hello world", out)
		}
	})
	t.Run("keep-alive", func(t *testing.T) {
		req := "GET http://" + target + "/ HTTP/1.1\r\nHost: x\r\n\r\n"
		out := s.raw(t, req+req+strings.Replace(req, "\r\n\r\n", "\r\nConnection: close\r\n\r\n", 1))
		if n := strings.Count(out, "HTTP/1.1 200"); n != 3 {
			t.Fatalf("got %d responses on one connection, want 3:\n%s", n, out)
		}
	})

	evs := s.audited()
	if len(evs) < 7 {
		t.Fatalf("got %d audit events, want one per connection (7+)", len(evs))
	}
	for _, e := range evs {
		if !e.Allow || e.Box != "test-box" || e.Port != c.port() || e.Addr != c.addr || e.Rule == "" {
			t.Errorf("audit event %+v: want an allowed decision for %s with its rule", e, c.addr)
		}
		if e.Proto != "http" && e.BytesUp == 0 || e.BytesDown == 0 || e.Duration <= 0 {
			t.Errorf("audit event %+v: want bytes both ways and a duration", e)
		}
	}
}

// allowAll is a Check that allows every host: what stops the attempts below
// is the address check alone, which no policy mistake can switch off.
func allowAll(context.Context, string, int) egress.Verdict {
	return egress.Verdict{Allow: true, Rule: "test.allow-all"}
}

// TestLoopbackRefusedInEverySpelling: with a policy that allows every name,
// and canaries listening on this host's loopback (v4 and v6), no spelling of
// loopback reaches them by any protocol.
func TestLoopbackRefusedInEverySpelling(t *testing.T) {
	leakCheck(t)
	c4 := loopbackCanary(t, "loopback4", "127.0.0.1:0")
	port := strconv.Itoa(c4.port())
	c6 := loopbackCanary(t, "loopback6", "[::1]:"+port)
	c2 := loopbackCanary(t, "loopback-other", "127.0.0.2:"+port)
	res := newResolver(map[string][]string{
		"localhost": {"127.0.0.1"}, "evil.test": {"127.0.0.1"}, "evil6.test": {"::1"},
		"mapped.test": {"::ffff:127.0.0.1"}, "nat64.test": {"64:ff9b::7f00:1"},
	})
	s := newStack(t, egress.Options{Check: allowAll, Resolver: res})

	hosts := []string{
		"127.0.0.1", "127.1", "127.0.1", "0x7f.0.0.1", "0x7f.1", "0177.0.0.1", "0177.1", "2130706433",
		"0x7f000001", "017700000001", "127.0.0.1.", "127.0.0.2", "[::1]", "[0:0:0:0:0:0:0:1]",
		"[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::127.0.0.1]", "[::1%25lo]", "0.0.0.0", "0",
		"localhost", "LOCALHOST.", "evil.test", "evil6.test", "mapped.test", "nat64.test",
		"[64:ff9b::7f00:1]", "[2002:7f00:1::]",
	}
	for _, h := range hosts {
		target := h + ":" + port
		t.Run("absolute "+h, func(t *testing.T) {
			code, body, err := s.httpGet("http://"+target+"/", false)
			if err != nil || code != 403 || !strings.HasPrefix(body, "blocked by airlock egress policy: ") {
				t.Fatalf("got %d %q %v, want 403 with the refusal line", code, body, err)
			}
		})
		t.Run("connect "+h, func(t *testing.T) {
			code, body, err := s.viaConnect(target)
			if err != nil || code != 403 || strings.Count(body, "\n") != 1 {
				t.Fatalf("got %d %q %v, want 403 with one line", code, body, err)
			}
		})
		t.Run("socks5 "+h, func(t *testing.T) {
			sh := strings.NewReplacer("[", "", "]", "", "%25", "%").Replace(h)
			if body, err := s.viaSOCKS(net.JoinHostPort(sh, port)); err == nil {
				t.Fatalf("got %q, want the SOCKS request refused", body)
			}
		})
	}
	c4.mustBeUntouched(t)
	c6.mustBeUntouched(t)
	c2.mustBeUntouched(t)
	for _, e := range s.audited() {
		if e.Allow {
			t.Errorf("audit event %+v allowed, want every decision refused", e)
		}
	}
}

// TestMetadataAndPrivateRefused: the cloud metadata services and the other
// non-global ranges are refused before any connection is tried, whatever the
// spelling and whatever the policy says about names.
func TestMetadataAndPrivateRefused(t *testing.T) {
	leakCheck(t)
	s := newStack(t, egress.Options{Check: allowAll, Resolver: newResolver(map[string][]string{
		"metadata.google.internal": {"169.254.169.254"},
		"rebind-v6.test":           {"fd00:ec2::254"},
	})})
	for _, h := range []string{
		"169.254.169.254", "2852039166", "0xa9fea9fe", "0251.0376.0251.0376", "169.254.43518",
		"[::ffff:169.254.169.254]", "[fd00:ec2::254]", "100.100.100.200", "metadata.google.internal",
		"rebind-v6.test", "[64:ff9b::a9fe:a9fe]", "[2002:a9fe:a9fe::1]", "[2001:0:4136:e378:8000:63bf:5601:5601]",
		"10.0.0.1", "192.168.1.1", "172.16.0.1", "100.64.0.1", "[fe80::1]", "[fc00::1]", "224.0.0.1",
		"255.255.255.255", "192.0.2.1", "198.51.100.1", "203.0.113.1", "198.18.0.1",
	} {
		t.Run(h, func(t *testing.T) {
			code, body, err := s.viaConnect(h + ":80")
			if err != nil || code != 403 || !strings.Contains(body, "is not public") {
				t.Fatalf("got %d %q %v, want 403: not public", code, body, err)
			}
		})
	}
	for _, e := range s.audited() {
		if e.Allow || e.BytesUp != 0 || e.BytesDown != 0 {
			t.Errorf("audit event %+v, want a refusal that moved nothing", e)
		}
	}
}

// TestDNSOnlyForAllowedNames: a name the policy refuses is never resolved,
// and the refusal says which destination and why.
func TestDNSOnlyForAllowedNames(t *testing.T) {
	leakCheck(t)
	res := newResolver(map[string][]string{"allowed.test": {"8.8.8.8"}, "refused.test": {"8.8.4.4"}})
	s := newStack(t, policyOpts(t, []string{"allowed.test:9"}, nil))
	_ = s
	o := policyOpts(t, []string{"allowed.test:9"}, nil)
	o.Resolver = res
	s = newStack(t, o)
	code, body, err := s.viaConnect("refused.test:443")
	if err != nil || code != 403 || body != "blocked by airlock egress policy: refused.test:443 not in the network allowlist\n" {
		t.Fatalf("got %d %q %v, want 403 with the refusal line", code, body, err)
	}
	if _, err := s.viaSOCKS("refused.test:443"); err == nil {
		t.Fatal("SOCKS request for a refused name succeeded")
	}
	if code, _, _ := s.httpGet("http://refused.test/", false); code != 403 {
		t.Fatalf("absolute-form request got %d, want 403", code)
	}
	if n := res.total(); n != 0 {
		t.Fatalf("resolver asked %d times, want 0: only allowlisted names are resolved", n)
	}
}

// TestRebinding: a name whose answer changes between lookups reaches only
// the address it was checked at, each time; an answer moving to a refused
// address is refused, and one lookup is made per decision.
func TestRebinding(t *testing.T) {
	leakCheck(t)
	good := loopbackCanary(t, "checked", "127.0.0.2:0")
	port := strconv.Itoa(good.port())
	evil := loopbackCanary(t, "rebound", "127.0.0.1:"+port)
	res := newResolver(map[string][]string{"rebind.test": {"127.0.0.2", "127.0.0.1"}})
	o := policyOpts(t, []string{"rebind.test:" + port, "127.0.0.2:" + port}, nil)
	o.Resolver = res
	s := newStack(t, o)

	code, body, err := s.viaConnect("rebind.test:" + port)
	if err != nil || code != 200 || !strings.HasPrefix(body, "canary checked") {
		t.Fatalf("first lookup: got %d %q %v, want the checked canary", code, body, err)
	}
	code, body, err = s.viaConnect("rebind.test:" + port)
	if err != nil || code != 403 || !strings.Contains(body, "127.0.0.1") {
		t.Fatalf("second lookup: got %d %q %v, want 403 naming 127.0.0.1", code, body, err)
	}
	if n := res.lookups("rebind.test"); n != 2 {
		t.Fatalf("resolver asked %d times for two requests, want 2 (one per decision, never a second lookup)", n)
	}
	evil.mustBeUntouched(t)
}

// TestRedirectChecked: a redirect from an allowed server to a refused one is
// the client's business; following it is a new request, and it is refused.
func TestRedirectChecked(t *testing.T) {
	leakCheck(t)
	a := loopbackCanary(t, "allowed", "127.0.0.1:0")
	b := loopbackCanary(t, "target", "127.0.0.1:0")
	o := policyOpts(t, []string{"127.0.0.1:" + strconv.Itoa(a.port())}, nil)
	s := newStack(t, o)
	for _, to := range []string{
		"http://" + b.addr.String() + "/",
		"http://localhost:" + strconv.Itoa(b.port()) + "/",
		"http://[::ffff:127.0.0.1]:" + strconv.Itoa(b.port()) + "/",
		"http://169.254.169.254/latest/meta-data/",
	} {
		t.Run(to, func(t *testing.T) {
			code, body, err := s.httpGet("http://"+a.addr.String()+"/redirect?to="+to, true)
			if err != nil || code != 403 || !strings.HasPrefix(body, "blocked by airlock egress policy") {
				t.Fatalf("got %d %q %v, want the followed redirect refused with 403", code, body, err)
			}
		})
	}
	b.mustBeUntouched(t)
}

// TestDenyFirst: a deny entry beats an allow entry, for names and for the
// addresses a name resolves to.
func TestDenyFirst(t *testing.T) {
	leakCheck(t)
	c := loopbackCanary(t, "denied", "127.0.0.1:0")
	port := strconv.Itoa(c.port())
	o := policyOpts(t, []string{"127.0.0.0/8:" + port, "*.x.test:" + port}, []string{"bad.x.test", "127.0.0.1"})
	o.Resolver = newResolver(map[string][]string{"ok.x.test": {"127.0.0.1"}, "bad.x.test": {"127.0.0.1"}})
	s := newStack(t, o)
	for _, h := range []string{"bad.x.test", "ok.x.test", "127.0.0.1", "127.1"} {
		t.Run(h, func(t *testing.T) {
			if code, body, _ := s.viaConnect(h + ":" + port); code != 403 {
				t.Fatalf("got %d %q, want 403", code, body)
			}
		})
	}
	c.mustBeUntouched(t)
}

// TestNilCheckDeniesAll documents Options' nil meaning.
func TestNilCheckDeniesAll(t *testing.T) {
	leakCheck(t)
	c := loopbackCanary(t, "nil-check", "127.0.0.1:0")
	s := newStack(t, egress.Options{})
	if code, body, _ := s.viaConnect(c.addr.String()); code != 403 || !strings.Contains(body, "no network access") {
		t.Fatalf("got %d %q, want 403", code, body)
	}
	c.mustBeUntouched(t)
}

// TestNetnsCanary: a server in a network namespace this test makes, on a
// private address, as a server on another machine of the local network.
func TestNetnsCanary(t *testing.T) {
	ns := newNetns(t)
	leakCheck(t)
	c := newCanary(t, "netns", ns.listen(t, hostPort(ns.nsAddr, 0)))
	port := strconv.Itoa(c.port())
	target := c.addr.String()

	// Reachable unconfined: the attempts below would land if not refused.
	if conn, err := net.Dial("tcp", target); err != nil {
		t.Fatalf("the canary in the namespace is not reachable directly: %v", err)
	} else {
		conn.Close()
	}
	// The server counts the connection when it accepts it, which may come
	// after Dial returns; wait for that count before starting from zero, or
	// it lands in the first refused case.
	for deadline := time.Now().Add(10 * time.Second); c.conns.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the canary never counted the direct connection")
		}
	}
	c.conns.Store(0)

	t.Run("refused without an address entry", func(t *testing.T) {
		o := policyOpts(t, []string{"lan.test:" + port, "*.lan.test:" + port}, nil)
		o.Resolver = newResolver(map[string][]string{"lan.test": {ns.nsAddr.String()}, "a.lan.test": {ns.nsAddr.String()}})
		s := newStack(t, o)
		spellings := []string{"lan.test", "a.lan.test", ns.nsAddr.String(), "[::ffff:" + ns.nsAddr.String() + "]"}
		a4 := ns.nsAddr.As4()
		spellings = append(spellings, strconv.Itoa(int(a4[0])<<24|int(a4[1])<<16|int(a4[2])<<8|int(a4[3])))
		for _, h := range spellings {
			if code, body, _ := s.viaConnect(h + ":" + port); code != 403 {
				t.Errorf("%s: got %d %q, want 403", h, code, body)
			}
			if _, err := s.viaSOCKS(strings.Trim(h, "[]") + ":" + port); err == nil {
				t.Errorf("%s: SOCKS got through, want refused", h)
			}
		}
		c.mustBeUntouched(t)
	})
	t.Run("reached with an address entry", func(t *testing.T) {
		o := policyOpts(t, []string{netip.PrefixFrom(ns.nsAddr, 32).String() + ":" + port}, nil)
		s := newStack(t, o)
		code, body, err := s.viaConnect(target)
		if err != nil || code != 200 || !strings.HasPrefix(body, "canary netns") {
			t.Fatalf("got %d %q %v, want the canary", code, body, err)
		}
		if code, _, _ := s.viaConnect(hostPort(ns.hostAddr, c.port())); code != 403 {
			t.Fatalf("the host side of the link: got %d, want 403 (outside the entry)", code)
		}
	})
	t.Run("this host's own address refused even if public", func(t *testing.T) {
		// The host side of the link is one of this machine's addresses.
		// Counted as public, it is still refused: a box must not reach the
		// host's own services through its own address.
		own := newCanary(t, "own", mustListen(t, hostPort(ns.hostAddr, 0)))
		o := policyOpts(t, []string{"own.test:" + strconv.Itoa(own.port())}, nil)
		o.Resolver = newResolver(map[string][]string{"own.test": {ns.hostAddr.String()}})
		o = egress.WithGlobal(o, func(netip.Addr) bool { return true })
		s := newStack(t, o)
		if code, body, _ := s.viaConnect("own.test:" + strconv.Itoa(own.port())); code != 403 {
			t.Fatalf("got %d %q, want 403", code, body)
		}
		own.mustBeUntouched(t)
	})
	t.Run("public name reached, its rebinding refused", func(t *testing.T) {
		// Treat the namespace's address as a public server: a name entry
		// then reaches it, and only it.
		o := policyOpts(t, []string{"public.test:" + port}, nil)
		res := newResolver(map[string][]string{"public.test": {ns.nsAddr.String(), "127.0.0.1"}})
		o.Resolver = res
		o = egress.WithGlobal(o, func(a netip.Addr) bool { return a == ns.nsAddr })
		s := newStack(t, o)
		code, body, err := s.httpGet("http://public.test:"+port+"/", false)
		if err != nil || code != 200 || !strings.Contains(body, "host=public.test:"+port) {
			t.Fatalf("got %d %q %v, want the canary", code, body, err)
		}
		if code, _, _ := s.httpGet("http://public.test:"+port+"/", false); code != 403 {
			t.Fatalf("rebound to loopback: got %d, want 403", code)
		}
	})
}

func mustListen(t *testing.T, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
