// Package gateway is airlock's MCP gateway: it stands between an MCP client
// and another MCP server (started in a box by the caller) and relays their
// JSON-RPC messages unchanged, except that
//
//   - every tools/call is decided by the kernel before it is forwarded; a
//     refusal is a structured JSON-RPC error (mcp.Error), never "not found";
//   - tools/list answers leave out the tools the policy denies and the tools
//     whose definition changed since it was pinned;
//   - a tool following the fit convention gets the default budget filled in
//     before the decision, so the policy and a person see it;
//   - results are fitted and offloaded, with `_meta["airlock/fit"]`;
//   - names are compared after NFC and refused with control or invisible
//     characters; messages with duplicate keys are refused; a batch is
//     decided element by element.
//
// Everything else (logging, progress, cancellation, sampling, elicitation,
// resources, prompts, completions, every content type) passes through as
// it came.
//
//	client ──Conn──▶ session.fromClient ──decide/forward──▶ Conn ──▶ boxed server
//	client ◀──Conn── session.fromServer ◀──filter/fit───── Conn ◀── boxed server
//
// Only internal/cli imports it.
package gateway

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/mcp"
	"github.com/airlock-run/airlock/mediator"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// MaxFrame is the longest message read from the wrapped server or a stdio
// client: a result may come to mediator.MaxResult (31 MiB) as JSON, and its
// envelope gets a little more.
const MaxFrame = 32 << 20

// Server is a started wrapped server: its input and output and the end of
// its run.
type Server struct {
	Stdin  io.WriteCloser
	Stdout io.ReadCloser
	// Done receives the run's end once (nil error for a normal exit).
	Done <-chan error
}

// Starter starts the wrapped server. Cancelling ctx must end it and
// everything it started (the box is torn down).
type Starter func(ctx context.Context) (*Server, error)

// Options configure a Gateway. Start and Kernel must be set.
type Options struct {
	Start Starter
	// Kernel decides every call (a non-nil error refuses the call and is
	// what the client reads), fits and offloads every result, and answers
	// read_result from its file store.
	Kernel *mediator.Kernel
	// Listed reports whether a tool may be shown in tools/list; nil shows
	// every tool (calls are decided anyway).
	Listed func(tool string) bool
	// Prefix is put before each tool's name to make its policy name
	// ("fs." gives fs.read_file); "" decides tools by their bare names.
	Prefix string
	// Pins holds the pinned definitions; nil pins nothing.
	Pins *Pins
	// ApprovePin asks a person whether the changed definition of a pinned
	// tool may be used; nil means nobody can, and the tool stays blocked.
	ApprovePin func(ctx context.Context, old, new Definition) error
	// Budget gives the default budget of a fit-convention call; nil is
	// mediator.DefaultBudget.
	Budget func() int
	// CallTimeout bounds how long a request waits for the wrapped server's
	// answer; 0 means no bound (the client may still cancel).
	CallTimeout time.Duration
	// WithApprover, when set, returns ctx carrying an approver the kernel
	// asks instead of its own about escalations of that call; the gateway
	// passes one that asks the client through MCP elicitation when the
	// client declared the capability. Nil leaves every escalation to the
	// kernel's own approver (the approvals broker, the terminal).
	WithApprover func(ctx context.Context, a mediator.Approver) context.Context
	// SessionIdle ends an HTTP session (and its boxed server) that no
	// request has touched for this long; 0 keeps sessions until DELETE or
	// the end of the gateway.
	SessionIdle time.Duration
	// Log receives diagnostics; nil drops them.
	Log *slog.Logger
}

// Gateway relays between MCP clients and wrapped servers; one per command
// line, one session (and one boxed server) per client connection.
type Gateway struct{ o Options }

// New checks o and returns a Gateway.
func New(o Options) (*Gateway, error) {
	if o.Start == nil || o.Kernel == nil {
		return nil, errs.Invalidf("gateway: Start and Kernel must be set")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Budget == nil {
		o.Budget = mediator.DefaultBudget
	}
	return &Gateway{o: o}, nil
}

// ServeStdio relays between a client on r/w (newline-delimited JSON-RPC)
// and a newly started server until either side ends.
func (g *Gateway) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	// At the end the streams are closed (when they can be), so that no
	// write to a client that stopped reading is left blocked.
	return g.Serve(ctx, newLineConn(r, w, MaxFrame, func() error {
		var err error
		for _, c := range []any{r, w} {
			if c, ok := c.(io.Closer); ok {
				err = errors.Join(err, c.Close())
			}
		}
		return err
	}))
}

