package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/wiring"
	"github.com/airlock-run/airlock/mcp/serve"
	"github.com/airlock-run/airlock/offload"
)

const mcpServeUsage = "[--policy FILE] [--workdir DIR] [--mode observe|fix] [--http ADDR] [--sandbox auto|off|1|2]"

const mcpServeLong = `Serve airlock's own tools over MCP: exec (argv, or a shell string where the
policy's shell.raw allows), read_file, write_file, list_dir, search and
read_result. Every call is decided by the policy (as 'airlock run' decides),
escalations go to the person at the MCP client (elicitation, when the client
supports it and --elicit is not false) or through 'airlock approvals', and
are denied at the timeout, commands and file tools run in the sandbox, and writes happen only
in fix mode. A refusal is a JSON-RPC error with code POLICY_DENIED and a
reason. Every tool takes view, budget and query to fit its answer; an answer
over the offload threshold is kept in the file store and the model gets a
stub to read parts of with read_result.

MCP speaks on standard input and output unless --http ADDR is given; then it
is MCP's streamable HTTP transport at http://ADDR/mcp, refusing any request
whose Host or Origin is not a loopback name (or one named with --allow-host).

` + storeHelp

func mcpServeCmd() *Command {
	return &Command{Name: "serve", Usage: mcpServeUsage, Short: "serve airlock's own tools over MCP", Long: mcpServeLong,
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock mcp serve", mcpServeUsage, mcpServeLong)
			kf := addKernelFlags(fs, "the calls")
			httpAddr := fs.String("http", "", "serve streamable HTTP on `addr` (host:port) instead of standard input and output")
			allowHost := fs.String("allow-host", "", "comma-separated host `names` accepted in Host/Origin besides loopback")
			threshold := fs.String("offload", "", "offload results over N tokens, or off (default 10000)")
			elicit := fs.Bool("elicit", true, "put escalations to the person at the MCP client (elicitation) when it supports it; false: only 'airlock approvals'")
			sf := addStoreFlags(fs)
			kf.store = sf
			if err := ParseFlags(fs, args); err != nil {
				return err
			}
			if fs.NArg() > 0 {
				return usagef("unexpected argument %q (see --help)", fs.Arg(0))
			}
			limit, err := offload.Threshold(*threshold, 0, 0)
			if err != nil {
				return usagef("--offload: %v", err)
			}
			st, sc, err := sf.open(env)
			if err != nil {
				return err
			}
			defer st.Close()
			// Over stdio the terminal carries the protocol, never a person.
			k, err := kf.build(env, "airlock mcp serve", env.IsTerminal && *httpAddr != "", func(c *wiring.Config) {
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
			if *httpAddr == "" {
				return srv.ServeStdio(ctx, io.NopCloser(env.Stdin), nopWriteCloser{env.Stdout})
			}
			return serveMCPHTTP(ctx, env, *httpAddr, splitList(*allowHost), srv.Handler(splitList(*allowHost)))
		}}
}

// serveMCPHTTP serves h at /mcp on addr until ctx ends. addr must be a
// loopback address unless a person named other host names to accept.
func serveMCPHTTP(ctx context.Context, env *Env, addr string, allow []string, h http.Handler) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("airlock mcp serve: --http %q: want host:port, such as 127.0.0.1:8931", addr)
	}
	if ip := net.ParseIP(host); len(allow) == 0 && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return usagef("airlock mcp serve: --http %q: only a loopback address is served unless --allow-host names the hosts clients use", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "airlock mcp serve: --http")
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(env.Stderr, "airlock: serving MCP on http://%s/mcp\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return errs.Wrap(errs.Unavailable, err, "airlock mcp serve: --http")
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		err := hs.Shutdown(sctx)
		if errors.Is(err, context.DeadlineExceeded) {
			err = hs.Close()
		}
		return err
	}
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
