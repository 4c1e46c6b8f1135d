package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-run/airlock/approvals"
	"github.com/airlock-run/airlock/audit"
	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/wiring"
	"github.com/airlock-run/airlock/mcp/gateway"
	"github.com/airlock-run/airlock/mediator"
	"github.com/airlock-run/airlock/offload"
	"github.com/airlock-run/airlock/policy"
	"github.com/airlock-run/airlock/sandbox"
)

// mcpCmd groups airlock's MCP entry points: serve (airlock's own tools) and
// wrap (a gateway in front of another MCP server).
func mcpCmd() *Command {
	return &Command{Name: "mcp", Usage: "COMMAND [ARGS]", Short: "MCP server and gateway",
		Sub: []*Command{mcpServeCmd(), mcpWrapCmd()}}
}

const mcpWrapUsage = "[flags] -- CMD [ARG...]"

const mcpWrapLong = `Start the MCP server CMD (stdio) inside a box made from the policy (its files;
its network only through the egress proxy) and serve it to an MCP client on
standard input and output, or over streamable HTTP with --http ADDR (loopback
only; one boxed server per session).

Every tools/call is decided by the policy's tools section before it reaches
the server (tool names as listed, or PREFIX.name with --name PREFIX); a denied
tool is left out of tools/list and a call to it anyway is refused with a JSON-RPC
error (code -32001) whose data is {"code":"POLICY_DENIED","category":"tools",
"reason":...}. Tool definitions are pinned when first seen (in the user's state
directory); a changed one is blocked until a person approves it. Results too big
for a model are kept in the file store and read back with read_result. Everything
else passes through unchanged.

CMD itself is decided as a command by the policy's shell section.`

func mcpWrapCmd() *Command {
	return &Command{Name: "wrap", Usage: mcpWrapUsage, Short: "run another MCP server in a box and mediate its tools", Long: mcpWrapLong,
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock mcp wrap", mcpWrapUsage, mcpWrapLong)
			kf := addKernelFlags(fs, "the server")
			httpAddr := fs.String("http", "", "serve streamable HTTP on `ADDR` (a loopback address such as 127.0.0.1:8931) instead of stdio")
			prefix := fs.String("name", "", "decide tools as `PREFIX`.tool (default: by their bare names)")
			idle := fs.Duration("session-idle", 30*time.Minute, "with --http, end a session (and its server) idle this long (0: never)")
			callTimeout := fs.Duration("call-timeout", 10*time.Minute, "answer a request the server has not answered within this long with an error (0: wait)")
			threshold := fs.String("offload", "", `offload results heavier than this many tokens ("off" keeps all inline; default 10000)`)
			pinsDir := fs.String("pins", "", "`directory` of pinned tool definitions (default: $XDG_STATE_HOME/airlock/mcp-pins)")
			sf := addStoreFlags(fs)
			if err := ParseFlags(fs, args); err != nil {
				return err
			}
			argv := fs.Args()
			if len(argv) == 0 {
				return usagef("airlock mcp wrap: no server command (airlock mcp wrap %s)", mcpWrapUsage)
			}
			tier, err := kf.tier("airlock mcp wrap")
			if err != nil {
				return err
			}
			if *prefix != "" {
				*prefix = strings.TrimSuffix(*prefix, ".") + "."
			}
			th, err := offload.Threshold(*threshold, 0, 0)
			if err != nil {
				return usagef("airlock mcp wrap: --offload: %v", err)
			}
			var ln net.Listener
			if *httpAddr != "" {
				if ln, err = listenLoopback(*httpAddr); err != nil {
					return err
				}
				defer ln.Close()
			}

			k, err := kf.build(env, env.IsTerminal)
			if err != nil {
				return err
			}
			defer k.Close()
			checker, err := k.Kernel.Policy().Compile(k.World)
			if err != nil {
				return err
			}
			dir := *pinsDir
			if dir == "" {
				if dir, err = stateDir(env); err != nil {
					return err
				}
				dir = filepath.Join(dir, "mcp-pins")
			}
			pins, err := gateway.OpenPins(gateway.PinsFile(absFrom(env, dir), argv))
			if err != nil {
				return err
			}
			o := gateway.Options{
				Start:  boxedServer(k, env, argv, tier),
				Decide: k.Decide,
				Listed: func(tool string) bool {
					d := checker.Tool(tool, nil)
					// A tool denied only because its arguments did not match
					// may still be called with other arguments: keep it listed.
					return d.Verdict != policy.Deny || strings.HasSuffix(d.Rule, ".else")
				},
				Prefix:      *prefix,
				PolicyTools: func() map[string]policy.ToolRule { return k.Kernel.Policy().Tools },
				Audit:       k.Audit.Append,
				Pins:        pins,
				ApprovePin:  pinApprover(k),
				// Escalations go to the person at the client when it can
				// show an elicitation, else to the broker and terminal.
				WithApprover: mediator.WithApprover,
				CallTimeout:  *callTimeout,
				SessionIdle:  *idle,
				Log:          env.Log,
			}
			if th > 0 {
				st, sc, err := sf.open(env)
				if err != nil {
					return err
				}
				defer st.Close()
				o.Offloader, o.Scope = &offload.Offloader{Store: st, Threshold: th}, sc
			}
			g, err := gateway.New(o)
			if err != nil {
				return err
			}
			if ln == nil {
				return g.ServeStdio(ctx, env.Stdin, env.Stdout)
			}
			return serveHTTP(ctx, env, g, ln)
		}}
}

