package mcpcli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlock-run/airlock/internal/cli"
	"github.com/airlock-run/airlock/internal/wiring"
	"github.com/airlock-run/airlock/mcp/gateway"
	"github.com/airlock-run/airlock/mediator"
	"github.com/airlock-run/airlock/offload"
	"github.com/airlock-run/airlock/policy"
)

// wrapCmd is `airlock mcp wrap`: another MCP server in a box, its tools
// decided by the policy.
func wrapCmd(ctx context.Context, env *cli.Env, args []string) error {
	fs := cli.NewFlags(env, "airlock mcp wrap", cli.MCPWrapUsage, cli.MCPWrapHelp)
	kf := cli.AddKernelFlags(fs, "the server")
	hf := addHTTPFlags(fs)
	prefix := fs.String("name", "", "decide tools as `PREFIX`.tool (default: by their bare names)")
	callTimeout := fs.Duration("call-timeout", 10*time.Minute, "answer a request the server has not answered within this long with an error (0: wait)")
	threshold, elicit := addResultFlags(fs)
	pinsDir := fs.String("pins", "", "`directory` of pinned tool definitions (default: $XDG_STATE_HOME/airlock/mcp-pins)")
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return cli.Usagef("no server command (airlock mcp wrap %s)", cli.MCPWrapUsage)
	}
	if *prefix != "" {
		*prefix = strings.TrimSuffix(*prefix, ".") + "."
	}
	th, err := offload.Threshold(*threshold, 0, 0)
	if err != nil {
		return cli.Usagef("--offload: %v", err)
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
		st, sc, err := kf.OpenStore(env)
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
		sd, err := cli.StateDir(env)
		if err != nil {
			return err
		}
		dir = filepath.Join(sd, "mcp-pins")
	}
	dir = cli.AbsFrom(env, dir)
	k, err := kf.Build(env, "airlock mcp wrap", env.IsTerminal, func(c *wiring.Config) {
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

// withApprover is the gateway's hook for asking the client's person, or nil
// (every escalation to 'airlock approvals') when elicitation is off.
func withApprover(elicit bool) func(context.Context, mediator.Approver) context.Context {
	if !elicit {
		return nil
	}
	return mediator.WithApprover
}
