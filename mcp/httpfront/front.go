// Package httpfront is the guard in front of airlock's MCP endpoints on
// streamable HTTP (`airlock mcp serve --http`, `airlock mcp wrap --http`):
// every request passes it before any MCP code sees it, and no session and
// no box starts unless it let the request through.
//
//	request ──Host/Origin (DNS rebinding)──403
//	        ──Authorization: Bearer <token> (constant time)──401
//	        ──body ≤ MaxBody, JSON, no duplicate keys──413 / 400
//	        ──initialize: sessions of the client and in all under the caps──429
//	        ──session id: known, of the same client──404
//	        ──▶ Backend (the SDK's handler, or the gateway's sessions)
//
// A client is a remote address (its IP, without the port). Every cap holds
// per client AND in all: on loopback every local process shares 127.0.0.1
// unless it binds another 127.x address, so the caps in all are what bound
// the machine; the per-client caps keep one client from taking them all.
//
// mcp/serve, mcp/gateway and internal/cli import it.
package httpfront

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/mcp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Defaults of Options, and the flags that change them.
const (
	DefaultMaxSessions       = 32
	DefaultMaxClientSessions = 8
	DefaultMaxBoxes          = 32
	DefaultMaxClientBoxes    = 8
	DefaultSessionIdle       = 30 * time.Minute
	// DefaultMaxBody bounds one request body: a tools/call's arguments, or
	// a client's answer to the server.
	DefaultMaxBody = 8 << 20
)

// The command-line flags that set Options (internal/cli defines them; the
// refusals here name them so the person reading one knows what to raise).
const (
	FlagTokenFile         = "token-file"
	FlagNoAuth            = "no-auth"
	FlagAllowHost         = "allow-host"
	FlagMaxSessions       = "max-sessions"
	FlagMaxClientSessions = "max-client-sessions"
	FlagMaxBoxes          = "max-boxes"
	FlagMaxClientBoxes    = "max-client-boxes"
	FlagSessionIdle       = "session-idle"
)

// SessionHeader is MCP's session header.
const SessionHeader = "Mcp-Session-Id"

// ClientHeader carries the client a request came from (its remote IP) to
// the backend, which reads it with ClientOf. The front sets it on every
// request it lets through, replacing whatever the client sent.
const ClientHeader = "Airlock-Client"

// Options configure a Front. The zero value of a number is its default.
type Options struct {
	// Name names the command in messages ("mcp serve", "mcp wrap").
	Name string
	// Token is the bearer token every request must carry. "" with NoAuth
	// false refuses every request (fail closed).
	Token string
	// NoAuth lets requests through without a token (a person asked for it
	// on a loopback address).
	NoAuth bool
	// AllowHosts are host names accepted in Host and Origin besides
	// loopback ones.
	AllowHosts []string
	// MaxSessions and MaxClientSessions bound open sessions in all and per
	// client.
	MaxSessions, MaxClientSessions int
	// MaxBoxes and MaxClientBoxes bound boxes running for HTTP clients in
	// all and per client: a session's boxed server (SessionBox), or a
	// running call (Front.Box).
	MaxBoxes, MaxClientBoxes int
	// SessionBox says each session holds a box for its whole life (mcp
	// wrap: one boxed server per session).
	SessionBox bool
	// SessionIdle ends a session no request has touched for this long (an
	// open event stream counts as a request); 0 is DefaultSessionIdle, a
	// negative value never ends one.
	SessionIdle time.Duration
	// MaxBody bounds a request body; 0 is DefaultMaxBody.
	MaxBody int64
	// Sessionless lets a POST without a session id that is not initialize
	// reach the backend (MCP 2026-07-28 requests of no session); false
	// refuses it with 400. Sessions it makes anyway are ended at once.
	Sessionless bool
	// Log receives diagnostics; nil drops them.
	Log *slog.Logger
}

// Backend serves what the front let through: requests of the sessions the
// front knows and, with Options.Sessionless, requests of no session; and
// initialize requests the front admitted, through Begin.
type Backend interface {
	http.Handler
	// Begin answers the initialize r, beginning session id (a fresh random
	// id the front chose and already counts). A backend that names its
	// sessions itself answers with its own id in Mcp-Session-Id, and the
	// front takes that one instead. Begin reports whether a session may
	// have begun even though no id was answered (the client went away
	// before the answer): the front then keeps counting it as id until it
	// ends.
	Begin(w http.ResponseWriter, r *http.Request, id string) (kept bool)
	// End ends session id (idle, or the front is closing) and waits for it;
	// an id it does not know is no error.
	End(id string)
}

