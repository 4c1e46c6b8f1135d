package mcpcli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/cli"
	"github.com/airlock-run/airlock/internal/wiring"
	"github.com/airlock-run/airlock/mcp/httpfront"
	"github.com/airlock-run/airlock/mcp/serve"
	"github.com/airlock-run/airlock/offload"
)

// serveCmd is `airlock mcp serve`: airlock's own tools over MCP, on standard
// input and output or over HTTP.
func serveCmd(ctx context.Context, env *cli.Env, args []string) error {
	fs := cli.NewFlags(env, "airlock mcp serve", cli.MCPServeUsage, cli.MCPServeHelp)
	kf := cli.AddKernelFlags(fs, "the calls")
	hf := addHTTPFlags(fs)
	threshold, elicit := addResultFlags(fs)
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Usagef("unexpected argument %q (see --help)", fs.Arg(0))
	}
	ep, err := hf.open(fs, "airlock mcp serve")
	if err != nil {
		return err
	}
	if ep != nil {
		defer ep.ln.Close()
	}
	limit, err := offload.Threshold(*threshold, 0, 0)
	if err != nil {
		return cli.Usagef("--offload: %v", err)
	}
	st, sc, err := kf.OpenStore(env)
	if err != nil {
		return err
	}
	defer st.Close()
	// Over stdio the terminal carries the protocol, never a person.
	k, err := kf.Build(env, "airlock mcp serve", env.IsTerminal && ep != nil, func(c *wiring.Config) {
		c.Offloader, c.Scope = &offload.Offloader{Store: st, Threshold: limit}, sc
	})
	if err != nil {
		return err
	}
	defer k.Close()
	srv, err := serve.New(serve.Options{Kernel: k.Kernel, Log: env.Log, Elicit: *elicit})
	if err != nil {
		return err
	}
	if ep == nil {
		return srv.ServeStdio(ctx, io.NopCloser(env.Stdin), nopWriteCloser{env.Stdout})
	}
	ep.o.Log = env.Log
	front := srv.Handler(ctx, ep.o)
	return ep.serve(ctx, env, "serving MCP", front, front.Close)
}

// httpFlags are the flags of MCP's streamable HTTP transport, the same for
// mcp serve and mcp wrap: where to listen, the bearer token, the host names
// accepted besides loopback, and the caps on what clients may start.
type httpFlags struct {
	addr, tokenFile, allowHost                               *string
	noAuth                                                   *bool
	maxSessions, maxClientSessions, maxBoxes, maxClientBoxes *int
	idle                                                     *time.Duration
}

// addHTTPFlags defines the HTTP transport's flags on fs.
func addHTTPFlags(fs *flag.FlagSet) *httpFlags {
	return &httpFlags{
		addr:      fs.String("http", "", "serve MCP's streamable HTTP transport on `ADDR` (host:port, such as 127.0.0.1:8931) instead of standard input and output"),
		tokenFile: fs.String(httpfront.FlagTokenFile, "", "with --http, the bearer token clients must send is in `FILE` (mode 600, yours); default: a new token, printed once"),
		noAuth:    fs.Bool(httpfront.FlagNoAuth, false, "with --http on a loopback address, accept requests without a bearer token (any local process may use the endpoint)"),
		allowHost: fs.String(httpfront.FlagAllowHost, "", "with --http, comma-separated host `names` accepted in Host/Origin besides loopback (and needed to listen on another address)"),
		maxSessions: fs.Int(httpfront.FlagMaxSessions, httpfront.DefaultMaxSessions,
			"with --http, the most sessions open at once, in all"),
		maxClientSessions: fs.Int(httpfront.FlagMaxClientSessions, httpfront.DefaultMaxClientSessions,
			"with --http, the most sessions open at once for one client (remote address)"),
		maxBoxes: fs.Int(httpfront.FlagMaxBoxes, httpfront.DefaultMaxBoxes,
			"with --http, the most boxes running at once for clients, in all (wrap: one per session; serve: one per running call)"),
		maxClientBoxes: fs.Int(httpfront.FlagMaxClientBoxes, httpfront.DefaultMaxClientBoxes,
			"with --http, the most boxes running at once for one client"),
		idle: fs.Duration(httpfront.FlagSessionIdle, httpfront.DefaultSessionIdle,
			"with --http, end a session (and its boxes) no request has touched this long (0: never)"),
	}
}

// httpEndpoint is what the flags gave: the listener and the front's
// options (with the token).
type httpEndpoint struct {
	ln net.Listener
	o  httpfront.Options
	// generated is true when airlock made the token (it is printed once).
	generated bool
}

