package gateway

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-run/airlock/mcp/httpfront"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const testToken = "0123456789abcdef0123456789abcdef0123456789abcdef"

// countingFixture is a fixture whose starts are counted safely across
// concurrent HTTP sessions.
func countingFixture(t *testing.T) (*fixture, *atomic.Int32) {
	srv := testServer("echoes")
	f := newFixture(t, srv)
	n := new(atomic.Int32)
	f.opts.Start = func(ctx context.Context) (*Server, error) {
		n.Add(1)
		return sdkStarter(srv, new(int))(ctx)
	}
	return f, n
}

// serveHTTP serves the gateway of f behind o on a loopback listener.
func serveHTTP(t *testing.T, f *fixture, o httpfront.Options) (*HTTPHandler, string) {
	t.Helper()
	g, err := New(f.opts)
	if err != nil {
		t.Fatal(err)
	}
	h := g.Handler(t.Context(), o)
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); h.Close() })
	return h, srv.URL
}

// from is an HTTP client that connects from the loopback address ip and
// sends token ("" sends none).
func from(ip, token string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	tr := &http.Transport{DialContext: d.DialContext}
	return &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		if token != "" {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer "+token)
		}
		return tr.RoundTrip(r)
	})}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func connectHTTP(ctx context.Context, url string, c *http.Client) (*sdk.ClientSession, error) {
	return sdk.NewClient(&sdk.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: url, HTTPClient: c, MaxRetries: -1}, nil)
}

// TestHTTPNeedsToken: without the bearer token no initialize starts a
// server; with it one does.
func TestHTTPNeedsToken(t *testing.T) {
	f, starts := countingFixture(t)
	_, url := serveHTTP(t, f, httpfront.Options{Token: testToken})
	tests := []struct {
		name, auth string
		want       int
	}{
		{"no header", "", http.StatusUnauthorized},
		{"wrong token", "Bearer " + strings.Repeat("0", len(testToken)), http.StatusUnauthorized},
		{"token as a prefix", "Bearer " + testToken[:len(testToken)-1], http.StatusUnauthorized},
		{"basic scheme", "Basic " + testToken, http.StatusUnauthorized},
		{"right token", "Bearer " + testToken, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := starts.Load()
			r, _ := http.NewRequest("POST", url, strings.NewReader(initLine))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", "application/json, text/event-stream")
			if tt.auth != "" {
				r.Header.Set("Authorization", tt.auth)
			}
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			started := starts.Load() - before
			if resp.StatusCode != tt.want {
				t.Fatalf("got %d %q, want %d", resp.StatusCode, body, tt.want)
			}
			if tt.want == http.StatusUnauthorized {
				if started != 0 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") ||
					strings.Count(strings.TrimSpace(string(body)), "\n") != 0 {
					t.Errorf("got %d servers started, WWW-Authenticate %q, body %q; want none, Bearer, one line",
						started, resp.Header.Get("WWW-Authenticate"), body)
				}
			} else if started != 1 {
				t.Errorf("%d servers started for an initialize with the token, want 1", started)
			}
		})
	}
}

// TestHTTPSessionCaps: sessions (each a server in a box) are capped per
// client (remote address) and in all; over a cap an initialize gets 429
// naming the flag, and nothing starts. Ending a session frees its place.
func TestHTTPSessionCaps(t *testing.T) {
	f, starts := countingFixture(t)
	h, url := serveHTTP(t, f, httpfront.Options{Token: testToken, MaxClientSessions: 2, MaxSessions: 3,
		MaxClientBoxes: 100, MaxBoxes: 100})
	ctx := t.Context()
	a, b := from("127.0.0.1", testToken), from("127.0.0.2", testToken)

	var open []*sdk.ClientSession
	for i := range 2 {
		cs, err := connectHTTP(ctx, url, a)
		if err != nil {
			t.Fatalf("session %d of client a: %v", i+1, err)
		}
		open = append(open, cs)
	}
	if _, err := connectHTTP(ctx, url, a); err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
		t.Fatalf("third session of client a: got %v, want 429", err)
	}
	if starts.Load() != 2 {
		t.Errorf("%d servers started, want 2", starts.Load())
	}
	cs, err := connectHTTP(ctx, url, b)
	if err != nil {
		t.Fatalf("first session of client b: %v", err)
	}
	open = append(open, cs)
	// In all: 3.
	code, body := postInit(t, url, b)
	if code != http.StatusTooManyRequests || !strings.Contains(body, "--max-sessions") || !strings.Contains(body, `"id":0`) {
		t.Errorf("a fourth session in all: got %d %s, want 429 naming --max-sessions, with the request's id", code, body)
	}
	code, body = postInit(t, url, a)
	if code != http.StatusTooManyRequests || !strings.Contains(body, "--max-client-sessions") {
		t.Errorf("a third session of client a: got %d %s, want 429 naming --max-client-sessions", code, body)
	}
	if starts.Load() != 3 {
		t.Errorf("%d servers started, want 3", starts.Load())
	}
	// A session of a cannot be used by b.
	if _, err := open[0].ListTools(ctx, nil); err != nil {
		t.Errorf("client a's own session: %v", err)
	}
	open[0].Close()
	if h.front.Sessions() != 2 {
		t.Errorf("%d sessions after one was closed, want 2", h.front.Sessions())
	}
	cs, err = connectHTTP(ctx, url, b)
	if err != nil {
		t.Fatalf("client b after a session ended: %v", err)
	}
	cs.Close()
	for _, cs := range open[1:] {
		cs.Close()
	}
}