// Front is the guard; it is an http.Handler.
type Front struct {
	o   Options
	b   Backend
	ctx context.Context
	// guarded is serve behind the Host/Origin check.
	guarded http.Handler

	mu       sync.Mutex
	sessions map[string]*session
	// counts of the sessions (admitted and not yet ended, including those
	// whose initialize is being answered) and boxes, per client and in all.
	nSessions, nBoxes   int
	perSessions, perBox map[string]int
	closed              bool
}

type session struct {
	client string
	box    bool // holds a box (Options.SessionBox)
	active int  // requests being served
	last   time.Time
}

// New returns the front of b; it reaps idle sessions until ctx ends.
func New(ctx context.Context, o Options, b Backend) *Front {
	if o.Name == "" {
		o.Name = "mcp"
	}
	o.MaxSessions = orDefault(o.MaxSessions, DefaultMaxSessions)
	o.MaxClientSessions = orDefault(o.MaxClientSessions, DefaultMaxClientSessions)
	o.MaxBoxes = orDefault(o.MaxBoxes, DefaultMaxBoxes)
	o.MaxClientBoxes = orDefault(o.MaxClientBoxes, DefaultMaxClientBoxes)
	if o.SessionIdle == 0 {
		o.SessionIdle = DefaultSessionIdle
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	f := &Front{o: o, b: b, ctx: ctx, sessions: map[string]*session{},
		perSessions: map[string]int{}, perBox: map[string]int{}}
	f.guarded = mcp.LoopbackOnly(http.HandlerFunc(f.serve), o.AllowHosts)
	if o.SessionIdle > 0 {
		go f.reap()
	}
	return f
}

func orDefault(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// ClientOf reads the client the front put on a request's header.
func ClientOf(h http.Header) string { return h.Get(ClientHeader) }

// clientOf is a request's client: its remote IP.
func clientOf(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) { f.guarded.ServeHTTP(w, r) }

func (f *Front) serve(w http.ResponseWriter, r *http.Request) {
	if !f.authorized(w, r) {
		return
	}
	client := clientOf(r)
	r.Header.Set(ClientHeader, client)
	var body []byte
	if r.Method == http.MethodPost {
		var ok bool
		if body, ok = f.readBody(w, r); !ok {
			return
		}
	}
	if id := r.Header.Get(SessionHeader); id != "" {
		f.serveSession(w, r, id, client)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "Bad Request: a session id is required", http.StatusBadRequest)
		return
	}
	switch kind, reqID := classify(body); kind {
	case initialize:
		f.begin(w, r, client, reqID)
	case hasInitialize:
		writeError(w, http.StatusBadRequest, reqID, errs.Invalidf("airlock: %s: initialize must come alone, not in a batch", f.o.Name))
	default:
		if !f.o.Sessionless {
			http.Error(w, "Bad Request: a session begins with initialize", http.StatusBadRequest)
			return
		}
		f.serveNoSession(w, r)
	}
}

// readBody reads a POST body of at most MaxBody and checks it is JSON
// without duplicate keys (the SDK would keep one of the two), then puts it
// back for the backend. A body too big fails this request alone.
func (f *Front) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, f.o.MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			// The error answers the request by its id, when it came
			// before the cap, so the client's call fails and not the
			// session.
			writeError(w, http.StatusRequestEntityTooLarge, peekID(body), errs.Invalidf(
				"airlock: %s: the request body is over %d bytes; send less in one request", f.o.Name, f.o.MaxBody))
		} else {
			writeError(w, http.StatusBadRequest, nil, errs.Invalidf("airlock: %s: the request body could not be read", f.o.Name))
		}
		return nil, false
	}
	if err := mcp.CheckJSON(body); err != nil {
		writeJSON(w, http.StatusBadRequest, nil, &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "airlock: " + err.Error()})
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return body, true
}

// peekID finds the id of the request whose first bytes are prefix: a
// member "id" of the top-level object that comes before the prefix ends.
func peekID(prefix []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		if key == "id" {
			var id json.RawMessage
			if dec.Decode(&id) != nil {
				return nil
			}
			if b := bytes.TrimSpace(id); len(b) > 0 && (b[0] == '"' || b[0] == '-' || (b[0] >= '0' && b[0] <= '9')) {
				return id
			}
			return nil
		}
		if !skipValue(dec) {
			return nil
		}
	}
	return nil
}

// skipValue reads one JSON value from dec, token by token (a value cut off
// by the cap ends in an error).
func skipValue(dec *json.Decoder) bool {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return true
		}
	}
}

