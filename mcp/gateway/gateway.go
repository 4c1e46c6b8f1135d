// Package gateway is airlock's MCP gateway: it stands between an MCP client
// and another MCP server (started in a box by the caller) and relays their
// JSON-RPC messages, read with exact keys and re-encoded from what was
// read (never passed on as the bytes came), so that
//
//   - every tools/call is decided by the kernel before it is forwarded, and
//     what is forwarded is what was decided (name, arguments); a refusal
//     is a structured JSON-RPC error (mcp.Error), never "not found";
//   - a message with two keys alike under case or NFKC folding, at any
//     depth, is refused whole (mcp.CheckJSON);
//   - a call names a tool exactly as the server listed it; names alike
//     under folding, and names that look like one the policy denies, are
//     hidden and refused;
//   - tools/list answers leave out the tools the policy denies and the tools
//     whose definition (all of it) changed since it was pinned;
//   - a tool following the fit convention gets the default budget filled in
//     before the decision, so the policy and a person see it;
//   - results are fitted and offloaded, with `_meta["airlock/fit"]`;
//   - the gateway's own requests use ids of random namespaces, one toward
//     the client and one toward the server; the server's requests to the
//     client pass only for capabilities the client declared, marked as the
//     server's, and never under airlock's ids or marks;
//   - a batch is decided element by element; a bad or oversized message,
//     or a request reusing an id in flight, fails alone.
//
// Everything else (logging, progress, cancellation, sampling, elicitation,
// resources, prompts, completions, every content type) passes through.
//
//	client ──Conn──▶ session.fromClient ──decide/forward──▶ Conn ──▶ boxed server
//	client ◀──Conn── session.fromServer ◀──filter/fit───── Conn ◀── boxed server
//
// Only internal/cli and node (a job's tool calls) import it.
package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-run/airlock/audit"
	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/mcp"
	"github.com/airlock-run/airlock/mcp/approval"
	"github.com/airlock-run/airlock/mediator"
	"github.com/airlock-run/airlock/policy"
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
	// Relist lists the server's tools again before every call, so a
	// definition changed since it was pinned is blocked at the call that
	// would run it, whether or not the server said its list changed (a
	// server need not, and one of the newer protocol tells a session only
	// when it subscribed). A list that fails refuses the call. For
	// clients that call rarely and never list, such as a node's jobs.
	Relist bool
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
	// SessionIdle is the idle time after which an HTTP session (and its
	// boxed server) ends when the HTTP front's own (httpfront.Options,
	// which the CLI sets) is unset; 0 leaves it to the front.
	SessionIdle time.Duration
	// PolicyTools returns the tool rules of the policy, so that a listed
	// name that only looks like one the policy denies (another case, a
	// full-width form) is refused too; nil checks the name's folded form
	// alone.
	PolicyTools func() map[string]policy.ToolRule
	// Audit, when set, keeps a record of every message the gateway refuses
	// (malformed, keys alike under folding, unknown or look-alike names,
	// reused or spoofed ids, oversized frames); the log gets them anyway.
	Audit func(audit.Record) error
	// Decided, when set, is told the kernel's decision of every tools/call
	// (the tool as listed), before the call is forwarded or refused.
	Decided func(tool string, o mediator.Outcome)
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
		tools: map[string]*tool{}, toClientNS: newNamespace(), toServerNS: newNamespace()}
	if lc, ok := client.(*lineConn); ok {
		lc.refused = func(id jsonrpc.ID, err error) { s.record(ctx, fromClientSide, "", id, err) }
	}

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
		runErr = <-srv.Done
	}
	// A server the policy refused never ran: that is the session's end
	// whichever side the gateway saw go first (the client, told the
	// server cannot be reached, may well hang up before the server's
	// output is seen to end).
	var d *errs.Denial
	if result == nil && errors.As(runErr, &d) {
		result = runErr
	}
	return result
}

