// Package serve is airlock's own MCP server (`airlock mcp serve`): it offers
// a model a shell (exec), file tools (read_file, write_file, list_dir,
// search) and read_result, and every call goes through the kernel:
//
//	client ──tools/call──▶ args (strict) ──▶ mediator decision ──deny──▶ POLICY_DENIED (JSON-RPC error)
//	                                              │ allow
//	                                              ▼
//	                              the box (runner, tier of the command line)
//	                                              │ output (bounded)
//	                                              ▼
//	                  fit (view/budget/query) ──▶ offload (> threshold: stub) ──▶ result
//
// It is a translation: each tool call becomes a mediator.Call and the
// kernel's outcome becomes the MCP result. The kernel decides, confines,
// runs (the file tools too, by a small program in the box, so a link to
// anything the policy does not grant leads nowhere), fits and offloads.
//
// Only internal/cli imports it.
package serve

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/mcp"
	"github.com/airlock-run/airlock/mcp/httpfront"
	"github.com/airlock-run/airlock/mediator"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLine bounds one message from a client over stdio: a request's
// arguments may carry a file's whole content.
const MaxLine = 40 << 20

// MaxRequestBody bounds one HTTP request from a client.
const MaxRequestBody = httpfront.DefaultMaxBody

// Options configure a Server. Kernel must be set.
type Options struct {
	// Kernel decides, runs, fits and offloads every call, at its tier, in
	// its working directory and mode, with its file store.
	Kernel *mediator.Kernel
	// Elicit, when true, puts escalations to the person at the MCP client
	// through elicitation when the client declared it; otherwise, and
	// always when false, they go to the kernel's approver.
	Elicit bool
	// OutputCap bounds the output of one exec call; 0 is
	// mediator.DefaultOutputCap.
	OutputCap int64
	// Log receives diagnostics; nil drops them.
	Log *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Version is the server's version in the MCP handshake.
	Version string
	// FreshBoxes, when true, runs every call in a box of its own; false
	// (the default) runs the calls of one session that can run warm in
	// the session's warm boxes (mediator.Session).
	FreshBoxes bool
}

// Server is airlock's MCP server. It is safe for concurrent use: calls of
// one or many sessions run in parallel, each in a box of its own (a warm
// box of the session's, when its confinement allows one).
type Server struct {
	o   Options
	srv *sdk.Server
	// key signs the request state of a multi round-trip approval.
	key       []byte
	now       func() time.Time
	outputCap int64
	sess      sessions
}

// New checks o and builds the server with its tools.
func New(o Options) (*Server, error) {
	if o.Kernel == nil {
		return nil, errs.Invalidf("mcp serve: a kernel is required")
	}
	if o.OutputCap <= 0 {
		o.OutputCap = mediator.DefaultOutputCap
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Server{o: o, key: make([]byte, 32), now: o.Now, outputCap: o.OutputCap}
	if _, err := rand.Read(s.key); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "mcp serve: no randomness for the approval key")
	}
	s.srv = sdk.NewServer(&sdk.Implementation{Name: "airlock", Title: "airlock", Version: o.Version},
		&sdk.ServerOptions{Instructions: instructions, Logger: o.Log})
	for _, t := range s.tools() {
		s.srv.AddTool(t.def, s.handler(t))
	}
	return s, nil
}

const instructions = "airlock runs commands and reads and writes files for you inside a sandbox, under a policy. " +
	"A refused call is a POLICY_DENIED error whose reason says what was refused. Paths are relative to the " +
	"working directory. Every tool takes view (stub, summary, section, full), budget (tokens) and query to cut " +
	"its answer; a result too big to show is kept as a file and you get a stub: read parts of it with read_result."

// MCP returns the underlying SDK server (for in-memory transports).
func (s *Server) MCP() *sdk.Server { return s.srv }

// Run serves one session on t until the client leaves or ctx ends.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	return s.srv.Run(ctx, t)
}

// ServeStdio serves one session over newline-delimited JSON-RPC on r and w.
func (s *Server) ServeStdio(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
	// Messages are decoded exactly before the SDK reads them.
	sr, sw := mcp.StrictStdio(r, w, MaxLine)
	err := s.srv.Run(ctx, &sdk.IOTransport{Reader: sr, Writer: sw})
	if err == nil || ctx.Err() != nil || errors.Is(err, io.EOF) {
		return nil
	}
	return errs.Wrap(errs.Unavailable, err, "mcp serve")
}

// Handler serves MCP's streamable HTTP transport behind the front o
// configures: a bearer token, the Host/Origin check against DNS rebinding
// (a web page must not reach a local server through a name it controls),
// the body cap, caps on sessions and on running calls (each tools/call runs
// in a box of its own), and the end of idle sessions. Call it once per
// Server: the cap on running calls is a middleware of the server.
func (s *Server) Handler(ctx context.Context, o httpfront.Options) *httpfront.Front {
	if o.Name == "" {
		o.Name = "mcp serve"
	}
	if o.MaxBody <= 0 {
		o.MaxBody = MaxRequestBody
	}
	if o.Log == nil {
		o.Log = s.o.Log
	}
	if o.SessionIdle == 0 {
		o.SessionIdle = httpfront.DefaultSessionIdle
	}
	// MCP 2026-07-28 requests of no session reach the server; their calls
	// are bounded like any other.
	o.SessionBox, o.Sessionless = false, true
	sh := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.srv },
		&sdk.StreamableHTTPOptions{Logger: s.o.Log, MaxRequestBodyBytes: o.MaxBody,
			// The front checks Host and Origin (with the names of
			// --allow-host). It ends idle sessions itself; the SDK's
			// timeout ends one whose client left before the answer to
			// initialize named it to the front.
			DisableLocalhostProtection: true, SessionTimeout: max(o.SessionIdle, 0)})
	f := httpfront.New(ctx, o, sdkBackend{sh})
	s.srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			extra := req.GetExtra()
			if method != "tools/call" || extra == nil || extra.Header == nil {
				return next(ctx, method, req) // not a call, or not over HTTP
			}
			release, err := f.Box(httpfront.ClientOf(extra.Header))
			if err != nil {
				return nil, mcp.Error(err)
			}
			defer release()
			return next(ctx, method, req)
		}
	})
	return f
}

// sdkBackend is the SDK's handler behind the front; a session the front
// ends is ended as a DELETE from the client would.
type sdkBackend struct{ *sdk.StreamableHTTPHandler }

// Begin lets the SDK answer; the session is the one it names.
func (b sdkBackend) Begin(w http.ResponseWriter, r *http.Request, _ string) bool {
	b.ServeHTTP(w, r)
	return false
}

func (b sdkBackend) End(id string) {
	r, err := http.NewRequest(http.MethodDelete, "/mcp", nil)
	if err != nil {
		return
	}
	r.Header.Set(httpfront.SessionHeader, id)
	b.ServeHTTP(discard{http.Header{}}, r)
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{ h http.Header }

func (d discard) Header() http.Header         { return d.h }
func (d discard) Write(b []byte) (int, error) { return len(b), nil }
func (d discard) WriteHeader(int)             {}
