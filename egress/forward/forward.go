// Package forward is the half of airlock's egress that runs inside the box.
// The box has only a loopback interface; the in-box init (sandbox/boxinit)
// calls Start, which listens on 127.0.0.1 for HTTP-proxy and SOCKS5 clients
// hands each accepted connection, unread, to the egress proxy through its
// Unix socket that is bound into the box: the client's socket travels as
// SCM_RIGHTS with the box's token (egress/wire), and the proxy talks to the
// client directly. It
// also serves the hidden `__airlock-connect HOST PORT` mode that git and ssh
// use as a ProxyCommand.
//
// For a box without an init the same forwarder runs on the host instead
// (Host, host.go): the box's exec step makes the listeners inside and hands
// them out, and runner serves them.
//
// Only sandbox/boxinit, runner (Host), the binaries that run in a box
// (cmd/airlock-box, cmd/airlock and cmd/airlock-node, for the hidden mode)
// and tests import it.
package forward

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/airlock-run/airlock/egress/wire"
)

// Config says where the proxy is and which ports to offer inside the box.
type Config struct {
	// Socket is the path, inside the box, of the egress proxy's socket.
	Socket string
	// Token is the box's egress token (wire.NewToken).
	Token string
	// HTTPPort and SOCKSPort are the loopback ports to listen on; 0 picks a
	// free port (the returned environment names it).
	HTTPPort, SOCKSPort int
	// Exe is the path, inside the box, of the airlock binary, used in the
	// ssh ProxyCommand. "" means os.Executable().
	Exe string
	// ConnectExe is the path, inside the box, of the airlock binary under the
	// name "airlock-connect" (a second bind of the same file), which git runs
	// as GIT_PROXY_COMMAND with just HOST PORT. "" leaves GIT_PROXY_COMMAND
	// unset: git:// then has no way out, like any tool that ignores proxies.
	ConnectExe string
	// Copy makes the forwarder carry the client's bytes over its own
	// connection to the proxy instead of handing the proxy the client's
	// socket: for a box whose sockets belong to a kernel of its own
	// (gVisor), which cannot pass them to the host.
	Copy bool
	// Serve, when set, is the proxy's own accept loop for a listener of the
	// box's (egress.Proxy.ServeBox): a forwarder on the host, in the
	// proxy's process (Host), gives it the listeners instead of handing
	// each connection over the socket.
	Serve func(ln net.Listener, mode string) error
	// Log receives diagnostics. nil discards them.
	Log *slog.Logger
}

// pingTimeout bounds the check that the socket and token work.
const pingTimeout = 5 * time.Second

// Start checks that the proxy answers on cfg.Socket with cfg.Token, listens
// on 127.0.0.1 for HTTP-proxy and SOCKS5 clients, and hands them to the proxy
// until ctx ends (connections already handed over are the proxy's). It returns the environment the box's programs should get (see Env).
func Start(ctx context.Context, cfg Config) (env []string, err error) {
	f, err := start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return f.env, nil
}

// forwarder is a running forwarder; tests wait for it to stop.
type forwarder struct {
	cfg         Config
	log         *slog.Logger
	http, socks net.Listener
	env         []string

	wg sync.WaitGroup
}