// session is one client connected to one wrapped server.
type session struct {
	g      *Gateway
	client Conn
	server Conn

	mu      sync.Mutex
	pending map[jsonrpc.ID]*pending               // client requests not answered yet
	ours    map[jsonrpc.ID]chan *jsonrpc.Response // the gateway's own requests to the client
	// oursServer are the gateway's own requests to the server.
	oursServer map[jsonrpc.ID]chan *jsonrpc.Response
	// toClientNS and toServerNS start the ids of the gateway's own requests
	// to the client and to the server: two random 128-bit namespaces, so
	// that the ids the server sees tell it nothing of the ids airlock asks
	// the person under.
	toClientNS, toServerNS string
	nextClient, nextServer atomic.Int64
	tools                  map[string]*tool // the last listed tools, by exact name
	listed                 bool             // a whole list was seen since the server last changed it
	caps                   clientCaps       // what the client declared in initialize
	bad                    atomic.Int64     // bad frames from the server
	refusals               atomic.Int64
}

// clientCaps are the capabilities a client declared that let the wrapped
// server ask it something.
type clientCaps struct{ elicit, sampling, roots bool }

// ownIDPrefix starts every id of the gateway's own requests. A peer's
// request under such an id is refused: it could be taken for one of
// airlock's (the namespaces are random, but nobody needs such an id).
const ownIDPrefix = "airlock-"

func newNamespace() string {
	var b [16]byte
	rand.Read(b[:])
	return ownIDPrefix + hex.EncodeToString(b[:])
}

// ownID reports whether id lies in airlock's own namespace.
func ownID(id jsonrpc.ID) bool {
	s, ok := id.Raw().(string)
	return ok && strings.HasPrefix(s, ownIDPrefix)
}

// pending is a request of the client's waiting for its answer: being
// decided (a tools/call) or forwarded.
type pending struct {
	method string
	tool   *callInfo
	timer  *time.Timer
	// sent is set when the request goes to the server: only then may an
	// answer of the server's under its id be taken for the answer. The
	// server sees the client's ids and can guess the next one, so an
	// answer before that (a call still waiting for its decision) is not
	// the answer of anything.
	sent bool
}

// tool is what the gateway knows of a listed tool.
type tool struct {
	def     Definition // as the server listed it
	fitConv bool
	blocked bool  // its definition differs from the pin
	refused error // set when it may not be called at all (a look-alike)
}

// callInfo is what the answer of a tools/call needs.
type callInfo struct {
	name    string // as listed
	fitConv bool
	filled  int // the budget airlock filled in, 0 if none
	budget  int
	view    string
	query   string
	// openWorld: the tool's definition says its results come from
	// outside, which taints a kernel that tracks taint.
	openWorld bool
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

// Directions a refused message came from.
const (
	fromClientSide = "client"
	fromServerSide = "server"
)

// record keeps a refusal in the log and, through Options.Audit, in the
// audit log. A peer flooding refusals must not flood the log: the first
// hundred of a session are kept, then one in a thousand with the count.
func (s *session) record(ctx context.Context, from, method string, id jsonrpc.ID, err error) {
	n := s.refusals.Add(1)
	if n > 100 && n%1000 != 0 {
		return
	}
	fields := map[string]any{"category": "mcp", "from": from, "count": n}
	if method != "" {
		fields["method"] = method
	}
	if id.IsValid() {
		fields["id"] = id.Raw()
	}
	s.log().Warn("mcp: refused a message", "from", from, "method", method, "id", id.Raw(), "reason", err.Error(), "count", n)
	if a := s.g.o.Audit; a != nil {
		if aerr := a(audit.Record{Kind: "mcp.refused", Verdict: "deny", Rule: "mcp.gateway", Reason: err.Error(),
			Decider: "airlock", Fields: fields}); aerr != nil {
			s.log().Warn("mcp: record a refusal", "err", aerr)
		}
	}
}

// refuse answers the client's request id with err and records it.
func (s *session) refuse(ctx context.Context, method string, id jsonrpc.ID, err error) {
	s.record(ctx, fromClientSide, method, id, err)
	s.reply(ctx, id, err)
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
			s.toServer(ctx, reencodeResponse(m))
		case *jsonrpc.Request:
			s.clientRequest(ctx, m)
		}
	}
}

