package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

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
}

type httpSession struct {
	t      *sdk.StreamableServerTransport
	cancel context.CancelFunc
	done   chan struct{}
}

const sessionHeader = "Mcp-Session-Id"

func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !loopbackHost(r.Host) {
		http.Error(w, "Forbidden: the Host header does not name this machine", http.StatusForbidden)
		return
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !loopbackHost(u.Host) {
			http.Error(w, "Forbidden: cross-origin request", http.StatusForbidden)
			return
		}
	}
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
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, MaxRequestBody)
		}
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
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBody))
	if err != nil {
		http.Error(w, "request body too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
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
	}()
	t.ServeHTTP(w, r)
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

// loopbackHost reports whether a Host header (name[:port]) names this
// machine's loopback.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
