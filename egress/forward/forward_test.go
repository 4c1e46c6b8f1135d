package forward

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlock-run/airlock/egress"
	"github.com/airlock-run/airlock/egress/wire"
)

// proxyFor starts an egress proxy that allows exactly allow (host:port) and
// an echo server, returning the socket, token and echo address.
func proxyFor(t *testing.T) (socket, token string, echo netip.AddrPort) {
	t.Helper()
	_, socket, token, echo = newProxy(t)
	return socket, token, echo
}

// newProxy is proxyFor with the proxy itself.
func newProxy(t *testing.T) (px *egress.Proxy, socket, token string, echo netip.AddrPort) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	echo = netip.MustParseAddrPort(ln.Addr().String())
	token, _ = wire.NewToken()
	p, err := egress.New(egress.Options{
		Token: token,
		Check: func(_ context.Context, host string, port int) egress.Verdict {
			return egress.Verdict{Allow: host == "127.0.0.1" && port == int(echo.Port()), Rule: "test"}
		},
		AllowAddr: func(a netip.Addr, port int) (bool, string) {
			return a == echo.Addr() && port == int(echo.Port()), "test"
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	pln, path, dir, err := egress.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(pln)
	t.Cleanup(func() { p.Close(); os.RemoveAll(dir) })
	return p, path, token, echo
}

func TestEnv(t *testing.T) {
	got := Env(3128, 1080, "/opt/air lock/airlock", "/run/airlock/airlock-connect")
	want := []string{
		"HTTP_PROXY=http://127.0.0.1:3128", "http_proxy=http://127.0.0.1:3128",
		"HTTPS_PROXY=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128",
		"ALL_PROXY=socks5h://127.0.0.1:1080", "all_proxy=socks5h://127.0.0.1:1080",
		"NO_PROXY=", "no_proxy=",
		"npm_config_proxy=http://127.0.0.1:3128", "npm_config_https_proxy=http://127.0.0.1:3128",
		"YARN_HTTP_PROXY=http://127.0.0.1:3128", "YARN_HTTPS_PROXY=http://127.0.0.1:3128",
		"PIP_PROXY=http://127.0.0.1:3128",
		"JAVA_TOOL_OPTIONS=-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=3128 -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=3128 -DsocksProxyHost=127.0.0.1 -DsocksProxyPort=1080 -Dhttp.nonProxyHosts=",
		"NODE_USE_ENV_PROXY=1",
		`GIT_SSH_COMMAND=ssh -o ProxyCommand=''\''/opt/air lock/airlock'\'' __airlock-connect %h %p'`,
		"AIRLOCK_HTTP_PROXY=127.0.0.1:3128",
		"GIT_PROXY_COMMAND=/run/airlock/airlock-connect",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Env mismatch (-want +got):\n%s", diff)
	}
}

func TestStartRefusesWrongTokenOrSocket(t *testing.T) {
	socket, _, _ := proxyFor(t)
	other, _ := wire.NewToken()
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"wrong token", Config{Socket: socket, Token: other, Exe: "/a"}, "did not accept this box"},
		{"no socket", Config{Socket: socket + ".missing", Token: other, Exe: "/a"}, "reach the egress proxy"},
		{"bad token", Config{Socket: socket, Token: "x y\n", Exe: "/a"}, "invalid egress token"},
		{"empty", Config{}, "no proxy socket"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Start(context.Background(), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestConnectMode runs the ProxyCommand mode against a running forwarder:
// an allowed destination echoes stdin back on stdout, a refused one prints
// the refusal on stderr and exits 1.
func TestConnectMode(t *testing.T) {
	socket, token, echo := proxyFor(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, err := start(ctx, Config{Socket: socket, Token: token, Exe: "/airlock"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); f.wg.Wait() }()
	env := map[string]string{}
	for _, kv := range f.env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	getenv := func(k string) string { return env[k] }

	t.Run("allowed", func(t *testing.T) {
		var out, errOut bytes.Buffer
		code := connect([]string{"/airlock", ConnectArg, echo.Addr().String(), strconv.Itoa(int(echo.Port()))},
			getenv, strings.NewReader("SSH-2.0-test\r\n"), &out, &errOut)
		if code != 0 || out.String() != "SSH-2.0-test\r\n" {
			t.Fatalf("got exit %d, stdout %q, stderr %q; want 0 and the echo", code, out.String(), errOut.String())
		}
	})
	t.Run("as airlock-connect", func(t *testing.T) {
		var out, errOut bytes.Buffer
		code := connect([]string{"/run/airlock/airlock-connect", echo.Addr().String(), strconv.Itoa(int(echo.Port()))},
			getenv, strings.NewReader("git"), &out, &errOut)
		if code != 0 || out.String() != "git" {
			t.Fatalf("got exit %d, stdout %q, stderr %q; want 0 and the echo", code, out.String(), errOut.String())
		}
	})
	t.Run("refused", func(t *testing.T) {
		var out, errOut bytes.Buffer
		code := connect([]string{"/airlock", ConnectArg, "github.com", "22"}, getenv, strings.NewReader(""), &out, &errOut)
		want := "airlock: blocked by airlock egress policy: github.com:22 not in the network allowlist\n"
		if code != 1 || errOut.String() != want {
			t.Fatalf("got exit %d, stderr %q; want 1 and %q", code, errOut.String(), want)
		}
	})
	t.Run("usage", func(t *testing.T) {
		var out, errOut bytes.Buffer
		if code := connect([]string{"/airlock", ConnectArg, "-oProxyCommand=x", "22"}, getenv, nil, &out, &errOut); code != 2 {
			t.Fatalf("got exit %d, want 2 for an option-like host", code)
		}
	})
	if !IsConnect([]string{"x", ConnectArg}) || !IsConnect([]string{"/bin/airlock-connect"}) || IsConnect([]string{"airlock", "run"}) {
		t.Fatal("IsConnect misreads its arguments")
	}
}

// TestForwarderStops: cancelling the context closes the listeners and all
// goroutines return; connections already handed to the proxy are its own.
func TestForwarderStops(t *testing.T) {
	socket, token, echo := proxyFor(t)
	ctx, cancel := context.WithCancel(context.Background())
	f, err := start(ctx, Config{Socket: socket, Token: token, Exe: "/airlock"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", f.http.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "CONNECT "+echo.String()+" HTTP/1.1\r\n\r\n")
	buf := make([]byte, 64)
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if n, err := c.Read(buf); err != nil || !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 200") {
		t.Fatalf("got %q %v, want 200", buf[:n], err)
	}
	cancel()
	f.wg.Wait()
	// The connection was handed to the proxy; it lives on there.
	io.WriteString(c, "still here")
	if n, err := io.ReadFull(c, buf[:10]); err != nil || string(buf[:n]) != "still here" {
		t.Fatalf("handed-over tunnel after the forwarder stopped: got %q %v, want the echo", buf[:n], err)
	}
	if _, err := net.Dial("tcp", f.http.Addr().String()); err == nil {
		t.Fatal("the forwarder still accepts after its context ended")
	}
}
