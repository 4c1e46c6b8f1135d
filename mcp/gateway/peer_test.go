package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// jsPeer is a wrapped MCP server that reads messages the way JavaScript's
// JSON.parse does (the Node servers airlock wraps): keys are exact, and of
// two equal keys the last wins. With loose set it finds tools as some
// servers do, without case and surrounding space, so that a name the
// gateway did not decide still reaches a tool. It keeps what it ran and
// every message it got.
type jsPeer struct {
	mu    sync.Mutex
	tools []map[string]any
	loose bool
	ran   []string
	got   []map[string]json.RawMessage
	lines []string
	// hook, when set, sees each message first; true means it answered.
	hook func(p *peerSession, m map[string]json.RawMessage) bool
}

// peerSession is the peer serving one session (one gateway session starts
// one server).
type peerSession struct {
	*jsPeer
	wmu    sync.Mutex
	out    io.Writer
	queue  chan []byte
	closed bool
}

func (p *jsPeer) starter() Starter {
	return func(ctx context.Context) (*Server, error) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan error, 1)
		// Writes go through a queue, as an OS pipe's buffer would take them:
		// the peer reads on while its answers wait to be read.
		lines := make(chan []byte, 10000)
		ps := &peerSession{jsPeer: p, out: outW, queue: lines}
		go func() {
			for l := range lines {
				outW.Write(l) // after an error, drain
			}
		}()
		go func() {
			defer func() { ps.wmu.Lock(); ps.closed = true; close(lines); ps.wmu.Unlock() }()
			defer func() { outW.Close(); inR.Close(); done <- nil }()
			go func() { <-ctx.Done(); inR.Close(); outW.Close() }()
			sc := bufio.NewScanner(inR)
			sc.Buffer(make([]byte, 1<<20), 64<<20)
			for sc.Scan() {
				ps.serve(sc.Text())
			}
		}()
		return &Server{Stdin: inW, Stdout: outR, Done: done}, nil
	}
}

// send writes one message (a value to marshal, or a string as it is).
func (p *peerSession) send(v any) {
	var b []byte
	if s, ok := v.(string); ok {
		b = []byte(s)
	} else {
		b, _ = json.Marshal(v)
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if !p.closed {
		p.queue <- append(b, '\n')
	}
}

func (p *peerSession) answer(id json.RawMessage, result any) {
	p.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (p *peerSession) serve(line string) {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(line), &m) != nil {
		return
	}
	p.mu.Lock()
	p.got = append(p.got, m)
	p.lines = append(p.lines, line)
	hook := p.hook
	p.mu.Unlock()
	if hook != nil && hook(p, m) {
		return
	}
	var method string
	json.Unmarshal(m["method"], &method)
	id := m["id"]
	if method == "" || len(id) == 0 {
		return // a response or a notification
	}
	switch method {
	case "initialize":
		p.answer(id, map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{"listChanged": true}},
			"serverInfo": map[string]any{"name": "js", "version": "1"}})
	case "tools/list":
		p.mu.Lock()
		tools := p.tools
		p.mu.Unlock()
		p.answer(id, map[string]any{"tools": tools})
	case "tools/call":
		var params map[string]json.RawMessage
		json.Unmarshal(m["params"], &params)
		var name string
		json.Unmarshal(params["name"], &name)
		if ran := p.find(name); ran != "" {
			p.mu.Lock()
			p.ran = append(p.ran, ran)
			p.mu.Unlock()
			p.answer(id, map[string]any{"content": []any{map[string]any{"type": "text", "text": "ran " + ran + " " + string(params["arguments"])}}})
			return
		}
		p.answer(id, map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": "no tool " + name}}})
	default:
		p.answer(id, map[string]any{})
	}
}

// find returns the listed tool name resolves to, "" for none.
func (p *jsPeer) find(name string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.tools {
		n, _ := t["name"].(string)
		if n == name || p.loose && strings.EqualFold(strings.TrimSpace(name), n) {
			return n
		}
	}
	return ""
}

func (p *jsPeer) runs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.ran...)
}

// received returns the lines the peer got whose method is method.
func (p *jsPeer) received(method string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for i, m := range p.got {
		var got string
		json.Unmarshal(m["method"], &got)
		if got == method {
			out = append(out, p.lines[i])
		}
	}
	return out
}

// responses returns the responses the peer got (no method).
func (p *jsPeer) responses() []map[string]json.RawMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []map[string]json.RawMessage
	for _, m := range p.got {
		if _, ok := m["method"]; !ok {
			out = append(out, m)
		}
	}
	return out
}

func peerTool(name string, extra ...any) map[string]any {
	t := map[string]any{"name": name, "description": name, "inputSchema": json.RawMessage(plainSchema)}
	for i := 0; i+1 < len(extra); i += 2 {
		t[extra[i].(string)] = extra[i+1]
	}
	return t
}

// rawClient is a stdio client writing and reading raw lines, each message
// read kept in order.
type rawClient struct {
	t     *testing.T
	w     *io.PipeWriter
	lines chan string
}

// rawPeerClient is a raw client of a gateway in front of peer, with the
// fixture's options.
func rawPeerClient(t *testing.T, peer *jsPeer) *rawClient {
	t.Helper()
	g, err := New(peerFixture(t, peer).opts)
	if err != nil {
		t.Fatal(err)
	}
	return newRawClient(t, g)
}

func newRawClient(t *testing.T, g *Gateway) *rawClient {
	t.Helper()
	c2gR, c2gW := io.Pipe()
	g2cR, g2cW := io.Pipe()
	c := &rawClient{t: t, w: c2gW, lines: make(chan string, 1000)}
	go func() {
		g.ServeStdio(t.Context(), c2gR, g2cW)
		g2cW.Close()
	}()
	go func() {
		defer close(c.lines)
		r := bufio.NewReaderSize(g2cR, 1<<20)
		for {
			line, err := r.ReadString('\n')
			if line = strings.TrimSpace(line); line != "" {
				c.lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { c2gW.Close() })
	return c
}

func (c *rawClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// next returns the next line, failing the test after d.
func (c *rawClient) next(d time.Duration) string {
	c.t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			c.t.Fatal("the gateway closed the connection")
		}
		return l
	case <-time.After(d):
		c.t.Fatalf("nothing came within %s", d)
		return ""
	}
}

// until reads lines until one holds every string of want, returning it
// and the lines read before it.
func (c *rawClient) until(want ...string) (string, []string) {
	c.t.Helper()
	var before []string
	for {
		l := c.next(10 * time.Second)
		ok := true
		for _, w := range want {
			if !strings.Contains(l, w) {
				ok = false
				break
			}
		}
		if ok {
			return l, before
		}
		before = append(before, l)
	}
}

// init initialises the session with the capabilities caps (a JSON object).
func (c *rawClient) init(caps string) {
	c.t.Helper()
	c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":` + caps + `,"clientInfo":{"name":"raw","version":"1"}}}`)
	c.until(`"id":"init"`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// testLog sends the gateway's log to the test's.
func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}
