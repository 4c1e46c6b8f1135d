package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/wiring"
	"github.com/airlock-run/airlock/mcp/gateway"
	"github.com/airlock-run/airlock/mediator"
	"github.com/airlock-run/airlock/offload"
	"github.com/airlock-run/airlock/policy"
)

// mcpCmd groups airlock's MCP entry points: serve (airlock's own tools) and
// wrap (a gateway in front of another MCP server).
func mcpCmd() *Command {
	return &Command{Name: "mcp", Usage: "COMMAND [ARGS]", Short: "MCP server and gateway",
		Sub: []*Command{mcpServeCmd(), mcpWrapCmd()}}
}

const mcpWrapUsage = "[flags] [--http ADDR [--token-file FILE | --no-auth] ...] -- CMD [ARG...]"

const mcpWrapLong = `Start the MCP server CMD (stdio) inside a box made from the policy (its files;
its network only through the egress proxy) and serve it to an MCP client on
standard input and output, or over streamable HTTP with --http ADDR (one
boxed server per session).

Every tools/call is decided by the policy's tools section before it reaches
the server (tool names as listed, or PREFIX.name with --name PREFIX); a denied
tool is left out of tools/list and a call to it anyway is refused with a JSON-RPC
error (code -32001) whose data is {"code":"POLICY_DENIED","category":"tools",
"reason":...}. Tool definitions are pinned when first seen (in the user's state
directory); a changed one is blocked until a person approves it. Results too big
for a model are kept in the file store and read back with read_result. Everything
else passes through unchanged.

CMD itself is decided as a command by the policy's shell section.

` + httpHelp

func mcpWrapCmd() *Command {
	return &Command{Name: "wrap", Usage: mcpWrapUsage, Short: "run another MCP server in a box and mediate its tools", Long: mcpWrapLong,
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock mcp wrap", mcpWrapUsage, mcpWrapLong)
			kf := addKernelFlags(fs, "the server")
			hf := addHTTPFlags(fs)
			prefix := fs.String("name", "", "decide tools as `PREFIX`.tool (default: by their bare names)")
			callTimeout := fs.Duration("call-timeout", 10*time.Minute, "answer a request the server has not answered within this long with an error (0: wait)")
			threshold, elicit := addResultFlags(fs)
			pinsDir := fs.String("pins", "", "`directory` of pinned tool definitions (default: $XDG_STATE_HOME/airlock/mcp-pins)")
			sf := addStoreFlags(fs)
			kf.store = sf
			if err := ParseFlags(fs, args); err != nil {
				return err
			}
			argv := fs.Args()
			if len(argv) == 0 {
				return usagef("no server command (airlock mcp wrap %s)", mcpWrapUsage)
			}
			if *prefix != "" {
				*prefix = strings.TrimSuffix(*prefix, ".") + "."
			}
			th, err := offload.Threshold(*threshold, 0, 0)
			if err != nil {
				return usagef("--offload: %v", err)
			}
			ep, err := hf.open(fs, "airlock mcp wrap")
			if err != nil {
				return err
			}
			if ep != nil {
				defer ep.ln.Close()
			}

			var withStore func(*wiring.Config)
			if th > 0 {
				st, sc, err := sf.open(env)
				if err != nil {
					return err
				}
				defer st.Close()
				withStore = func(c *wiring.Config) { c.Offloader, c.Scope = &offload.Offloader{Store: st, Threshold: th}, sc }
			}
			// The pins are airlock's own: the kernel refuses a policy
			// that lets a box write them.
			dir := *pinsDir
			if dir == "" {
				sd, err := stateDir(env)
				if err != nil {
					return err
				}
				dir = filepath.Join(sd, "mcp-pins")
			}
			dir = absFrom(env, dir)
			k, err := kf.build(env, "airlock mcp wrap", env.IsTerminal, func(c *wiring.Config) {
				c.PinsDir = dir
				if withStore != nil {
					withStore(c)
				}
			})
			if err != nil {
				return err
			}
			defer k.Close()
			checker, err := k.Kernel.Policy().Compile(k.World)
			if err != nil {
				return err
			}
			pins, err := gateway.OpenPins(gateway.PinsFile(dir, argv))
			if err != nil {
				return err
			}
			o := gateway.Options{
				Start:  gateway.Boxed(k.Kernel, mediator.Call{Kind: mediator.KindExec, Argv: argv}, env.Stderr),
				Kernel: k.Kernel,
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
				// A server need not say its tools changed: list before each
				// call, so a changed definition is asked about there.
				Relist:     true,
				ApprovePin: pinApprover(k),
				// Escalations go to the person at the client when it can
				// show an elicitation, else to the broker and terminal.
				WithApprover: withApprover(*elicit),
				CallTimeout:  *callTimeout,
				Log:          env.Log,
			}
			g, err := gateway.New(o)
			if err != nil {
				return err
			}
			if ep == nil {
				return g.ServeStdio(ctx, env.Stdin, env.Stdout)
			}
			ep.o.Log = env.Log
			h := g.Handler(ctx, ep.o)
			return ep.serve(ctx, env, "MCP gateway", h, h.Close)
		}}
}

// pinApprover asks a person, through the kernel like any escalation,
// whether a changed tool definition may be used; no answer by the policy's
// escalation timeout is a refusal, and an answer that cannot be recorded
// keeps the tool blocked.
func pinApprover(k *wiring.Kernel) func(ctx context.Context, old, new gateway.Definition) error {
	return func(ctx context.Context, old, new gateway.Definition) error {
		// The person is shown every member that changed, old and new.
		args := gateway.ApprovalArgs(old, new)
		args["pinned_digest"], args["new_digest"] = old.Digest(), new.Digest()
		call := mediator.Call{Kind: mediator.KindTool, Tool: new.Name, Args: args}
		return k.Confirm(ctx, call, "mcp.pins", fmt.Sprintf("the definition of the MCP tool %s changed since it was pinned", new.Name))
	}
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

// StateDir is stateDir, for the node's check that no job's policy reaches
// airlock's own state.
func StateDir(env *Env) (string, error) { return stateDir(env) }

// withApprover is the gateway's hook for asking the client's person, or nil
// (every escalation to 'airlock approvals') when elicitation is off.
func withApprover(elicit bool) func(context.Context, mediator.Approver) context.Context {
	if !elicit {
		return nil
	}
	return mediator.WithApprover
}