// clientRequest checks a request or notification of the client's and
// sends it on: every one is re-encoded from what was read, never passed
// as it came.
func (s *session) clientRequest(ctx context.Context, m *jsonrpc.Request) {
	refuse := func(err error) {
		if m.IsCall() {
			s.refuse(ctx, m.Method, m.ID, err)
		} else {
			s.record(ctx, fromClientSide, m.Method, m.ID, err)
		}
	}
	if m.IsCall() && ownID(m.ID) {
		refuse(errs.Invalidf("request id %v: ids beginning with %q are airlock's own; use another id", m.ID.Raw(), ownIDPrefix))
		return
	}
	params, err := reencode(m.Params)
	if err != nil {
		refuse(errs.Wrap(errs.Invalid, err, "%s: params", m.Method))
		return
	}
	m = &jsonrpc.Request{ID: m.ID, Method: m.Method, Params: params}
	if !m.IsCall() {
		if err := checkNotification(m.Method); err != nil {
			refuse(err)
			return
		}
		s.toServer(ctx, m)
		return
	}
	p, ok := s.reserve(ctx, m)
	if !ok {
		return
	}
	switch m.Method {
	case "initialize":
		s.noteClient(m.Params)
		s.forward(ctx, m, p)
	case "tools/call":
		// A decision may wait for a person; other messages go on. The call
		// counts as pending from now, so that a server that dies meanwhile
		// still gets it answered.
		go s.call(ctx, m, p)
	default:
		s.forward(ctx, m, p)
	}
}

// checkNotification refuses a message without an id whose method is not a
// notification's. Nothing decides a notification, so one spelled as a
// request ("tools/call" with no id, or a null id) would reach a peer that
// runs the method and only leaves out the answer (a hand-written server
// loop), undecided. MCP's notifications all live under "notifications/".
func checkNotification(method string) error {
	if strings.HasPrefix(method, "notifications/") {
		return nil
	}
	return errs.Invalidf("%s without an id: only notifications (notifications/...) may come without one; send the request with an id", method)
}

// reencode checks raw (no keys alike under folding, at any depth) and
// writes it anew: keys sorted, numbers as written. nil stays nil.
func reencode(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if err := mcp.CheckJSON(raw); err != nil {
		return nil, err
	}
	return canonical(raw), nil
}

// reencodeResponse writes an answer of the client's to the server anew
// (its result and error data in canonical form), as every message is.
func reencodeResponse(m *jsonrpc.Response) *jsonrpc.Response {
	out := &jsonrpc.Response{ID: m.ID}
	if len(m.Result) > 0 {
		out.Result = canonical(m.Result)
	}
	var je *jsonrpc.Error
	if errors.As(m.Error, &je) {
		e := &jsonrpc.Error{Code: je.Code, Message: je.Message}
		if len(je.Data) > 0 {
			e.Data = canonical(je.Data)
		}
		out.Error = e
	} else if m.Error != nil {
		out.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: m.Error.Error()}
	}
	return out
}

func (s *session) badFromClient(ctx context.Context, bad *BadFrame) {
	if bad.ID.IsValid() && !bad.Request {
		s.badAnswerFromClient(ctx, bad)
		return
	}
	code := jsonrpc.CodeParseError
	if bad.ID.IsValid() || bad.TooLong || bad.Reused {
		code = jsonrpc.CodeInvalidRequest
	}
	s.record(ctx, fromClientSide, "", bad.ID, bad.Err)
	msg := "airlock: " + bad.Error()
	resp := &jsonrpc.Response{ID: bad.ID, Error: &jsonrpc.Error{Code: int64(code), Message: msg}}
	if lc, ok := s.client.(*lineConn); ok {
		// An error with no id must still reach a stdio client, with "id":
		// null as JSON-RPC asks (the SDK's encoder leaves an invalid id
		// out); one with an id goes aside, as it may be the id of a
		// request still in flight.
		var err error
		if !bad.ID.IsValid() {
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}})
			err = lc.writeLine(b)
		} else {
			err = lc.writeAside(resp)
		}
		if err != nil {
			s.log().Debug("mcp: answer a bad frame", "err", err)
		}
		return
	}
	if err := s.client.Write(ctx, resp); err != nil {
		s.log().Debug("mcp: answer a bad frame", "err", err)
	}
}

// badAnswerFromClient handles a broken answer of the client's: to one of
// airlock's questions (which then has its answer: an error), or to a
// request of the server's, which hears why.
func (s *session) badAnswerFromClient(ctx context.Context, bad *BadFrame) {
	s.record(ctx, fromClientSide, "", bad.ID, bad.Err)
	answer := &jsonrpc.Response{ID: bad.ID, Error: mcp.Error(errs.Invalidf("airlock: the client's answer was refused: %v", bad.Err))}
	s.mu.Lock()
	ch := s.ours[bad.ID]
	delete(s.ours, bad.ID)
	s.mu.Unlock()
	if ch != nil {
		ch <- answer
		return
	}
	s.toServer(ctx, answer)
}