// Serve starts the wrapped server and relays between client and it until
// the client goes away (the server is then ended and its box torn down) or
// the server ends (pending requests are answered with an error). It
// returns nil when the client ended the session.
func (g *Gateway) Serve(ctx context.Context, client Conn) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv, err := g.o.Start(ctx)
	if err != nil {
		return err
	}
	server := newLineConn(srv.Stdout, srv.Stdin, MaxFrame, func() error {
		return errors.Join(srv.Stdin.Close(), srv.Stdout.Close())
	})
	s := &session{g: g, client: client, server: server, pending: map[jsonrpc.ID]*pending{},
		ours: map[jsonrpc.ID]chan *jsonrpc.Response{}, oursServer: map[jsonrpc.ID]chan *jsonrpc.Response{},
		tools: map[string]*tool{}, idPrefix: "airlock-" + rand.Text()[:12]}

	serverGone := make(chan error, 1)
	go func() { serverGone <- s.fromServer(ctx) }()
	clientGone := make(chan error, 1)
	go func() { clientGone <- s.fromClient(ctx) }()

	var result error
	var runErr error
	ran := false
	select {
	case err := <-clientGone:
		// The client left: close the server's input so it may exit, then
		// end it and its box.
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
			g.o.Log.Warn("mcp client connection ended", "err", err)
		}
		server.Close()
		select {
		case runErr = <-srv.Done:
			ran = true
		case <-time.After(2 * time.Second):
		}
	case err := <-serverGone:
		select {
		case runErr = <-srv.Done:
			ran = true
		case <-time.After(5 * time.Second):
		}
		if runErr == nil {
			runErr = err
		}
		result = errs.Unavailablef("mcp wrap: the wrapped server ended")
		if runErr != nil {
			result = errs.Wrap(errs.ClassOf(runErr), runErr, "mcp wrap: the wrapped server ended")
			if errs.ClassOf(runErr) == errs.Internal {
				result = errs.Wrap(errs.Unavailable, runErr, "mcp wrap: the wrapped server ended")
			}
		}
		client.Close()
	case <-ctx.Done():
	}
	cancel()
	server.Close()
	client.Close()
	if !ran {
		<-srv.Done
	}
	return result
}

// session is one client connected to one wrapped server.
type session struct {
	g      *Gateway
	client Conn
	server Conn

	mu      sync.Mutex
	pending map[jsonrpc.ID]*pending               // client requests the server has not answered
	ours    map[jsonrpc.ID]chan *jsonrpc.Response // the gateway's own requests to the client
	// oursServer are the gateway's own requests to the server.
	oursServer map[jsonrpc.ID]chan *jsonrpc.Response
	// idPrefix starts the ids of the gateway's own requests: random, so no
	// peer's id is taken for one of them.
	idPrefix string
	tools    map[string]*tool // the last listed tools, by NFC name
	listed   bool             // a whole list was seen since the server last changed it
	elicit   bool             // the client declared the elicitation capability
	nextID   atomic.Int64
	bad      atomic.Int64 // bad frames from the server
}

// pending is a forwarded request waiting for its answer.
type pending struct {
	method string
	held   bool // a tools/call still being decided
	tool   *callInfo
	timer  *time.Timer
}

// tool is what the gateway knows of a listed tool.
type tool struct {
	def     Definition // as the server listed it (Name as sent)
	fitConv bool
	blocked bool // its definition differs from the pin
}

// callInfo is what the answer of a tools/call needs.
type callInfo struct {
	name    string // the NFC name
	fitConv bool
	filled  int // the budget airlock filled in, 0 if none
	budget  int
	view    string
	query   string
}

func (s *session) log() *slog.Logger { return s.g.o.Log }

// reply sends the client an error answer to id.
func (s *session) reply(ctx context.Context, id jsonrpc.ID, err error) {
	if !id.IsValid() {
		return
	}
	if werr := s.client.Write(ctx, &jsonrpc.Response{ID: id, Error: mcp.Error(err)}); werr != nil {
		s.log().Debug("mcp: answer the client", "err", werr)
	}
}