// postInit posts an initialize as client c and returns the status and
// body.
func postInit(t *testing.T, url string, c *http.Client) (int, string) {
	t.Helper()
	r, _ := http.NewRequest("POST", url, strings.NewReader(initLine))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b)
}

// TestHTTPSessionOfAnotherClient: a session id is served only to the
// client (remote address) that began it.
func TestHTTPSessionOfAnotherClient(t *testing.T) {
	f, _ := countingFixture(t)
	_, url := serveHTTP(t, f, httpfront.Options{Token: testToken})
	cs, err := connectHTTP(t.Context(), url, from("127.0.0.1", testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	r, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set(httpfront.SessionHeader, cs.ID())
	resp, err := from("127.0.0.3", testToken).Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("another client using the session: got %d, want 404", resp.StatusCode)
	}
}

// TestHTTPOversizedRequest: a body over the cap fails that request with
// 413 and a JSON-RPC error; the session and its other calls go on.
func TestHTTPOversizedRequest(t *testing.T) {
	f, _ := countingFixture(t)
	_, url := serveHTTP(t, f, httpfront.Options{Token: testToken, MaxBody: 64 << 10})
	ctx := t.Context()
	cs, err := connectHTTP(ctx, url, from("127.0.0.1", testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": strings.Repeat("x", 100<<10)}})
	if err == nil || !strings.Contains(err.Error(), "over 65536 bytes") {
		t.Fatalf("an oversized call: got %v, want the body cap's JSON-RPC error", err)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "still here"}})
	if err != nil || res.Content[0].(*sdk.TextContent).Text != "echo: still here" {
		t.Fatalf("a call after the oversized one: got %v, %v", res, err)
	}
	// Raw: the status and the body.
	r, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"pad":"`+strings.Repeat("y", 70<<10)+`"}}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set(httpfront.SessionHeader, cs.ID())
	resp, err := from("127.0.0.1", testToken).Do(r)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), `"error"`) {
		t.Errorf("got %d %s, want 413 and a JSON-RPC error", resp.StatusCode, b)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Errorf("the session after a refused request: %v", err)
	}
}

// TestHTTPIdleSessionEnds: a session no request touches for SessionIdle
// is ended, its server with it, and its place is free again.
func TestHTTPIdleSessionEnds(t *testing.T) {
	f, starts := countingFixture(t)
	h, url := serveHTTP(t, f, httpfront.Options{Token: testToken, SessionIdle: 150 * time.Millisecond, MaxClientSessions: 1})
	c := from("127.0.0.1", testToken)
	// A client that began a session and went away without DELETE (one
	// that is still there holds its event stream open, and is not idle).
	if code, body := postInit(t, url, c); code != http.StatusOK {
		t.Fatalf("initialize: %d %s", code, body)
	}
	if h.front.Sessions() != 1 {
		t.Fatalf("%d sessions after an initialize, want 1", h.front.Sessions())
	}
	deadline := time.Now().Add(5 * time.Second)
	for h.front.Sessions() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	h.mu.Lock()
	left := len(h.sessions)
	h.mu.Unlock()
	if h.front.Sessions() != 0 || left != 0 {
		t.Fatalf("%d sessions counted, %d servers running after the idle time, want none", h.front.Sessions(), left)
	}
	cs2, err := connectHTTP(t.Context(), url, c)
	if err != nil {
		t.Fatalf("a new session after the idle one ended: %v", err)
	}
	cs2.Close()
	if starts.Load() != 2 {
		t.Errorf("%d servers started, want 2", starts.Load())
	}
}

// TestHTTPBatchedInitialize: an initialize hidden in a batch does not
// begin an uncounted session.
func TestHTTPBatchedInitialize(t *testing.T) {
	f, starts := countingFixture(t)
	_, url := serveHTTP(t, f, httpfront.Options{Token: testToken})
	r, _ := http.NewRequest("POST", url, strings.NewReader("["+initLine+"]"))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := from("127.0.0.1", testToken).Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || starts.Load() != 0 {
		t.Errorf("got %d with %d servers started, want 400 and none", resp.StatusCode, starts.Load())
	}
}