// noteClient remembers what the client can do, read with exact keys.
func (s *session) noteClient(params json.RawMessage) {
	var p map[string]json.RawMessage
	var caps map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil || json.Unmarshal(p["capabilities"], &caps) != nil {
		return
	}
	declared := func(k string) bool {
		v, ok := caps[k]
		return ok && len(v) > 0 && v[0] == '{'
	}
	s.mu.Lock()
	s.caps = clientCaps{elicit: declared("elicitation"), sampling: declared("sampling"), roots: declared("roots")}
	s.mu.Unlock()
}

func (s *session) toServer(ctx context.Context, m jsonrpc.Message) {
	if err := s.server.Write(ctx, m); err != nil {
		s.log().Debug("mcp: write to the wrapped server", "err", err)
	}
}

// reserve marks the id of request m pending; false (and the client
// answered, the request in flight left alone) when a request with that id
// is in flight already.
func (s *session) reserve(ctx context.Context, m *jsonrpc.Request) (*pending, bool) {
	s.mu.Lock()
	_, dup := s.pending[m.ID]
	p := &pending{method: m.Method}
	if !dup {
		s.pending[m.ID] = p
	}
	s.mu.Unlock()
	if dup {
		err := errReused(m.ID)
		s.record(ctx, fromClientSide, m.Method, m.ID, err)
		if lc, ok := s.client.(*lineConn); ok {
			// Not through Write, which would take it for the answer of
			// the request in flight.
			lc.writeAside(&jsonrpc.Response{ID: m.ID, Error: mcp.Error(err)})
		} else {
			s.reply(ctx, m.ID, err)
		}
	}
	return p, !dup
}