// fromClient reads the client's messages and forwards or answers them.
func (s *session) fromClient(ctx context.Context) error {
	for {
		msg, err := s.client.Read(ctx)
		var bad *BadFrame
		if errors.As(err, &bad) {
			s.badFromClient(ctx, bad)
			continue
		}
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			s.mu.Lock()
			ch := s.ours[m.ID]
			delete(s.ours, m.ID)
			s.mu.Unlock()
			if ch != nil {
				ch <- m
				continue
			}
			s.toServer(ctx, m)
		case *jsonrpc.Request:
			if len(m.Params) > 0 {
				if err := mcp.CheckJSON(m.Params); err != nil {
					if m.IsCall() {
						s.reply(ctx, m.ID, err)
					}
					continue
				}
			}
			if !m.IsCall() {
				s.toServer(ctx, m)
				continue
			}
			switch m.Method {
			case "initialize":
				s.noteClient(m.Params)
				s.forward(ctx, m, nil)
			case "tools/call":
				// A decision may wait for a person; other messages go on.
				// The call counts as pending from now, so that a server
				// that dies meanwhile still gets it answered.
				if !s.hold(ctx, m.ID) {
					continue
				}
				go s.call(ctx, m)
			default:
				s.forward(ctx, m, nil)
			}
		}
	}
}

func (s *session) badFromClient(ctx context.Context, bad *BadFrame) {
	code := jsonrpc.CodeParseError
	if bad.ID.IsValid() {
		code = jsonrpc.CodeInvalidRequest
	}
	msg := "airlock: " + bad.Error()
	if bad.TooLong {
		code = jsonrpc.CodeInvalidRequest
	}
	// An error with no id must still reach a stdio client, with "id": null
	// as JSON-RPC asks (the SDK's encoder leaves an invalid id out).
	if lc, ok := s.client.(*lineConn); ok && !bad.ID.IsValid() {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}})
		if err := lc.writeLine(b); err != nil {
			s.log().Debug("mcp: answer a bad frame", "err", err)
		}
		return
	}
	if err := s.client.Write(ctx, &jsonrpc.Response{ID: bad.ID, Error: &jsonrpc.Error{Code: int64(code), Message: msg}}); err != nil {
		s.log().Debug("mcp: answer a bad frame", "err", err)
	}
}

// noteClient remembers what the client can do.
func (s *session) noteClient(params json.RawMessage) {
	var p struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	if json.Unmarshal(params, &p) == nil {
		_, ok := p.Capabilities["elicitation"]
		s.mu.Lock()
		s.elicit = ok
		s.mu.Unlock()
	}
}

func (s *session) toServer(ctx context.Context, m jsonrpc.Message) {
	if err := s.server.Write(ctx, m); err != nil {
		s.log().Debug("mcp: write to the wrapped server", "err", err)
	}
}

// hold marks id pending while its call is decided; false (and the client
// answered) when a request with that id is already in flight.
func (s *session) hold(ctx context.Context, id jsonrpc.ID) bool {
	s.mu.Lock()
	_, dup := s.pending[id]
	if !dup {
		s.pending[id] = &pending{method: "tools/call", held: true}
	}
	s.mu.Unlock()
	if dup {
		s.reply(ctx, id, errs.Invalidf("a request with id %v is already in flight", id.Raw()))
	}
	return !dup
}

// forward sends request m on to the server and remembers it until its
// answer comes.
func (s *session) forward(ctx context.Context, m *jsonrpc.Request, ci *callInfo) {
	p := &pending{method: m.Method, tool: ci}
	s.mu.Lock()
	if old, dup := s.pending[m.ID]; dup && !old.held {
		s.mu.Unlock()
		s.reply(ctx, m.ID, errs.Invalidf("a request with id %v is already in flight", m.ID.Raw()))
		return
	} else if !dup && m.Method == "tools/call" {
		// Its hold was answered already (the server ended meanwhile).
		s.mu.Unlock()
		return
	}
	s.pending[m.ID] = p
	if d := s.g.o.CallTimeout; d > 0 {
		id := m.ID
		p.timer = time.AfterFunc(d, func() {
			if s.take(id) == nil {
				return
			}
			s.reply(ctx, id, errs.New(errs.Timeout, "the wrapped server did not answer %s within %s", m.Method, d))
			params, _ := json.Marshal(map[string]any{"requestId": id.Raw(), "reason": "timed out in airlock"})
			s.toServer(ctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: params})
		})
	}
	s.mu.Unlock()
	if err := s.server.Write(ctx, m); err != nil {
		if s.take(m.ID) != nil {
			s.reply(ctx, m.ID, errs.Wrap(errs.Unavailable, err, "the wrapped server cannot be reached"))
		}
	}
}

