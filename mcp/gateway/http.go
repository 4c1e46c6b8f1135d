package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/airlock-run/airlock/mcp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxRequestBody bounds one HTTP request from a client.
const MaxRequestBody = 8 << 20

// Handler serves MCP's streamable HTTP transport: every session (begun by
// an initialize without a session id) gets a wrapped server of its own,
// ended with the session (DELETE) or when ctx ends. Requests whose Host or
// Origin is not a loopback name are refused (DNS rebinding).
func (g *Gateway) Handler(ctx context.Context) *HTTPHandler {
	return &HTTPHandler{g: g, ctx: ctx, sessions: map[string]*httpSession{}}
}

// HTTPHandler is the streamable HTTP side of a Gateway.
type HTTPHandler struct {
	g        *Gateway
	ctx      context.Context
	mu       sync.Mutex
	sessions map[string]*httpSession
	reaping  bool
}

// reap ends sessions no request has touched for Options.SessionIdle: a
// client that went away without DELETE would otherwise leave its boxed
// server running until the gateway stops.
func (h *HTTPHandler) reap() {
	idle := h.g.o.SessionIdle
	tick := time.NewTicker(min(idle/4+time.Millisecond, time.Minute))
	defer tick.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-tick.C:
		}
		h.mu.Lock()
		var stale []string
		for id, s := range h.sessions {
			if last, quiet := s.idleSince(); quiet && time.Since(last) > idle {
				stale = append(stale, id)
			}
		}
		h.mu.Unlock()
		for _, id := range stale {
			h.g.o.Log.Info("mcp session idle; ended", "session", id)
			h.end(id)
		}
	}
}

type httpSession struct {
	t      *sdk.StreamableServerTransport
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	active int       // requests being served (an open event stream counts)
	last   time.Time // when the last request ended
}

// busy marks a request of the session begun (+1) or ended (-1).
func (s *httpSession) busy(d int) {
	s.mu.Lock()
	s.active += d
	s.last = time.Now()
	s.mu.Unlock()
}

func (s *httpSession) idleSince() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last, s.active == 0
}

const sessionHeader = "Mcp-Session-Id"

func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	mcp.LoopbackOnly(http.HandlerFunc(h.serve), nil).ServeHTTP(w, r)
}

func (h *HTTPHandler) serve(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(sessionHeader)
	if id == "" {
		h.start(w, r)
		return
	}
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
		if r.Method == http.MethodPost && !checkBody(w, r) {
			return
		}
		s.busy(1)
		defer s.busy(-1)
		s.t.ServeHTTP(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// start begins a session with an initialize request.
func (h *HTTPHandler) start(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "Bad Request: a session id is required", http.StatusBadRequest)
		return
	}
	if !checkBody(w, r) {
		return
	}
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != "initialize" {
		http.Error(w, "Bad Request: a session begins with initialize", http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	id := rand.Text()
	t := &sdk.StreamableServerTransport{SessionID: id}
	conn, err := t.Connect(h.ctx)
	if err != nil {
		http.Error(w, "session could not be started", http.StatusInternalServerError)
		return
	}
	ctx, cancel := context.WithCancel(h.ctx)
	s := &httpSession{t: t, cancel: cancel, done: make(chan struct{}), last: time.Now(), active: 1}
	defer s.busy(-1)
	h.mu.Lock()
	h.sessions[id] = s
	if !h.reaping && h.g.o.SessionIdle > 0 {
		h.reaping = true
		go h.reap()
	}
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
	}()
	t.ServeHTTP(w, r)
}

// checkBody reads a POST body (at most MaxRequestBody) and refuses it with
// a JSON-RPC error when it is not JSON or holds a key twice, before the
// transport parses it (and keeps one of the two); otherwise the body is put
// back for the transport.
func checkBody(w http.ResponseWriter, r *http.Request) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBody))
	if err != nil {
		http.Error(w, "request body too large or unreadable", http.StatusRequestEntityTooLarge)
		return false
	}
	if err := mcp.CheckJSON(body); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil,
			"error": map[string]any{"code": jsonrpc.CodeParseError, "message": "airlock: " + err.Error()}})
		w.Write(b)
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
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
func (h *HTTPHandler) Close() {
	h.mu.Lock()
	ids := make([]string, 0, len(h.sessions))
	for id := range h.sessions {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	for _, id := range ids {
		h.end(id)
	}
}