type bodyKind int

const (
	other         bodyKind = iota
	initialize             // one initialize request
	hasInitialize          // a batch holding an initialize
)

// classify tells whether body is one initialize request, and its id.
func classify(body []byte) (bodyKind, json.RawMessage) {
	type msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		var batch []msg
		if json.Unmarshal(body, &batch) == nil {
			for _, m := range batch {
				if m.Method == "initialize" {
					return hasInitialize, nil
				}
			}
		}
		return other, nil
	}
	var m msg
	if json.Unmarshal(body, &m) == nil && m.Method == "initialize" {
		return initialize, m.ID
	}
	return other, m.ID
}

// begin admits an initialize under the caps and lets the backend answer
// it. The session is counted, and reaped when idle, from before anything
// starts, so that a client that goes away before the answer cannot leave
// an uncounted box behind.
func (f *Front) begin(w http.ResponseWriter, r *http.Request, client string, reqID json.RawMessage) {
	if err := f.admit(client); err != nil {
		f.o.Log.Info("mcp session refused", "client", client, "reason", err.Error())
		w.Header().Set("Retry-After", "10")
		writeError(w, http.StatusTooManyRequests, reqID, err)
		return
	}
	id := rand.Text()
	f.register(id, client)
	answered := false
	cw := &captureWriter{ResponseWriter: w}
	cw.onHeader = func() {
		// Before the answer leaves: the client's next request may come at
		// once.
		if got := cw.Header().Get(SessionHeader); got != "" {
			answered = true
			if got != id {
				f.rekey(id, got)
				id = got
			}
		}
	}
	kept := f.b.Begin(cw, r, id)
	if !answered && !kept {
		f.forget(id)
		return
	}
	f.touch(id, -1)
}

// rekey moves session old to the id the backend gave it.
func (f *Front) rekey(old, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.sessions[old]; s != nil {
		delete(f.sessions, old)
		f.sessions[id] = s
	}
}

// admit reserves a session (and with SessionBox a box) for client, or
// says which cap is full and the flag that raises it.
func (f *Front) admit(client string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return errs.Unavailablef("airlock: %s: shutting down", f.o.Name)
	}
	if err := f.capErr(client, f.nSessions, f.perSessions, f.o.MaxSessions, f.o.MaxClientSessions,
		"sessions are open", FlagMaxSessions, FlagMaxClientSessions, "end one (DELETE)"); err != nil {
		return err
	}
	if f.o.SessionBox {
		if err := f.capErr(client, f.nBoxes, f.perBox, f.o.MaxBoxes, f.o.MaxClientBoxes,
			"boxes are running", FlagMaxBoxes, FlagMaxClientBoxes, "end a session (DELETE)"); err != nil {
			return err
		}
		f.nBoxes++
		f.perBox[client]++
	}
	f.nSessions++
	f.perSessions[client]++
	return nil
}

// capErr says which of the caps n (in all) and per[client] reached.
func (f *Front) capErr(client string, n int, per map[string]int, all, each int, what, flagAll, flagEach, fix string) error {
	if per[client] >= each {
		return errs.Unavailablef("airlock: %s: %d %s for client %s, the most one client may have (%s, or raise --%s)",
			f.o.Name, per[client], what, client, fix, flagEach)
	}
	if n >= all {
		return errs.Unavailablef("airlock: %s: %d %s, the most in all (%s, or raise --%s)", f.o.Name, n, what, fix, flagAll)
	}
	return nil
}

// release gives back what admit reserved.
func (f *Front) release(client string, box bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nSessions--
	dec(f.perSessions, client)
	if box {
		f.nBoxes--
		dec(f.perBox, client)
	}
}

func dec(m map[string]int, k string) {
	if m[k]--; m[k] <= 0 {
		delete(m, k)
	}
}

func (f *Front) register(id, client string) {
	f.mu.Lock()
	f.sessions[id] = &session{client: client, box: f.o.SessionBox, active: 1, last: time.Now()}
	f.mu.Unlock()
}

// touch marks a request of session id begun (+1) or ended (-1).
func (f *Front) touch(id string, d int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.sessions[id]; s != nil {
		s.active += d
		s.last = time.Now()
	}
}

// forget drops session id and gives back its slots; it reports whether
// the front knew it.
func (f *Front) forget(id string) bool {
	f.mu.Lock()
	s := f.sessions[id]
	delete(f.sessions, id)
	f.mu.Unlock()
	if s == nil {
		return false
	}
	f.release(s.client, s.box)
	return true
}

