package serve

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-run/airlock/mcp/httpfront"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const testToken = "0123456789abcdef0123456789abcdef0123456789abcdef"

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// serveFront serves f's server behind o on a loopback listener.
func serveFront(t *testing.T, f *fixture, o httpfront.Options) (*httpfront.Front, string) {
	t.Helper()
	h := f.srv.Handler(t.Context(), o)
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

// connect connects the SDK's client as c; version "" is the SDK's latest
// (2026-07-28 asks server/discover and needs no session), an older one
// begins a session with initialize.
func connect(ctx context.Context, url string, c *http.Client, version string) (*sdk.ClientSession, error) {
	return sdk.NewClient(&sdk.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: url, HTTPClient: c, MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: version})
}

func post(t *testing.T, url string, c *http.Client, body, session string) (*http.Response, string) {
	t.Helper()
	r, _ := http.NewRequest("POST", url, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		r.Header.Set(httpfront.SessionHeader, session)
	}
	resp, err := c.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8192))
	return resp, string(b)
}

// TestServeHTTPNeedsToken: `airlock mcp serve --http` answers only requests
// with the token it printed; the rest get 401 with WWW-Authenticate and
// one line, and never reach MCP.
func TestServeHTTPNeedsToken(t *testing.T) {
	bin := airlockBin(t)
	work, environ := cliHome(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url, token := startHTTP(t, ctx, bin, work, environ)
	tests := []struct {
		name, auth string
		want       int
	}{
		{"no header", "", http.StatusUnauthorized},
		{"wrong token", "Bearer " + strings.Repeat("a", 64), http.StatusUnauthorized},
		{"empty bearer", "Bearer ", http.StatusUnauthorized},
		{"right token", "Bearer " + token, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := http.NewRequest("POST", url, strings.NewReader(initialize))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", "application/json, text/event-stream")
			if tt.auth != "" {
				r.Header.Set("Authorization", tt.auth)
			}
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("got %d %q, want %d", resp.StatusCode, b, tt.want)
			}
			if tt.want != http.StatusUnauthorized {
				return
			}
			if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") || strings.Contains(strings.TrimSpace(string(b)), "\n") ||
				resp.Header.Get(httpfront.SessionHeader) != "" || strings.Contains(string(b), "result") {
				t.Errorf("got WWW-Authenticate %q, session %q, body %q; want Bearer, none, one line of reason",
					resp.Header.Get("WWW-Authenticate"), resp.Header.Get(httpfront.SessionHeader), b)
			}
		})
	}
}

// TestServeHTTPSessionCaps: sessions are capped per client and in all;
// over a cap an initialize gets 429 naming the flag.
func TestServeHTTPSessionCaps(t *testing.T) {
	f := newFixture(t, testPolicy, "observe", nil, nil)
	front, url := serveFront(t, f, httpfront.Options{Token: testToken, MaxClientSessions: 2, MaxSessions: 3})
	ctx := t.Context()
	a, b := from("127.0.0.1", testToken), from("127.0.0.2", testToken)
	for i := range 2 {
		cs, err := connect(ctx, url, a, "2025-11-25")
		if err != nil {
			t.Fatalf("session %d of client a: %v", i+1, err)
		}
		defer cs.Close()
	}
	resp, body := post(t, url, a, initialize, "")
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, "--max-client-sessions") {
		t.Errorf("a third session of client a: got %d %s, want 429 naming --max-client-sessions", resp.StatusCode, body)
	}
	cs, err := connect(ctx, url, b, "2025-11-25")
	if err != nil {
		t.Fatalf("a session of client b: %v", err)
	}
	defer cs.Close()
	resp, body = post(t, url, b, initialize, "")
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, "--max-sessions") {
		t.Errorf("a fourth session in all: got %d %s, want 429 naming --max-sessions", resp.StatusCode, body)
	}
	if n := front.Sessions(); n != 3 {
		t.Errorf("%d sessions, want 3", n)
	}
}

