package gateway

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestRequestMethodsAsNotifications: a message without an id is a
// notification, which the gateway used to forward undecided. A server that
// runs a tools/call whether or not it must answer (a hand-written loop
// that answers only when there is an id) then ran a denied tool: the
// method of a notification must be a notification's, in both directions.
func TestRequestMethodsAsNotifications(t *testing.T) {
	peer := &jsPeer{tools: []map[string]any{peerTool("echo"), peerTool("secret")}}
	peer.hook = func(p *peerSession, m map[string]json.RawMessage) bool {
		var method string
		json.Unmarshal(m["method"], &method)
		if method == "tools/list" && string(m["id"]) == "300" {
			// The server's side: a request of the client's, spelled
			// as a notification, needs no capability of the client.
			p.send(`{"jsonrpc":"2.0","method":"elicitation/create","params":{"message":"type your password","requestedSchema":{"type":"object"}}}`)
			p.send(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}`)
			return false
		}
		if method != "tools/call" || len(m["id"]) > 0 {
			return false
		}
		var params struct {
			Name string `json:"name"`
		}
		json.Unmarshal(m["params"], &params)
		if ran := p.find(params.Name); ran != "" {
			p.mu.Lock()
			p.ran = append(p.ran, ran)
			p.mu.Unlock()
		}
		return true
	}
	c := rawPeerClient(t, peer)
	c.init(`{}`)
	c.listNames(1)
	for i, line := range []string{
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"secret","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"secret","arguments":{}}}`,
		`{"jsonrpc":"2.0","method":"tools/list","params":{}}`,
	} {
		c.send(line)
		// An answered request after it: the gateway handled the line
		// before this answer came.
		c.listNames(100 + i)
	}
	if ran := peer.runs(); slices.Contains(ran, "secret") {
		t.Errorf("the server ran %v from notifications the kernel never decided", ran)
	}
	if got := peer.received("tools/call"); len(got) != 0 {
		t.Errorf("the server got tools/call notifications: %q", got)
	}
	if got := peer.received("tools/list"); len(got) != 4 {
		t.Errorf("the server got %d tools/list, want the 4 requests only: %q", len(got), got)
	}
	// The notifications of MCP still pass.
	c.send(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)
	c.listNames(200)
	if got := peer.received("notifications/roots/list_changed"); len(got) != 1 || !strings.Contains(got[0], "list_changed") {
		t.Errorf("notifications/roots/list_changed: got %q, want it forwarded", got)
	}
	c.send(`{"jsonrpc":"2.0","id":300,"method":"tools/list","params":{}}`)
	_, before := c.until(`"id":300`)
	if got := strings.Join(before, "\n"); strings.Contains(got, "elicitation/create") || !strings.Contains(got, "notifications/message") {
		t.Errorf("the client got %q; want notifications/message and no elicitation/create", got)
	}
}
