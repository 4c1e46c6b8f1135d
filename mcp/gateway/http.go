package gateway

import (
	"context"
	"net/http"
	"sync"

	"github.com/airlock-run/airlock/mcp/httpfront"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxRequestBody bounds one HTTP request from a client.
const MaxRequestBody = httpfront.DefaultMaxBody

// Handler serves MCP's streamable HTTP transport behind the front o
// configures (bearer token, Host/Origin, body cap, session and box caps,
// idle sessions): every session, begun by an initialize the front admitted,
// gets a wrapped server of its own (a box, so o.SessionBox is set), ended
// with the session (DELETE, idle) or when ctx ends.
func (g *Gateway) Handler(ctx context.Context, o httpfront.Options) *HTTPHandler {
	h := &HTTPHandler{g: g, ctx: ctx, sessions: map[string]*httpSession{}}
	if o.Name == "" {
		o.Name = "mcp wrap"
	}
	if o.SessionIdle == 0 {
		o.SessionIdle = g.o.SessionIdle // 0 there too: the front's default
	}
	o.SessionBox, o.Sessionless = true, false
	if o.Log == nil {
		o.Log = g.o.Log
	}
	h.front = httpfront.New(ctx, o, (*backend)(h))
	return h
}

// HTTPHandler is the streamable HTTP side of a Gateway.
type HTTPHandler struct {
	g        *Gateway
	ctx      context.Context
	front    *httpfront.Front
	mu       sync.Mutex
	sessions map[string]*httpSession
}

type httpSession struct {
	t      *sdk.StreamableServerTransport
	cancel context.CancelFunc
	done   chan struct{}
}

func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.front.ServeHTTP(w, r)
}

// backend is what the front lets through: an initialize (its body checked)
// or a request of a session the front admitted.
type backend HTTPHandler

func (b *backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := (*HTTPHandler)(b)
	id := r.Header.Get(httpfront.SessionHeader)
	h.mu.Lock()
	s := h.sessions[id]
	h.mu.Unlock()
	if s == nil {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodDelete:
		h.end(id)
		w.WriteHeader(http.StatusNoContent)
	case http.MethodGet, http.MethodPost:
		s.t.ServeHTTP(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (b *backend) Begin(w http.ResponseWriter, r *http.Request, id string) bool {
	return (*HTTPHandler)(b).start(w, r, id)
}

func (b *backend) End(id string) { (*HTTPHandler)(b).end(id) }

// start begins session id, and its wrapped server, with the initialize
// request the front admitted; it reports whether the server was started.
func (h *HTTPHandler) start(w http.ResponseWriter, r *http.Request, id string) bool {
	t := &sdk.StreamableServerTransport{SessionID: id}
	conn, err := t.Connect(h.ctx)
	if err != nil {
		http.Error(w, "session could not be started", http.StatusInternalServerError)
		return false
	}
	ctx, cancel := context.WithCancel(h.ctx)
	s := &httpSession{t: t, cancel: cancel, done: make(chan struct{})}
	h.mu.Lock()
	h.sessions[id] = s
	h.mu.Unlock()
	go func() {
		defer close(s.done)
		if err := h.g.Serve(ctx, conn); err != nil {
			h.g.o.Log.Warn("mcp session ended", "session", id, "err", err)
		}
		h.mu.Lock()
		delete(h.sessions, id)
		h.mu.Unlock()
		conn.Close()
		// The front gives the session's slots back.
		h.front.Ended(id)
	}()
	t.ServeHTTP(w, r)
	return true
}

func (h *HTTPHandler) end(id string) {
	h.mu.Lock()
	s := h.sessions[id]
	delete(h.sessions, id)
	h.mu.Unlock()
	if s != nil {
		s.cancel()
		<-s.done
	}
}

// Close ends every session and waits for their servers.
func (h *HTTPHandler) Close() { h.front.Close() }