// open checks the flags and listens; it returns nil without --http. Every
// mistake in the flags is a usage error of cmd.
func (h *httpFlags) open(fs *flag.FlagSet, cmd string) (*httpEndpoint, error) {
	if *h.addr == "" {
		var set []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case httpfront.FlagTokenFile, httpfront.FlagNoAuth, httpfront.FlagAllowHost, httpfront.FlagMaxSessions,
				httpfront.FlagMaxClientSessions, httpfront.FlagMaxBoxes, httpfront.FlagMaxClientBoxes:
				set = append(set, "--"+f.Name)
			}
		})
		if len(set) > 0 {
			return nil, cli.Usagef("%s: %s: only with --http ADDR", cmd, strings.Join(set, ", "))
		}
		return nil, nil
	}
	host, port, err := net.SplitHostPort(*h.addr)
	if err != nil {
		return nil, cli.Usagef("%s: --http %q: want HOST:PORT, such as 127.0.0.1:8931", cmd, *h.addr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return nil, cli.Usagef("%s: --http %q: want a numeric port", cmd, *h.addr)
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	ip := net.ParseIP(host)
	loopback := ip != nil && ip.IsLoopback()
	allow := splitList(*h.allowHost)
	if !loopback && len(allow) == 0 {
		return nil, cli.Usagef("%s: --http %q: only a loopback address (127.0.0.1, ::1) is served unless --%s names the hosts clients use",
			cmd, *h.addr, httpfront.FlagAllowHost)
	}
	if *h.noAuth && !loopback {
		return nil, cli.Usagef("%s: --%s: only on a loopback address; on %q clients must send the bearer token", cmd, httpfront.FlagNoAuth, *h.addr)
	}
	if *h.noAuth && *h.tokenFile != "" {
		return nil, cli.Usagef("%s: --%s and --%s: give one of them", cmd, httpfront.FlagNoAuth, httpfront.FlagTokenFile)
	}
	for _, n := range []struct {
		name string
		v    int
	}{{httpfront.FlagMaxSessions, *h.maxSessions}, {httpfront.FlagMaxClientSessions, *h.maxClientSessions},
		{httpfront.FlagMaxBoxes, *h.maxBoxes}, {httpfront.FlagMaxClientBoxes, *h.maxClientBoxes}} {
		if n.v < 1 {
			return nil, cli.Usagef("%s: --%s %d: want at least 1", cmd, n.name, n.v)
		}
	}
	if *h.idle < 0 {
		return nil, cli.Usagef("%s: --%s %s: want a duration of 0 (never) or more", cmd, httpfront.FlagSessionIdle, *h.idle)
	}
	idle := *h.idle
	if idle == 0 {
		idle = -1 // never
	}
	e := &httpEndpoint{o: httpfront.Options{Name: strings.TrimPrefix(cmd, "airlock "), NoAuth: *h.noAuth, AllowHosts: allow,
		MaxSessions: *h.maxSessions, MaxClientSessions: *h.maxClientSessions,
		MaxBoxes: *h.maxBoxes, MaxClientBoxes: *h.maxClientBoxes, SessionIdle: idle}}
	switch {
	case *h.noAuth:
	case *h.tokenFile != "":
		if e.o.Token, err = httpfront.ReadTokenFile(*h.tokenFile); err != nil {
			return nil, fmt.Errorf("%s: %w", cmd, err)
		}
	default:
		if e.o.Token, err = httpfront.NewToken(); err != nil {
			return nil, fmt.Errorf("%s: %w", cmd, err)
		}
		e.generated = true
	}
	if ip != nil {
		host = ip.String()
	}
	if e.ln, err = net.Listen("tcp", net.JoinHostPort(host, port)); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "%s: --http", cmd)
	}
	return e, nil
}

// serve serves h at /mcp until ctx ends, then ends every session (end).
// It says on stderr where, and how clients authenticate: a token airlock
// made is printed here, once.
func (e *httpEndpoint) serve(ctx context.Context, env *cli.Env, banner string, h http.Handler, end func()) error {
	defer e.ln.Close()
	name := e.o.Name
	switch {
	case e.o.NoAuth:
		fmt.Fprintf(env.Stderr, "airlock: %s: --%s: requests need no token; any local process may use this endpoint\n", name, httpfront.FlagNoAuth)
	case e.generated:
		fmt.Fprintf(env.Stderr, "airlock: %s: token: %s\n", name, e.o.Token)
		fmt.Fprintf(env.Stderr, "airlock: %s: clients send it with every request as the header \"Authorization: Bearer <token>\"; it is not shown again (--%s FILE chooses it)\n",
			name, httpfront.FlagTokenFile)
	default:
		fmt.Fprintf(env.Stderr, "airlock: %s: clients send the token of --%s as the header \"Authorization: Bearer TOKEN\"\n", name, httpfront.FlagTokenFile)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(env.Stderr, "airlock: %s on http://%s/mcp\n", banner, e.ln.Addr())
	done := make(chan error, 1)
	go func() { done <- hs.Serve(e.ln) }()
	select {
	case err := <-done:
		end()
		return errs.Wrap(errs.Unavailable, err, "airlock %s: --http", name)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); errors.Is(err, context.DeadlineExceeded) {
		hs.Close()
	}
	end()
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// addResultFlags defines the flags mcp serve and mcp wrap share beside the
// kernel's and HTTP's: where results too heavy for a model go, and who is
// asked about an escalation.
func addResultFlags(fs *flag.FlagSet) (threshold *string, elicit *bool) {
	threshold = fs.String("offload", "", `offload results heavier than this many tokens ("off" keeps all inline; default 10000)`)
	elicit = fs.Bool("elicit", true, "put escalations to the person at the MCP client (elicitation) when it supports it; false: only 'airlock approvals'")
	return threshold, elicit
}
