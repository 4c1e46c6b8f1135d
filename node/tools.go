package node

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/mcp"
	"github.com/airlock-run/airlock/mcp/gateway"
	"github.com/airlock-run/airlock/mediator"
	"github.com/airlock-run/airlock/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpServers are a leased job's MCP servers running on the node: each is
// started on the first tool call that names it, in a box of the job's
// kernel behind the same gateway `airlock mcp wrap` runs, and stays up
// until the lease closes.
type mcpServers struct {
	// ctx is the lease's: its cancellation (close) tears every box down.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	byName map[string]*mcpServer
}

// mcpServer is one started server, seen as an MCP client sees the gateway.
type mcpServer struct {
	cs *sdk.ClientSession
	// last is the kernel's decision of the call running now (a job's
	// calls run one at a time).
	mu   sync.Mutex
	last *mediator.Outcome
}

// closeServers ends every server of the lease and waits for their boxes
// to be gone.
func (l *leased) closeServers() {
	if l.mcp == nil {
		return
	}
	for _, s := range l.mcp.byName {
		s.cs.Close()
	}
	l.mcp.cancel()
	l.mcp.wg.Wait()
}

// server is job j's MCP server name, started now when it is not yet.
// Its tools are decided as name.tool; its definitions are pinned in the
// job's directory when first listed, so a server that changes a tool's
// definition during the job finds it blocked.
func (r *runner) server(l *leased, name string) (*mcpServer, error) {
	argv := l.j.MCP[name]
	if argv == nil {
		return nil, errs.Invalidf("server %q: not one of job %s's MCP servers (mcp)", name, l.j.ID)
	}
	if l.mcp == nil {
		ctx, cancel := context.WithCancel(context.Background())
		// A person answers the servers' escalations through the server,
		// as for every call of the job.
		ctx = mediator.WithApprover(ctx, &serverApprover{cfg: r.cfg, token: r.token, job: l.j.ID, waiters: r.waiters})
		l.mcp = &mcpServers{ctx: ctx, cancel: cancel, byName: map[string]*mcpServer{}}
	}
	if s := l.mcp.byName[name]; s != nil {
		return s, nil
	}
	k := l.k
	pins, err := gateway.OpenPins(gateway.PinsFile(filepath.Join(l.dir, "mcp-pins"), argv))
	if err != nil {
		return nil, err
	}
	s := &mcpServer{}
	g, err := gateway.New(gateway.Options{
		Start:       gateway.Boxed(k.Kernel, mediator.Call{Kind: mediator.KindExec, Argv: argv, Tool: "mcp", Narrow: narrowed(l.j, k)}, io.Discard),
		Kernel:      k.Kernel,
		Prefix:      name + ".",
		PolicyTools: func() map[string]policy.ToolRule { return k.Policy().Tools },
		Pins:        pins,
		// The node never lists: the gateway lists before each call, so a
		// definition changed since it was pinned is blocked whether or
		// not the server says so.
		Relist: true,
		Decided: func(_ string, o mediator.Outcome) {
			s.mu.Lock()
			s.last = &o
			s.mu.Unlock()
		},
		Log: r.cfg.Log,
	})
	if err != nil {
		return nil, err
	}
	// The gateway reads what this client writes and the other way round.
	toGW, fromClient := io.Pipe()
	toClient, fromGW := io.Pipe()
	ended := make(chan error, 1)
	l.mcp.wg.Add(1)
	go func() {
		defer l.mcp.wg.Done()
		err := g.ServeStdio(l.mcp.ctx, toGW, fromGW)
		if err != nil {
			r.cfg.Log.Warn("job mcp server ended", "job", l.j.ID, "server", name, "err", err)
		}
		ended <- err
	}()
	c := sdk.NewClient(&sdk.Implementation{Name: "airlock-node", Version: "1"}, nil)
	cs, err := c.Connect(l.mcp.ctx, &sdk.IOTransport{Reader: toClient, Writer: fromClient}, nil)
	if err != nil {
		fromClient.Close()
		toClient.Close()
		// Why the server ended (its command refused, say) is the gateway's.
		var d *errs.Denial
		if gwErr := <-ended; errors.As(gwErr, &d) {
			return nil, d
		}
		return nil, errs.Wrap(errs.Unavailable, err, "job %s: mcp server %s did not start", l.j.ID, name)
	}
	s.cs = cs
	l.mcp.byName[name] = s
	return s, nil
}