func start(ctx context.Context, cfg Config) (*forwarder, error) {
	if cfg.Socket == "" {
		return nil, errors.New("egress forwarder: no proxy socket given")
	}
	if !wire.ValidToken(cfg.Token) {
		return nil, errors.New("egress forwarder: invalid egress token")
	}
	if cfg.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("egress forwarder: find own binary: %w", err)
		}
		cfg.Exe = exe
	}
	models, err := ping(ctx, cfg.Socket, cfg.Token)
	if err != nil {
		return nil, err
	}
	f := &forwarder{cfg: cfg, log: cfg.Log}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	var lc net.ListenConfig
	if f.http, err = lc.Listen(ctx, "tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.HTTPPort))); err != nil {
		return nil, fmt.Errorf("egress forwarder: listen for HTTP clients: %w", err)
	}
	if f.socks, err = lc.Listen(ctx, "tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.SOCKSPort))); err != nil {
		f.http.Close()
		return nil, fmt.Errorf("egress forwarder: listen for SOCKS clients: %w", err)
	}
	f.env = Env(f.http.Addr().(*net.TCPAddr).Port, f.socks.Addr().(*net.TCPAddr).Port, cfg.Exe, cfg.ConnectExe)
	if models {
		f.env = append(f.env, ModelEnv(f.http.Addr().(*net.TCPAddr).Port)...)
	}
	f.wg.Add(3)
	httpMode, socksMode := wire.ModeHTTPFD, wire.ModeSOCKSFD
	if cfg.Copy {
		httpMode, socksMode = wire.ModeHTTP, wire.ModeSOCKS
	}
	go f.serve(f.http, httpMode)
	go f.serve(f.socks, socksMode)
	go func() {
		defer f.wg.Done()
		<-ctx.Done()
		f.close()
	}()
	return f, nil
}

// Ping checks that the egress proxy answers on socket (a path) with token,
// and reports whether it serves models (ModelEnv is then wanted): what a
// forwarder on the host (Host) asks before the box starts.
func Ping(ctx context.Context, socket, token string) (models bool, err error) {
	return ping(ctx, socket, token)
}

// ping checks the socket and the token before the box starts, so a wrong
// bind or token is an error at start, not a mystery at the first request.
func ping(ctx context.Context, socket, token string) (models bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return false, fmt.Errorf("egress forwarder: reach the egress proxy at %s: %w", socket, err)
	}
	defer c.Close()
	dl, _ := ctx.Deadline()
	c.SetDeadline(dl)
	if _, err := c.Write(wire.Preamble(wire.ModePing, token)); err != nil {
		return false, fmt.Errorf("egress forwarder: talk to the egress proxy: %w", err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if line != "ok\n" && line != "ok models\n" {
		if err == nil {
			err = errors.New("it refused the token")
		}
		return false, fmt.Errorf("egress forwarder: the egress proxy at %s did not accept this box: %v", socket, err)
	}
	return line == "ok models\n", nil
}

func (f *forwarder) close() {
	f.http.Close()
	f.socks.Close()
}

func (f *forwarder) serve(ln net.Listener, mode string) {
	defer f.wg.Done()
	pre := wire.Preamble(mode, f.cfg.Token)
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			if err := f.pass(c, pre); err != nil {
				f.log.Warn("egress forwarder: cannot hand a connection to the proxy", "err", err)
			}
		}()
	}
}

// pass hands the client's socket to the proxy with the preamble and lets go
// of it: from then on the proxy talks to the client directly, so no byte of
// the box's traffic is copied inside the box.
func (f *forwarder) pass(c net.Conn, pre []byte) error {
	if f.cfg.Copy {
		return f.copy(c, pre)
	}
	defer c.Close() // the proxy holds its own reference once the message is sent
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return errors.New("not a TCP connection")
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	up, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: f.cfg.Socket, Net: "unix"})
	if err != nil {
		return err
	}
	defer up.Close()
	up.SetDeadline(time.Now().Add(pingTimeout))
	var werr error
	if err := raw.Control(func(fd uintptr) {
		_, _, werr = up.WriteMsgUnix(pre, syscall.UnixRights(int(fd)), nil)
	}); err != nil {
		return err
	}
	return werr
}

// copy carries the client's bytes to the proxy and back over a connection
// of the forwarder's own, opened with the preamble, until both sides are
// done.
func (f *forwarder) copy(c net.Conn, pre []byte) error {
	defer c.Close()
	up, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: f.cfg.Socket, Net: "unix"})
	if err != nil {
		return err
	}
	defer up.Close()
	if _, err := up.Write(pre); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		io.Copy(up, c)
		up.CloseWrite() // the client is done sending
		close(done)
	}()
	_, err = io.Copy(c, up)
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	c.SetReadDeadline(time.Now()) // unblock the other direction
	<-done
	return err
}