// boxedServer starts argv through the kernel, exactly as `airlock run`
// would: decided as a command, confined by the policy's box, its network
// through egress; cancelling ctx tears the box down.
func boxedServer(k *wiring.Kernel, env *Env, argv []string, tier sandbox.Tier) gateway.Starter {
	return func(ctx context.Context) (*gateway.Server, error) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan error, 1)
		go func() {
			_, err := k.Exec(ctx, mediator.Call{Kind: mediator.KindExec, Argv: argv}, mediator.ExecOptions{
				Tier: tier, Stdin: inR, Stdout: outW, Stderr: env.Stderr, Environ: env.Environ, Exe: env.Exe,
				Warn: func(s string) { fmt.Fprintf(env.Stderr, "airlock: %s\n", s) },
				// The server lives as long as the client's session; the
				// session's end (ctx) tears its box down.
				Session: true,
			})
			outW.Close()
			inR.Close()
			done <- err
		}()
		return &gateway.Server{Stdin: inW, Stdout: outR, Done: done}, nil
	}
}

// pinApprover asks a person, through the approvals broker, whether a
// changed tool definition may be used; no answer by the policy's escalation
// timeout is a refusal.
func pinApprover(k *wiring.Kernel) func(ctx context.Context, old, new gateway.Definition) error {
	return func(ctx context.Context, old, new gateway.Definition) error {
		timeout := k.Kernel.Policy().Escalation.Timeout
		if timeout <= 0 {
			timeout = mediator.DefaultEscalationTimeout
		}
		o := k.Broker.Ask(ctx, approvals.Request{Kind: "tool", Tool: new.Name, Category: string(policy.CatTools),
			Args:   gateway.ApprovalArgs(old, new),
			Reason: fmt.Sprintf("the definition of the MCP tool %s changed since it was pinned", new.Name), NoGrant: "a changed definition is approved once"},
			timeout)
		var err error
		switch o.Answer {
		case approvals.AllowOnce, approvals.AllowAlways:
		case approvals.Timeout:
			err = &errs.Denial{Code: errs.CodeEscalationTimeout, Category: string(policy.CatTools), Reason: fmt.Sprintf("no approval came within %s", timeout)}
		case approvals.Deny:
			err = &errs.Denial{Code: errs.CodePolicyDenied, Category: string(policy.CatTools), Reason: "a person refused it"}
		default:
			err = &errs.Denial{Code: errs.CodeEscalationError, Category: string(policy.CatTools), Reason: "the approval could not be obtained"}
		}
		// The answer is kept like any decision; one that cannot be kept
		// does not unblock the tool.
		verdict, reason := "allow", "a person approved the changed definition"
		if err != nil {
			verdict, reason = "deny", err.(*errs.Denial).Reason
		}
		if aerr := k.Audit.Append(audit.Record{Kind: "decision", Verdict: verdict, Rule: "mcp.pins", Reason: reason,
			Decider: o.Decider, Fields: map[string]any{"category": "tools", "tool": new.Name,
				"pinned_digest": old.Digest(), "new_digest": new.Digest()}}); aerr != nil && err == nil {
			err = errs.Wrap(errs.Unavailable, aerr, "audit: the approval could not be recorded, so the tool stays blocked")
		}
		return err
	}
}

// listenLoopback listens on addr, which must name a loopback address: the
// gateway is for this machine's agents, never the network.
func listenLoopback(addr string) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, usagef("airlock mcp wrap: --http %q: want HOST:PORT", addr)
	}
	if _, err := strconv.Atoi(port); err != nil {
		return nil, usagef("airlock mcp wrap: --http %q: want a numeric port", addr)
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return nil, usagef("airlock mcp wrap: --http %q: only a loopback address (127.0.0.1, ::1) is served", addr)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), port))
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "airlock mcp wrap: --http")
	}
	return ln, nil
}

func serveHTTP(ctx context.Context, env *Env, g *gateway.Gateway, ln net.Listener) error {
	h := g.Handler(ctx)
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(env.Stderr, "airlock: MCP gateway on http://%s/mcp\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			h.Close()
			return errs.Wrap(errs.Unavailable, err, "airlock mcp wrap: --http")
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	h.Close()
	return nil
}

// stateDir is airlock's directory of the user's state.
func stateDir(env *Env) (string, error) {
	if d := env.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "airlock"), nil
	}
	if h := env.Getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "airlock"), nil
	}
	return "", errs.Unavailablef("mcp pins: neither XDG_STATE_HOME nor HOME is an absolute path (set --pins)")
}