// forward sends request m on to the server as the answer of p, unless p
// was answered meanwhile (the server ended, the call timed out).
func (s *session) forward(ctx context.Context, m *jsonrpc.Request, p *pending) {
	s.mu.Lock()
	if s.pending[m.ID] != p {
		s.mu.Unlock()
		return
	}
	if d := s.g.o.CallTimeout; d > 0 {
		id := m.ID
		p.timer = time.AfterFunc(d, func() {
			if !s.takeIf(id, p) {
				return
			}
			s.reply(ctx, id, errs.New(errs.Timeout, "the wrapped server did not answer %s within %s", m.Method, d))
			params, _ := json.Marshal(map[string]any{"requestId": id.Raw(), "reason": "timed out in airlock"})
			s.toServer(ctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: params})
		})
	}
	p.sent = true
	s.mu.Unlock()
	if err := s.server.Write(ctx, m); err != nil {
		if s.takeIf(m.ID, p) {
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

// takeSent is take for an answer of the server's: nil, and the request
// left pending, when it was not sent to the server.
func (s *session) takeSent(id jsonrpc.ID) *pending {
	s.mu.Lock()
	p := s.pending[id]
	ok := p != nil && p.sent
	s.mu.Unlock()
	if !ok {
		return nil
	}
	if s.takeIf(id, p) {
		return p
	}
	return nil
}

// takeIf removes the pending request id if it is still p (and not a later
// request under the same id); it reports whether it did.
func (s *session) takeIf(id jsonrpc.ID, p *pending) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending[id] != p {
		return false
	}
	delete(s.pending, id)
	if p.timer != nil {
		p.timer.Stop()
	}
	return true
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
			r := msg.(*jsonrpc.Request)
			if r.IsCall() {
				s.serverRequest(ctx, r)
				continue
			}
			if err := checkNotification(r.Method); err != nil {
				s.record(ctx, fromServerSide, r.Method, r.ID, err)
				continue
			}
			if r.Method == "notifications/tools/list_changed" {
				// What was listed may have changed: the next call lists
				// again before it is decided.
				s.mu.Lock()
				s.tools, s.listed = map[string]*tool{}, false
				s.mu.Unlock()
			}
			params, err := reencode(r.Params)
			if err != nil {
				s.record(ctx, fromServerSide, r.Method, r.ID, err)
				continue
			}
			s.toClient(ctx, &jsonrpc.Request{Method: r.Method, Params: params})
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
		p := s.takeSent(resp.ID)
		if p == nil {
			s.log().Debug("mcp: an answer to no request sent to the server", "id", resp.ID.Raw())
			continue
		}
		if resp.Error == nil {
			switch p.method {
			case "tools/list":
				resp.Result = s.filterList(ctx, resp.Result)
			case "tools/call":
				if p.tool != nil && p.tool.openWorld {
					s.g.o.Kernel.ReadOutside("tool " + p.tool.name + " returned text from outside (openWorldHint)")
				}
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
		s.record(ctx, fromServerSide, "", bad.ID, bad.Err)
	}
	switch {
	case bad.ID.IsValid() && bad.Request:
		// A request of the server's own (or one reusing the id of one
		// still in flight): the server hears why, aside from any answer
		// it waits for under that id.
		if lc, ok := s.server.(*lineConn); ok {
			lc.writeAside(&jsonrpc.Response{ID: bad.ID, Error: mcp.Error(errs.Invalidf("airlock: %v", bad.Err))})
		}
	case bad.ID.IsValid():
		if p := s.takeSent(bad.ID); p != nil {
			s.reply(ctx, bad.ID, errs.Unavailablef("the wrapped server answered with a broken message: %v", bad.Err))
			return
		}
		s.mu.Lock()
		mine := s.oursServer[bad.ID]
		delete(s.oursServer, bad.ID)
		s.mu.Unlock()
		if mine != nil {
			mine <- &jsonrpc.Response{ID: bad.ID, Error: mcp.Error(errs.Unavailablef("a broken answer: %v", bad.Err))}
		}
	}
	// A frame without an id (a notification, or an answer too long to
	// find its id in) fails only itself: the calls in flight go on, and
	// CallTimeout bounds the wait of one whose answer it was.
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

// call decides one tools/call and forwards what was decided.
func (s *session) call(ctx context.Context, m *jsonrpc.Request, p *pending) {
	// fail answers the call with err unless it was answered already.
	fail := func(err error) {
		if s.takeIf(m.ID, p) {
			s.record(ctx, fromClientSide, m.Method, m.ID, err)
			s.reply(ctx, m.ID, err)
		}
	}
	// The params were checked (no keys alike under folding) and are read
	// with exact keys: "name" is the name, never "Name".
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(m.Params, &raw); err != nil || raw == nil {
		fail(errs.Invalidf("tools/call: params are not an object"))
		return
	}
	var name string
	if err := json.Unmarshal(raw["name"], &name); err != nil {
		fail(errs.Invalidf(`tools/call: params have no string "name" (keys are case-sensitive)`))
		return
	}
	var args map[string]any
	if a, ok := raw["arguments"]; ok && string(a) != "null" {
		// Numbers stay as they were written when arguments are re-sent.
		if err := decodeNumbers(a, &args); err != nil || args == nil {
			fail(errs.Invalidf("tools/call: arguments are not an object"))
			return
		}
	}
	if _, err := mcp.Name(name); err != nil {
		fail(errs.Wrap(errs.Invalid, err, "tools/call: tool name"))
		return
	}
	t := s.lookup(name)
	if s.g.o.Relist {
		if err := s.refreshTools(ctx); err != nil {
			fail(err)
			return
		}
		t = s.lookup(name)
	} else if t == nil && !s.isListed() {
		// A client that calls without listing (it kept an old list) must
		// not skip the pins or the fit convention: list for it.
		s.refreshTools(ctx)
		t = s.lookup(name)
	}
	if t == nil && name == mediator.ReadResultTool && s.g.o.Kernel.KeepsResults() {
		s.readResult(ctx, m.ID, args) // it takes the pending call and answers it
		return
	}
	if t == nil {
		fail(errs.Invalidf("tools/call: the wrapped server did not list a tool named %q; call a tool by the exact name tools/list shows", name))
		return
	}
	s.mu.Lock()
	refused, blocked := t.refused, t.blocked
	s.mu.Unlock()
	if refused != nil {
		fail(refused)
		return
	}
	if blocked {
		if err := s.approveChanged(ctx, name, t); err != nil {
			fail(err)
			return
		}
	}
	// The definition is the pinned one or one a person approved just now,
	// so its hints are the ones decided on.
	hints := t.def.Hints()
	ci := &callInfo{name: name, openWorld: hints.OpenWorld}
	if t.fitConv {
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
	elicit := s.caps.elicit
	s.mu.Unlock()
	if elicit && s.g.o.WithApprover != nil {
		dctx = s.g.o.WithApprover(ctx, elicitApprover{s})
	}
	o, err := s.g.o.Kernel.Decide(dctx, mediator.Call{Kind: mediator.KindTool, Tool: s.g.o.Prefix + name, Args: args, ReadOnly: hints.ReadOnly})
	if s.g.o.Decided != nil {
		s.g.o.Decided(name, o)
	}
	if err != nil {
		fail(err)
		return
	}
	// Forward what was decided, built anew: the name as listed (and
	// decided), the arguments as decided (with the budget a person saw),
	// and the other members re-encoded.
	out := make(map[string]json.RawMessage, len(raw))
	for k, v := range raw {
		out[k] = canonical(v)
	}
	out["name"], _ = json.Marshal(name)
	if args != nil {
		b, err := marshalPlain(args)
		if err != nil {
			fail(errs.Wrap(errs.Internal, err, "tools/call"))
			return
		}
		out["arguments"] = b
	}
	params, err := marshalPlain(out)
	if err != nil {
		fail(errs.Wrap(errs.Internal, err, "tools/call"))
		return
	}
	s.mu.Lock()
	p.tool = ci
	s.mu.Unlock()
	s.forward(ctx, &jsonrpc.Request{ID: m.ID, Method: m.Method, Params: params}, p)
}

// marshalPlain encodes v without escaping <, > and & (what a server reads
// is what was decided, and reads as it was written).
func marshalPlain(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func (s *session) lookup(name string) *tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools[name]
}

func (s *session) isListed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listed
}

// refreshTools lists the server's tools on the gateway's own account,
// so that pins and schemas are known; the answer goes to no client.
// It fails when the server did not answer a whole list.
func (s *session) refreshTools(ctx context.Context) error {
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
		resp, err := s.askServer(ctx, "tools/list", params)
		if err != nil || resp.Error != nil {
			return errs.Unavailablef("tools/call: the wrapped server did not list its tools before the call; the call is refused until it does")
		}
		s.filterList(ctx, resp.Result)
		var next map[string]json.RawMessage
		cursor = ""
		if json.Unmarshal(resp.Result, &next) != nil || json.Unmarshal(next["nextCursor"], &cursor) != nil || cursor == "" {
			return nil
		}
	}
	return errs.Unavailablef("tools/call: the wrapped server listed more than 100 pages of tools; the call is refused")
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
// tools with bad names, names that are one name under folding (NFKC and
// case), names that look like a name the policy denies, and tools whose
// definition changed since it was pinned; it remembers the rest, by their
// exact names. Each tool shown is the definition as pinned, re-encoded.
func (s *session) filterList(ctx context.Context, result json.RawMessage) json.RawMessage {
	var page map[string]json.RawMessage
	var tools []json.RawMessage
	if json.Unmarshal(result, &page) != nil || json.Unmarshal(page["tools"], &tools) != nil {
		// A list that does not parse shows nothing (fail closed).
		s.log().Warn("mcp: a tools/list answer that does not parse; no tools shown")
		return json.RawMessage(`{"tools":[]}`)
	}
	var entries []*tool
	for _, raw := range tools {
		d, err := ParseDefinition(raw)
		if err != nil {
			s.log().Warn("mcp: a tool that does not parse left out", "err", err)
			continue
		}
		if _, err := mcp.Name(d.Name); err != nil {
			s.log().Warn("mcp: a tool with a bad name left out", "err", err)
			continue
		}
		entries = append(entries, &tool{def: d, fitConv: mcp.FitConvention(d.InputSchema)})
	}
	s.markLookalikes(entries)
	kept := make([]json.RawMessage, 0, len(entries))
	hasReadResult := false
	for _, t := range entries {
		name := t.def.Name
		hasReadResult = hasReadResult || name == mediator.ReadResultTool
		if t.refused == nil && s.g.o.Pins != nil {
			st, err := s.g.o.Pins.Check(t.def)
			if err != nil {
				s.log().Warn("mcp: pin a tool", "tool", name, "err", err)
				continue
			}
			t.blocked = st == PinChanged
		}
		s.mu.Lock()
		s.tools[name] = t
		s.mu.Unlock()
		switch {
		case t.refused != nil:
			s.log().Warn("mcp: a tool left out", "tool", name, "reason", t.refused.Error())
			continue
		case t.blocked:
			s.log().Warn("mcp: the definition of a pinned tool changed; it is blocked until a person approves it", "tool", name)
			continue
		case s.g.o.Listed != nil && !s.g.o.Listed(s.g.o.Prefix+name):
			continue
		}
		b, err := t.def.MarshalJSON()
		if err != nil {
			continue
		}
		kept = append(kept, b)
	}
	if len(page["nextCursor"]) == 0 {
		s.mu.Lock()
		s.listed = true
		s.mu.Unlock()
	}
	if s.g.o.Kernel.KeepsResults() && len(page["nextCursor"]) == 0 && !hasReadResult {
		// airlock's own read_result, unless the server has a tool of that
		// name (which then stays the server's).
		if s.g.o.Listed == nil || s.g.o.Listed(mediator.ReadResultTool) {
			kept = append(kept, readResultTool())
		}
	}
	page["tools"], _ = json.Marshal(kept)
	for k, v := range page {
		page[k] = canonical(v)
	}
	out, err := marshalPlain(page)
	if err != nil {
		return json.RawMessage(`{"tools":[]}`)
	}
	return out
}

// markLookalikes refuses the tools of entries whose names a person, or a
// server matching loosely, would take for another: two names with one
// skeleton (NFKC and case folded), among this page and the tools known
// already, are both refused; so is a name whose skeleton is that of a name
// the policy denies (a full-width "ｓｅｃｒｅｔ" beside a denied "secret"),
// and one that looks like airlock's own read_result.
func (s *session) markLookalikes(entries []*tool) {
	bySkel := map[string][]*tool{}
	for _, t := range entries {
		sk := mcp.Skeleton(t.def.Name)
		bySkel[sk] = append(bySkel[sk], t)
	}
	// A tool known from an earlier page counts too, unless this page lists
	// it again under its own name.
	s.mu.Lock()
	for _, t := range s.tools {
		sk := mcp.Skeleton(t.def.Name)
		again := false
		for _, o := range bySkel[sk] {
			again = again || o.def.Name == t.def.Name
		}
		if group := bySkel[sk]; len(group) > 0 && !again {
			bySkel[sk] = append(group, t)
		}
	}
	s.mu.Unlock()
	for _, group := range bySkel {
		if len(group) < 2 {
			continue
		}
		names := make([]string, 0, len(group))
		for _, t := range group {
			names = append(names, strconv.Quote(t.def.Name))
		}
		for _, t := range group {
			s.mu.Lock()
			t.refused = &errs.Denial{Code: errs.CodePolicyDenied, Category: "tools",
				Reason: fmt.Sprintf("the wrapped server lists tools whose names are the same under case and Unicode folding (%s); none of them may be called", strings.Join(names, ", "))}
			s.mu.Unlock()
		}
	}
	for _, t := range entries {
		if t.refused != nil {
			continue
		}
		if like := s.deniedLookalike(t.def.Name); like != "" {
			t.refused = &errs.Denial{Code: errs.CodePolicyDenied, Category: "tools",
				Reason: fmt.Sprintf("the tool name %q looks like %q, which is not allowed here", s.g.o.Prefix+t.def.Name, like)}
		} else if s.g.o.Kernel.KeepsResults() && t.def.Name != mediator.ReadResultTool && mcp.Skeleton(t.def.Name) == mcp.Skeleton(mediator.ReadResultTool) {
			t.refused = &errs.Denial{Code: errs.CodePolicyDenied, Category: "tools",
				Reason: fmt.Sprintf("the tool name %q looks like airlock's own %s", t.def.Name, mediator.ReadResultTool)}
		}
	}
}

// deniedLookalike returns a name the policy denies that name (with the
// prefix) looks like but is not, "" for none: a name from the policy's
// tool rules, or the skeleton itself.
func (s *session) deniedLookalike(name string) string {
	if s.g.o.Listed == nil {
		return ""
	}
	full := s.g.o.Prefix + name
	sk := mcp.Skeleton(full)
	candidates := []string{sk}
	if s.g.o.PolicyTools != nil {
		for p := range s.g.o.PolicyTools() {
			candidates = append(candidates, p)
		}
	}
	for _, c := range candidates {
		if c == full || strings.Contains(c, "*") || mcp.Skeleton(c) != sk {
			continue
		}
		if !s.g.o.Listed(c) {
			return c
		}
	}
	return ""
}

func readResultTool() json.RawMessage {
	b, _ := json.Marshal(map[string]any{"name": mediator.ReadResultTool, "description": mediator.ReadResultDescription,
		"inputSchema": json.RawMessage(mediator.ReadResultSchema)})
	return b
}

// serverRequest passes a request of the wrapped server's to the client, or
// refuses it with an error to the server: under an id of airlock's
// namespace, for a capability the client did not declare, or dressed as
// airlock's own (an airlock/ key in _meta). What is passed is marked as
// the server's: "airlock/from" in _meta, and an elicitation's message
// begins by saying it comes from the wrapped server.
func (s *session) serverRequest(ctx context.Context, r *jsonrpc.Request) {
	params, err := s.checkServerRequest(r)
	if err != nil {
		s.record(ctx, fromServerSide, r.Method, r.ID, err)
		je := mcp.Error(err)
		if errs.ClassOf(err) == errs.NotFound {
			je.Code = jsonrpc.CodeMethodNotFound
		}
		s.toServer(ctx, &jsonrpc.Response{ID: r.ID, Error: je})
		return
	}
	s.toClient(ctx, &jsonrpc.Request{ID: r.ID, Method: r.Method, Params: params})
}

// serverMethods are the requests a wrapped server may make of the client,
// with the capability the client must have declared ("" for none).
var serverMethods = map[string]string{
	"ping":                   "",
	"sampling/createMessage": "sampling",
	"elicitation/create":     "elicitation",
	"roots/list":             "roots",
}

// serverPrefix begins the message of an elicitation the wrapped server
// sends (approval.ServerPrefix).
const serverPrefix = approval.ServerPrefix

func (s *session) checkServerRequest(r *jsonrpc.Request) (json.RawMessage, error) {
	if ownID(r.ID) {
		return nil, errs.Invalidf("airlock: request id %v: ids beginning with %q are airlock's own", r.ID.Raw(), ownIDPrefix)
	}
	capName, known := serverMethods[r.Method]
	if !known {
		return nil, errs.New(errs.NotFound, "airlock: a wrapped server may not send %s to the client", r.Method)
	}
	s.mu.Lock()
	caps := s.caps
	s.mu.Unlock()
	if declared := map[string]bool{"": true, "sampling": caps.sampling, "elicitation": caps.elicit, "roots": caps.roots}[capName]; !declared {
		return nil, errs.New(errs.NotFound, "airlock: the client did not declare the %s capability", capName)
	}
	var p map[string]json.RawMessage
	if len(r.Params) > 0 {
		if err := json.Unmarshal(r.Params, &p); err != nil {
			return nil, errs.Invalidf("airlock: %s: params are not an object", r.Method)
		}
	}
	if p == nil {
		p = map[string]json.RawMessage{}
	}
	meta := map[string]json.RawMessage{}
	if m, ok := p["_meta"]; ok && string(m) != "null" {
		if err := json.Unmarshal(m, &meta); err != nil {
			return nil, errs.Invalidf("airlock: %s: _meta is not an object", r.Method)
		}
	}
	for k := range meta {
		if strings.HasPrefix(mcp.Skeleton(k), "airlock") {
			return nil, errs.Invalidf("airlock: %s: the _meta key %q is airlock's own", r.Method, k)
		}
	}
	meta[metaFrom] = json.RawMessage(`"wrapped-server"`)
	for k, v := range p {
		p[k] = canonical(v)
	}
	p["_meta"], _ = marshalPlain(meta)
	if r.Method == "elicitation/create" {
		var msg string
		if v, ok := p["message"]; ok && json.Unmarshal(v, &msg) != nil {
			return nil, errs.Invalidf("airlock: elicitation/create: the message is not a string")
		}
		p["message"], _ = marshalPlain(serverPrefix + msg)
	}
	return marshalPlain(p)
}

// Keys of _meta that are airlock's: the mark of a question airlock asks,
// and of a request the wrapped server made.
const (
	metaApproval = approval.Meta
	metaFrom     = "airlock/from"
)

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
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}
