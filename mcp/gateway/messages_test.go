package gateway

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-run/airlock/audit"
)

// TestOversizedNotification: a notification over the size cap from the
// server is dropped alone; a call in flight still gets its answer. It used
// to fail every call in flight.
func TestOversizedNotification(t *testing.T) {
	peer := &jsPeer{tools: []map[string]any{peerTool("echo")}}
	peer.hook = func(p *peerSession, m map[string]json.RawMessage) bool {
		var method string
		json.Unmarshal(m["method"], &method)
		if method == "tools/call" {
			p.send(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + strings.Repeat("x", MaxFrame+10) + `"}}`)
		}
		return false
	}
	c := rawPeerClient(t, peer)
	c.init(`{}`)
	c.listNames(1)
	if got := c.call(2, `{"name":"echo","arguments":{}}`); !strings.Contains(got, "ran echo") {
		t.Errorf("got %.300s, want the call answered", got)
	}
}

// TestReusedID: a request reusing the id of one in flight is refused with
// an error naming the reuse, and the first still gets its own answer. A
// tools/list under the id of a call being decided used to take its place.
func TestReusedID(t *testing.T) {
	release := make(chan struct{})
	peer := &jsPeer{tools: []map[string]any{peerTool("echo"), peerTool("ask"), peerTool("slow")}}
	peer.hook = func(p *peerSession, m map[string]json.RawMessage) bool {
		if !strings.Contains(string(m["params"]), `"slow"`) {
			return false
		}
		go func() {
			<-release
			p.answer(m["id"], map[string]any{"content": []any{map[string]any{"type": "text", "text": "slow done"}}})
		}()
		return true
	}
	c := rawPeerClient(t, peer)
	c.init(`{}`)
	c.listNames(1)

	answers := func(id string, n int) []string {
		t.Helper()
		var got []string
		for len(got) < n {
			l, _ := c.until(`"id":` + id)
			got = append(got, l)
		}
		return got
	}
	t.Run("while the call is decided", func(t *testing.T) {
		c.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask","arguments":{}}}`)
		c.send(`{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`)
		got := answers("7", 2)
		if !strings.Contains(got[0], "already in flight") {
			t.Errorf("first answer %s, want the reuse refused", got[0])
		}
		if !strings.Contains(got[1], "ESCALATION_TIMEOUT") {
			t.Errorf("second answer %s, want the call's own (a timeout)", got[1])
		}
	})
	t.Run("while the server works on it", func(t *testing.T) {
		c.send(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
		time.Sleep(100 * time.Millisecond)
		c.send(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
		c.send(`{"jsonrpc":"2.0","id":8,"method":"ping"}`)
		got := answers("8", 2)
		for _, l := range got {
			if !strings.Contains(l, "already in flight") {
				t.Errorf("got %s, want the reuse refused", l)
			}
		}
		close(release)
		if got := answers("8", 1); !strings.Contains(got[0], "slow done") {
			t.Errorf("got %s, want the first call's answer", got[0])
		}
	})
	t.Run("in a batch", func(t *testing.T) {
		release2 := make(chan struct{})
		peer.mu.Lock()
		old := peer.hook
		peer.hook = func(p *peerSession, m map[string]json.RawMessage) bool {
			if !strings.Contains(string(m["params"]), `"slow"`) {
				return false
			}
			go func() {
				<-release2
				p.answer(m["id"], map[string]any{"content": []any{map[string]any{"type": "text", "text": "slow done"}}})
			}()
			return true
		}
		peer.mu.Unlock()
		defer func() { peer.mu.Lock(); peer.hook = old; peer.mu.Unlock() }()
		c.send(`[{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow","arguments":{}}},{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"echo","arguments":{}}}]`)
		time.Sleep(100 * time.Millisecond)
		c.send(`{"jsonrpc":"2.0","id":9,"method":"ping"}`)
		if got := answers("9", 1); !strings.Contains(got[0], "already in flight") || strings.HasPrefix(got[0], "[") {
			t.Errorf("got %s, want the reuse refused on its own", got[0])
		}
		close(release2)
		got, _ := c.until(`"id":9`)
		if !strings.HasPrefix(got, "[") || !strings.Contains(got, "slow done") || !strings.Contains(got, "ran echo") {
			t.Errorf("got %s, want the batch answered whole", got)
		}
	})
}

// TestOtherSessionsKeepWorking: one client's garbage does not reach
// another's session.
func TestOtherSessionsKeepWorking(t *testing.T) {
	peer := &jsPeer{tools: []map[string]any{peerTool("echo")}}
	f := peerFixture(t, peer)
	f.opts.Log = testLog(t)
	g, err := New(f.opts)
	if err != nil {
		t.Fatal(err)
	}
	a, b := newRawClient(t, g), newRawClient(t, g)
	a.init(`{}`)
	b.init(`{}`)
	for _, l := range []string{`garbage`, `{"jsonrpc":"2.0","id":1,"method":"x","Method":"y"}`, `{"jsonrpc":"2.0","id":"airlock-x","method":"ping"}`, strings.Repeat("y", MaxFrame+1)} {
		a.send(l)
		if got := a.next(10 * time.Second); !strings.Contains(got, `"error"`) {
			t.Errorf("%.40s: got %.200s, want an error", l, got)
		}
	}
	for _, c := range []*rawClient{a, b} {
		if got := c.call(3, `{"name":"echo","arguments":{}}`); !strings.Contains(got, "ran echo") {
			t.Errorf("got %s, want the call answered", got)
		}
	}
}

// auditLog keeps the records the gateway gives Options.Audit.
type auditLog struct {
	mu sync.Mutex
	rs []audit.Record
}

func (a *auditLog) append(r audit.Record) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rs = append(a.rs, r)
	return nil
}

func (a *auditLog) reasons() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var b strings.Builder
	for _, r := range a.rs {
		if r.Kind != "mcp.refused" || r.Verdict != "deny" || r.Reason == "" {
			continue
		}
		fmt.Fprintf(&b, "%s: %s\n", r.Fields["from"], r.Reason)
	}
	return b.String()
}