// TestServeHTTPCallCap: each tools/call runs in a box; running calls are
// capped per client and in all, sessions or not, and a call over a cap is
// refused with a JSON-RPC error naming the flag, before any box starts.
func TestServeHTTPCallCap(t *testing.T) {
	f := newFixture(t, testPolicy, "observe", nil, nil)
	front, url := serveFront(t, f, httpfront.Options{Token: testToken, MaxClientBoxes: 1, MaxBoxes: 2})
	ctx := t.Context()
	var clients []*sdk.ClientSession
	for _, c := range []struct{ ip, version string }{{"127.0.0.1", ""}, {"127.0.0.2", "2025-11-25"}, {"127.0.0.3", ""}} {
		cs, err := connect(ctx, url, from(c.ip, testToken), c.version)
		if err != nil {
			t.Fatalf("client %s: %v", c.ip, err)
		}
		defer cs.Close()
		clients = append(clients, cs)
	}
	a, b, c := clients[0], clients[1], clients[2]
	sleep := &sdk.CallToolParams{Name: "exec", Arguments: map[string]any{"argv": []string{"sleep", "3"}}}
	echo := &sdk.CallToolParams{Name: "exec", Arguments: map[string]any{"argv": []string{"echo", "ok"}}}

	var wg sync.WaitGroup
	defer wg.Wait()
	running := func(cs *sdk.ClientSession, want int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := cs.CallTool(ctx, sleep); err != nil {
				t.Errorf("a call under the caps: %v", err)
			}
		}()
		for deadline := time.Now().Add(10 * time.Second); front.Boxes() < want && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if front.Boxes() != want {
			t.Fatalf("%d boxes counted, want %d", front.Boxes(), want)
		}
	}
	running(a, 1)
	if _, err := a.CallTool(ctx, echo); err == nil || !strings.Contains(err.Error(), "--max-client-boxes") {
		t.Errorf("a second call of client a: got %v, want a refusal naming --max-client-boxes", err)
	}
	running(b, 2)
	if _, err := c.CallTool(ctx, echo); err == nil || !strings.Contains(err.Error(), "--max-boxes") {
		t.Errorf("a third call in all: got %v, want a refusal naming --max-boxes", err)
	}
	wg.Wait()
	if res, err := c.CallTool(ctx, echo); err != nil || !strings.Contains(resultText(res), "ok") {
		t.Errorf("a call once the others ended: got %v, %v", res, err)
	}
	if n := front.Boxes(); n != 0 {
		t.Errorf("%d boxes counted after every call ended, want 0", n)
	}
}

// TestServeHTTPOversizedRequest: a body over the cap fails that request
// with 413 and a JSON-RPC error; the session and its other calls go on.
func TestServeHTTPOversizedRequest(t *testing.T) {
	f := newFixture(t, testPolicy, "observe", nil, nil)
	_, url := serveFront(t, f, httpfront.Options{Token: testToken, MaxBody: 64 << 10})
	ctx := t.Context()
	c := from("127.0.0.1", testToken)
	cs, err := connect(ctx, url, c, "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	big := &sdk.CallToolParams{Name: "exec", Arguments: map[string]any{"argv": []string{"echo", strings.Repeat("x", 100<<10)}}}
	if _, err := cs.CallTool(ctx, big); err == nil || !strings.Contains(err.Error(), "over 65536 bytes") {
		t.Fatalf("an oversized call: got %v, want the body cap's JSON-RPC error", err)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "exec", Arguments: map[string]any{"argv": []string{"echo", "still", "here"}}})
	if err != nil || !strings.Contains(resultText(res), "still here") {
		t.Fatalf("a call after the oversized one: got %v, %v", res, err)
	}
	resp, body := post(t, url, c, `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"pad":"`+strings.Repeat("y", 70<<10)+`"}}`, cs.ID())
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(body, `"id":7`) || !strings.Contains(body, `"error"`) {
		t.Errorf("got %d %s, want 413 and a JSON-RPC error for id 7", resp.StatusCode, body)
	}
}

// TestServeHTTPIdleSession: a session no request touches for SessionIdle
// is ended; its id is then unknown.
func TestServeHTTPIdleSession(t *testing.T) {
	f := newFixture(t, testPolicy, "observe", nil, nil)
	front, url := serveFront(t, f, httpfront.Options{Token: testToken, SessionIdle: 150 * time.Millisecond})
	c := from("127.0.0.1", testToken)
	sdkSessions := func() int {
		n := 0
		for range f.srv.MCP().Sessions() {
			n++
		}
		return n
	}
	before := sdkSessions() // the fixture's own in-memory session
	resp, body := post(t, url, c, initialize, "")
	id := resp.Header.Get(httpfront.SessionHeader)
	if resp.StatusCode != http.StatusOK || id == "" || front.Sessions() != 1 {
		t.Fatalf("initialize: got %d %s, session %q, %d counted", resp.StatusCode, body, id, front.Sessions())
	}
	for deadline := time.Now().Add(5 * time.Second); front.Sessions() > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if n := front.Sessions(); n != 0 {
		t.Fatalf("%d sessions after the idle time, want 0", n)
	}
	if resp, _ := post(t, url, c, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, id); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the idle session's id: got %d, want 404", resp.StatusCode)
	}
	// The SDK's session ends too.
	if n := sdkSessions(); n != before {
		t.Errorf("%d SDK sessions, want %d", n, before)
	}
}