// ModelEnv points the usual model SDKs at the model proxy behind the HTTP
// port (egress.ModelPrefix); the keys they must send are not theirs, so
// each gets a stand-in the proxy replaces.
func ModelEnv(httpPort int) []string {
	base := "http://127.0.0.1:" + strconv.Itoa(httpPort) + "/airlock/models/"
	return []string{
		"OPENAI_BASE_URL=" + base + "openai/v1",
		"ANTHROPIC_BASE_URL=" + base + "anthropic",
		"OPENAI_API_KEY=airlock-model-proxy", "ANTHROPIC_API_KEY=airlock-model-proxy",
	}
}

// Env returns the environment that points a box's programs at the
// forwarder's loopback ports: the standard proxy variables in both cases,
// an empty NO_PROXY (nothing bypasses the proxy; there is nothing to bypass
// to), and the settings of tools that ignore the standard ones:
//
//   - npm and yarn read npm_config_proxy / npm_config_https_proxy and
//     YARN_HTTP(S)_PROXY;
//   - pip reads PIP_PROXY;
//   - the JVM reads none of the variables; JAVA_TOOL_OPTIONS sets its
//     http(s).proxyHost/Port and socksProxyHost/Port system properties;
//   - Node's built-in fetch and http honour the variables only with
//     NODE_USE_ENV_PROXY=1, on Node 24 (and 22.21) and later. Node 20 ignores
//     it: there fetch has no route out and fails at once (the box has no
//     network), while libraries that read HTTP_PROXY themselves still work;
//   - git over SSH runs ssh with a ProxyCommand served by airlock itself
//     (GIT_SSH_COMMAND), and git:// uses GIT_PROXY_COMMAND when connectExe
//     is given.
//
// AIRLOCK_HTTP_PROXY names the HTTP port for the `__airlock-connect` mode, so
// a program that rewrites HTTP_PROXY cannot misdirect it.
func Env(httpPort, socksPort int, exe, connectExe string) []string {
	h := "127.0.0.1:" + strconv.Itoa(httpPort)
	s := "127.0.0.1:" + strconv.Itoa(socksPort)
	httpURL := "http://" + h
	env := []string{
		"HTTP_PROXY=" + httpURL, "http_proxy=" + httpURL,
		"HTTPS_PROXY=" + httpURL, "https_proxy=" + httpURL,
		"ALL_PROXY=socks5h://" + s, "all_proxy=socks5h://" + s,
		"NO_PROXY=", "no_proxy=",
		"npm_config_proxy=" + httpURL, "npm_config_https_proxy=" + httpURL,
		"YARN_HTTP_PROXY=" + httpURL, "YARN_HTTPS_PROXY=" + httpURL,
		"PIP_PROXY=" + httpURL,
		"JAVA_TOOL_OPTIONS=-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=" + strconv.Itoa(httpPort) +
			" -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=" + strconv.Itoa(httpPort) +
			" -DsocksProxyHost=127.0.0.1 -DsocksProxyPort=" + strconv.Itoa(socksPort) +
			" -Dhttp.nonProxyHosts=",
		"NODE_USE_ENV_PROXY=1",
		"GIT_SSH_COMMAND=ssh -o ProxyCommand=" + shellQuote(shellQuote(exe)+" "+ConnectArg+" %h %p"),
		"AIRLOCK_HTTP_PROXY=" + h,
	}
	if connectExe != "" {
		env = append(env, "GIT_PROXY_COMMAND="+connectExe)
	}
	return env
}

// shellQuote quotes s for a POSIX shell (git runs GIT_SSH_COMMAND through one,
// and ssh runs ProxyCommand through another).
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