// TestRefusalsRecorded: every message the gateway refuses, from either
// side, is answered with an error where it can be and kept in the audit
// log with its reason.
func TestRefusalsRecorded(t *testing.T) {
	peer := &jsPeer{tools: []map[string]any{peerTool("echo")}}
	peer.hook = func(p *peerSession, m map[string]json.RawMessage) bool {
		if !strings.Contains(string(m["params"]), `"echo"`) {
			return false
		}
		p.send(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + strings.Repeat("x", MaxFrame+10) + `"}}`)
		p.send(`{"jsonrpc":"2.0","id":"airlock-guess-1","method":"ping"}`)
		p.send(`{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"hi"}}`)
		return false
	}
	f := peerFixture(t, peer)
	log := &auditLog{}
	f.opts.Audit = log.append
	g, err := New(f.opts)
	if err != nil {
		t.Fatal(err)
	}
	c := newRawClient(t, g)
	c.init(`{}`)
	c.listNames(1)
	for _, tt := range []struct{ line, id string }{
		{`not json`, `null`},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"a":1,"A":2}}}`, `2`},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nothing","arguments":{}}}`, `3`},
		{`{"jsonrpc":"2.0","id":"airlock-x","method":"ping"}`, `"airlock-x"`},
		{strings.Repeat("z", MaxFrame+1), `null`},
	} {
		c.send(tt.line)
		if got, _ := c.until(`"id":` + tt.id); !strings.Contains(got, `"error"`) {
			t.Errorf("%.40s: got %.200s, want an error", tt.line, got)
		}
	}
	if got := c.call(4, `{"name":"echo","arguments":{}}`); !strings.Contains(got, "ran echo") {
		t.Errorf("got %.200s, want the call answered", got)
	}
	want := []string{
		"client: JSON: invalid character",
		"client: JSON: duplicate key",
		"client: tools/call: the wrapped server did not list a tool named",
		"client: request id airlock-x",
		"client: a message of more than 32 MiB",
		"server: a message of more than 32 MiB",
		"server: airlock: request id airlock-guess-1",
		"server: airlock: the client did not declare the elicitation capability",
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := log.reasons()
		missing := ""
		for _, w := range want {
			if !strings.Contains(got, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the audit log lacks %q; it holds:\n%s", missing, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServerBadRequestLeavesCalls: a broken request of the server's under
// an id that is also the id of a client's call in flight is the server's
// problem alone; the call gets its own answer. It used to be failed with
// the server's broken message.
func TestServerBadRequestLeavesCalls(t *testing.T) {
	peer := &jsPeer{tools: []map[string]any{peerTool("echo")}}
	peer.hook = func(p *peerSession, m map[string]json.RawMessage) bool {
		if !strings.Contains(string(m["params"]), `"echo"`) {
			return false
		}
		p.send(`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"a":1,"A":2}}`)
		p.send(`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"` + strings.Repeat("x", MaxFrame+10) + `"}}`)
		return false
	}
	c := rawPeerClient(t, peer)
	c.init(`{}`)
	c.listNames(1)
	if got := c.call(2, `{"name":"echo","arguments":{}}`); !strings.Contains(got, "ran echo") {
		t.Errorf("got %.300s, want the call's own answer", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := 0
		for _, r := range peer.responses() {
			if string(r["id"]) == "2" && r["error"] != nil {
				n++
			}
		}
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server got %d errors for its broken requests, want 2", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStartsAnswer(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{"method":"x"}}`, true},
		{`{"result":{"content":[{"text":"xxxxxxxx`, true},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":1`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, false},
		{`{"jsonrpc":"2.0","params":{"result":1},"method":"x"}`, false},
		{`{"jsonrpc":"2.0","id":1,"METHOD":"x"}`, false},
		{`not json`, false},
	}
	for _, tt := range tests {
		if got := startsAnswer([]byte(tt.in)); got != tt.want {
			t.Errorf("startsAnswer(%s) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