// take removes and returns the pending request id, nil when it is not
// (or no longer) pending.
func (s *session) take(id jsonrpc.ID) *pending {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pending[id]
	delete(s.pending, id)
	if p != nil && p.timer != nil {
		p.timer.Stop()
	}
	return p
}

// fromServer reads the wrapped server's messages and passes them to the
// client, filtering tool lists and fitting tool results. When the server's
// output ends, every pending request is answered with an error.
func (s *session) fromServer(ctx context.Context) error {
	defer s.failAll(ctx, "the wrapped MCP server ended")
	for {
		msg, err := s.server.Read(ctx)
		var bad *BadFrame
		if errors.As(err, &bad) {
			s.badFromServer(ctx, bad)
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok {
			if r, isReq := msg.(*jsonrpc.Request); isReq && r.Method == "notifications/tools/list_changed" {
				// What was listed may have changed: the next call lists
				// again before it is decided.
				s.mu.Lock()
				s.tools, s.listed = map[string]*tool{}, false
				s.mu.Unlock()
			}
			s.toClient(ctx, msg)
			continue
		}
		s.mu.Lock()
		mine := s.oursServer[resp.ID]
		delete(s.oursServer, resp.ID)
		s.mu.Unlock()
		if mine != nil {
			mine <- resp
			continue
		}
		p := s.take(resp.ID)
		if p == nil {
			s.log().Debug("mcp: an answer to no pending request", "id", resp.ID.Raw())
			continue
		}
		if resp.Error == nil {
			switch p.method {
			case "tools/list":
				resp.Result = s.filterList(ctx, resp.Result)
			case "tools/call":
				resp.Result = s.fitResult(ctx, p.tool, resp.Result)
			}
		}
		s.toClient(ctx, resp)
	}
}

func (s *session) badFromServer(ctx context.Context, bad *BadFrame) {
	// A server flooding garbage must not flood the log too: the first few
	// are logged, then one in a thousand.
	if n := s.bad.Add(1); n <= 10 || n%1000 == 0 {
		s.log().Warn("mcp: the wrapped server sent a bad message", "err", bad.Err, "count", n)
	}
	if bad.ID.IsValid() {
		if p := s.take(bad.ID); p != nil {
			s.reply(ctx, bad.ID, errs.Unavailablef("the wrapped server answered with a broken message: %v", bad.Err))
		}
		return
	}
	if bad.TooLong {
		// Its answer cannot be matched to a request: answer every pending
		// request rather than leave the one it was for waiting forever.
		s.failAll(ctx, "the wrapped server sent a message over the size limit")
	}
}

func (s *session) failAll(ctx context.Context, why string) {
	s.mu.Lock()
	ids := make([]jsonrpc.ID, 0, len(s.pending))
	for id := range s.pending {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	for _, id := range ids {
		if s.take(id) != nil {
			s.reply(ctx, id, errs.Unavailablef("%s", why))
		}
	}
}

func (s *session) toClient(ctx context.Context, m jsonrpc.Message) {
	if err := s.client.Write(ctx, m); err != nil {
		s.log().Debug("mcp: write to the client", "err", err)
	}
}

// callParams are the parts of tools/call the gateway reads; the rest is
// forwarded as it came.
type callParams struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// call decides one tools/call and forwards it when allowed.
func (s *session) call(ctx context.Context, m *jsonrpc.Request) {
	// fail answers the call with err unless it was answered already.
	fail := func(err error) {
		if s.take(m.ID) != nil {
			s.reply(ctx, m.ID, err)
		}
	}
	var raw map[string]json.RawMessage
	var p callParams
	if err := json.Unmarshal(m.Params, &raw); err != nil {
		fail(errs.Invalidf("tools/call: params are not an object"))
		return
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		fail(errs.Invalidf("tools/call: %v", err))
		return
	}
	if a, ok := raw["arguments"]; ok {
		// Numbers stay as they were written when arguments are re-sent.
		p.Arguments = nil
		if err := decodeNumbers(a, &p.Arguments); err != nil {
			fail(errs.Invalidf("tools/call: arguments are not an object"))
			return
		}
	}
	name, err := mcp.Name(p.Name)
	if err != nil {
		fail(errs.Wrap(errs.Invalid, err, "tools/call: tool name"))
		return
	}
	s.mu.Lock()
	t := s.tools[name]
	s.mu.Unlock()
	s.mu.Lock()
	listed := s.listed
	s.mu.Unlock()
	if t == nil && !listed {
		// A client that calls without listing (it kept an old list) must
		// not skip the pins or the fit convention: list for it.
		s.refreshTools(ctx)
		s.mu.Lock()
		t = s.tools[name]
		s.mu.Unlock()
	}
	if t == nil && name == mediator.ReadResultTool && s.g.o.Kernel.KeepsResults() {
		s.readResult(ctx, m.ID, p.Arguments)
		return
	}
	s.mu.Lock()
	blocked := t != nil && t.blocked
	s.mu.Unlock()
	if blocked {
		if err := s.approveChanged(ctx, name, t); err != nil {
			fail(err)
			return
		}
	}
	ci := &callInfo{name: name}
	args := p.Arguments
	if t != nil && t.fitConv {
		ci.fitConv = true
		var filled bool
		budget := s.g.o.Budget()
		if args, filled = mcp.FillBudget(args, budget); filled {
			ci.filled = budget
		}
		ci.budget = intArg(args["budget"])
		ci.view, _ = args["view"].(string)
		ci.query, _ = args["query"].(string)
	}
	dctx := ctx
	s.mu.Lock()
	elicit := s.elicit
	s.mu.Unlock()
	if elicit && s.g.o.WithApprover != nil {
		dctx = s.g.o.WithApprover(ctx, elicitApprover{s})
	}
	if _, err := s.g.o.Kernel.Decide(dctx, mediator.Call{Kind: mediator.KindTool, Tool: s.g.o.Prefix + name, Args: args}); err != nil {
		fail(err)
		return
	}
	// Forward what was decided: the budget a person saw, and the name as
	// the server listed it (else the normalised name that was decided).
	sendName := name
	if t != nil {
		sendName = t.def.Name
	}
	if ci.filled != 0 || sendName != p.Name {
		raw["name"], _ = json.Marshal(sendName)
		raw["arguments"], _ = json.Marshal(args)
		params, err := json.Marshal(raw)
		if err != nil {
			fail(errs.Wrap(errs.Internal, err, "tools/call"))
			return
		}
		m = &jsonrpc.Request{ID: m.ID, Method: m.Method, Params: params}
	}
	s.forward(ctx, m, ci)
}

// refreshTools lists the server's tools on the gateway's own account,
// so that pins and schemas are known; the answer goes to no client.
func (s *session) refreshTools(ctx context.Context) {
	wait := 30 * time.Second
	if d := s.g.o.CallTimeout; d > 0 && d < wait {
		wait = d
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	cursor := ""
	for page := 0; page < 100; page++ {
		params := json.RawMessage(`{}`)
		if cursor != "" {
			params, _ = json.Marshal(map[string]string{"cursor": cursor})
		}
		resp, err := s.request(ctx, s.server, s.oursServer, "tools/list", params)
		if err != nil || resp.Error != nil {
			return
		}
		s.filterList(ctx, resp.Result)
		var next struct {
			NextCursor string `json:"nextCursor"`
		}
		if json.Unmarshal(resp.Result, &next) != nil || next.NextCursor == "" {
			return
		}
		cursor = next.NextCursor
	}
}

// approveChanged asks a person about the changed definition of t; on yes
// the new definition is pinned and the tool is unblocked.
func (s *session) approveChanged(ctx context.Context, name string, t *tool) error {
	blocked := &errs.Denial{Code: errs.CodePolicyDenied, Category: "tools",
		Reason: fmt.Sprintf("the definition of the tool %s changed since it was approved; a person must approve the new one", name)}
	if s.g.o.Pins == nil || s.g.o.ApprovePin == nil {
		return blocked
	}
	old, _ := s.g.o.Pins.Pinned(t.def.Name)
	if err := s.g.o.ApprovePin(ctx, old.Definition, t.def); err != nil {
		var d *errs.Denial
		if errors.As(err, &d) {
			return &errs.Denial{Code: d.Code, Category: "tools", Reason: blocked.Reason + ": " + d.Reason}
		}
		return blocked
	}
	if err := s.g.o.Pins.Repin(t.def); err != nil {
		return err
	}
	s.mu.Lock()
	t.blocked = false
	s.mu.Unlock()
	// The tool may be listed again: tell the client to list anew.
	s.toClient(ctx, &jsonrpc.Request{Method: "notifications/tools/list_changed"})
	return nil
}

// filterList leaves out of a tools/list result the tools the policy denies,
// tools with bad or ambiguous names and tools whose definition changed
// since it was pinned; it remembers the rest.
func (s *session) filterList(ctx context.Context, result json.RawMessage) json.RawMessage {
	var page map[string]json.RawMessage
	var tools []json.RawMessage
	if json.Unmarshal(result, &page) != nil || json.Unmarshal(page["tools"], &tools) != nil {
		// A list that does not parse shows nothing (fail closed).
		s.log().Warn("mcp: a tools/list answer that does not parse; no tools shown")
		return json.RawMessage(`{"tools":[]}`)
	}
	type entry struct {
		raw  json.RawMessage
		name string
		t    *tool
	}
	var entries []entry
	count := map[string]int{}
	for _, raw := range tools {
		var d Definition
		if json.Unmarshal(raw, &d) != nil {
			continue
		}
		name, err := mcp.Name(d.Name)
		if err != nil {
			s.log().Warn("mcp: a tool with a bad name left out", "err", err)
			continue
		}
		count[name]++
		entries = append(entries, entry{raw: raw, name: name, t: &tool{def: d, fitConv: mcp.FitConvention(d.InputSchema)}})
	}
	kept := make([]json.RawMessage, 0, len(entries))
	for _, e := range entries {
		if count[e.name] > 1 {
			// Two tools that are one name after NFC: neither is shown.
			s.log().Warn("mcp: tools with the same normalised name left out", "tool", e.name)
			continue
		}
		if s.g.o.Pins != nil {
			st, err := s.g.o.Pins.Check(e.t.def)
			if err != nil {
				s.log().Warn("mcp: pin a tool", "tool", e.name, "err", err)
				continue
			}
			e.t.blocked = st == PinChanged
		}
		s.mu.Lock()
		s.tools[e.name] = e.t
		s.mu.Unlock()
		if e.t.blocked {
			s.log().Warn("mcp: the definition of a pinned tool changed; it is blocked until a person approves it", "tool", e.name)
			continue
		}
		if s.g.o.Listed != nil && !s.g.o.Listed(s.g.o.Prefix+e.name) {
			continue
		}
		kept = append(kept, e.raw)
	}
	if len(page["nextCursor"]) == 0 {
		s.mu.Lock()
		s.listed = true
		s.mu.Unlock()
	}
	if s.g.o.Kernel.KeepsResults() && len(page["nextCursor"]) == 0 && count[mediator.ReadResultTool] == 0 {
		// airlock's own read_result, unless the server has a tool of that
		// name (which then stays the server's).
		if s.g.o.Listed == nil || s.g.o.Listed(mediator.ReadResultTool) {
			kept = append(kept, readResultTool())
		}
	}
	page["tools"], _ = json.Marshal(kept)
	out, err := json.Marshal(page)
	if err != nil {
		return json.RawMessage(`{"tools":[]}`)
	}
	return out
}

func readResultTool() json.RawMessage {
	b, _ := json.Marshal(map[string]any{"name": mediator.ReadResultTool, "description": mediator.ReadResultDescription,
		"inputSchema": json.RawMessage(mediator.ReadResultSchema)})
	return b
}

func intArg(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case float64:
		return int(n)
	case json.Number:
		i, _ := n.Int64()
		return int(i)
	}
	return 0
}

func decodeNumbers(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	return dec.Decode(v)
}