// tool runs a tool call through the job's server: the gateway decides it
// by the job's policy (taint included), relays it, and fits its result
// through the job's kernel. A refusal is a refused call; a tool's error
// result or the gateway's error is exit code 1 with why in Text.
func (r *runner) tool(ctx context.Context, l *leased, c jobs.Call, out *jobs.CallResult) error {
	args, err := c.ToolArgs()
	if err != nil {
		return errs.Invalidf("call %s: args: %s", c.ID, errs.AgentMessage(err))
	}
	s, err := r.server(l, c.Server)
	if err != nil {
		var d *errs.Denial
		if errs.Is(err, errs.Invalid) && !errors.As(err, &d) {
			out.Refused, out.ExitCode, out.Verdict, out.Decider, out.Reason = true, errs.ExitRefused, "deny", "node", errs.AgentMessage(err)
			return nil
		}
		return err // a denial of the server's command: Call says refused
	}
	s.mu.Lock()
	s.last = nil
	s.mu.Unlock()
	res, err := s.cs.CallTool(ctx, &sdk.CallToolParams{Name: c.Tool, Arguments: args})
	s.mu.Lock()
	if s.last != nil {
		decided(out, *s.last)
	}
	s.mu.Unlock()
	if l.k.Policy().Isolation == "none" {
		out.Tier = 0
	}
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		if denied(we) {
			out.Refused, out.ExitCode, out.Reason = true, errs.ExitRefused, we.Message
			if out.Verdict == "" || out.Verdict == "allow" {
				out.Verdict = "deny"
			}
			return nil
		}
		out.ExitCode, out.Text = 1, we.Message
		return nil
	}
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "job %s: mcp server %s: tools/call %s: %s", l.j.ID, c.Server, c.Tool, whyNoAnswer(err))
	}
	out.Text, out.Refs = resultText(res)
	if res.IsError {
		out.ExitCode = 1
	}
	return nil
}

// denied says a gateway's error is a policy's refusal (or an escalation
// that was not allowed): its data carries one of mcp's denial codes.
func denied(we *jsonrpc.Error) bool {
	var data struct {
		Code string `json:"code"`
	}
	if len(we.Data) == 0 || json.Unmarshal(we.Data, &data) != nil {
		return false
	}
	return strings.HasPrefix(data.Code, "POLICY_") || strings.HasPrefix(data.Code, "ESCALATION_")
}

// resultText is a tool result's text items, joined, and the refs of what
// the kernel offloaded (from the gateway's fit note).
func resultText(res *sdk.CallToolResult) (string, []string) {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	var refs []string
	if raw, ok := res.Meta[mcp.MetaFit]; ok {
		b, _ := json.Marshal(raw)
		var m struct {
			Offloaded struct {
				Ref string `json:"ref"`
			} `json:"offloaded"`
		}
		if json.Unmarshal(b, &m) == nil && m.Offloaded.Ref != "" {
			refs = append(refs, m.Offloaded.Ref)
		}
	}
	return strings.Join(parts, "\n"), refs
}

// whyNoAnswer says, in words a caller can act on, why a server gave no
// answer: only an error's message reaches the job, never its cause.
func whyNoAnswer(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "the call ended before the server answered (it timed out or was killed)"
	case errors.Is(err, sdk.ErrConnectionClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrClosedPipe):
		return "the server ended; its tools are gone for the rest of the job (start the job again)"
	}
	return "the server did not answer"
}