// Ended tells the front the backend ended session id on its own (its
// server exited).
func (f *Front) Ended(id string) { f.forget(id) }

// Sessions is the number of open sessions.
func (f *Front) Sessions() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sessions)
}

// Boxes is the number of boxes counted as running for HTTP clients.
func (f *Front) Boxes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nBoxes
}

// serveSession serves a request of a session the front admitted, to the
// client that began it; any other id is "not found", as MCP wants for a
// session that ended.
func (f *Front) serveSession(w http.ResponseWriter, r *http.Request, id, client string) {
	f.mu.Lock()
	s := f.sessions[id]
	known := s != nil && s.client == client
	if known {
		s.active++
		s.last = time.Now()
	}
	f.mu.Unlock()
	if !known {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	cw := &captureWriter{ResponseWriter: w}
	f.b.ServeHTTP(cw, r)
	f.touch(id, -1)
	if r.Method == http.MethodDelete || cw.status == http.StatusNotFound {
		// Ended by the client, or gone in the backend.
		f.forget(id)
	}
}

// serveNoSession serves a request of no session; a session the backend
// made for it anyway is ended at once, since the front never admitted it.
func (f *Front) serveNoSession(w http.ResponseWriter, r *http.Request) {
	cw := &captureWriter{ResponseWriter: w}
	f.b.ServeHTTP(cw, r)
	if id := cw.Header().Get(SessionHeader); id != "" {
		f.mu.Lock()
		_, ours := f.sessions[id]
		f.mu.Unlock()
		if !ours {
			f.b.End(id)
		}
	}
}

// Box reserves a box for client (read with ClientOf), for as long as a
// call runs in it; release gives it back. Over a cap it says which, and
// the flag that raises it.
func (f *Front) Box(client string) (release func(), err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.capErr(client, f.nBoxes, f.perBox, f.o.MaxBoxes, f.o.MaxClientBoxes,
		"calls are running in boxes", FlagMaxBoxes, FlagMaxClientBoxes, "wait for one to end"); err != nil {
		return nil, err
	}
	f.nBoxes++
	f.perBox[client]++
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			f.nBoxes--
			dec(f.perBox, client)
			f.mu.Unlock()
		})
	}, nil
}

// reap ends sessions no request has touched for SessionIdle: a client that
// went away without DELETE would otherwise keep its server (and box)
// until airlock stops.
func (f *Front) reap() {
	idle := f.o.SessionIdle
	tick := time.NewTicker(min(idle/4+time.Millisecond, time.Minute))
	defer tick.Stop()
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-tick.C:
		}
		f.mu.Lock()
		var stale []string
		for id, s := range f.sessions {
			if s.active == 0 && time.Since(s.last) > idle {
				stale = append(stale, id)
			}
		}
		f.mu.Unlock()
		for _, id := range stale {
			f.o.Log.Info("mcp session idle; ended", "session", id, "idle", idle)
			f.b.End(id)
			f.forget(id)
		}
	}
}

// Close refuses new sessions, ends every session and waits for them.
func (f *Front) Close() {
	f.mu.Lock()
	f.closed = true
	ids := make([]string, 0, len(f.sessions))
	for id := range f.sessions {
		ids = append(ids, id)
	}
	f.mu.Unlock()
	for _, id := range ids {
		f.b.End(id)
		f.forget(id)
	}
}

// captureWriter notes the status the backend answers with, and lets the
// front act on the headers just before they are sent.
type captureWriter struct {
	http.ResponseWriter
	onHeader func()
	wrote    bool
	status   int
}

func (c *captureWriter) WriteHeader(code int) {
	if !c.wrote {
		c.wrote, c.status = true, code
		if c.onHeader != nil {
			c.onHeader()
		}
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *captureWriter) Write(b []byte) (int, error) {
	if !c.wrote {
		c.WriteHeader(http.StatusOK)
	}
	return c.ResponseWriter.Write(b)
}

// Flush passes a flush on: the event stream of a call is flushed as it
// goes.
func (c *captureWriter) Flush() {
	if !c.wrote {
		c.WriteHeader(http.StatusOK)
	}
	http.NewResponseController(c.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection underneath.
func (c *captureWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// writeError answers with status and a JSON-RPC error made from err (its
// message only, never its cause).
func writeError(w http.ResponseWriter, status int, id json.RawMessage, err error) {
	writeJSON(w, status, id, mcp.Error(err))
}

func writeJSON(w http.ResponseWriter, status int, id json.RawMessage, je *jsonrpc.Error) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": je})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
