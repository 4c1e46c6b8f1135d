package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestToolArgsRepeatedKeys: a tool call's args with a key given twice,
// spelled the same or alike under case folding, are refused wherever the
// call comes from (an API body is checked before it is decoded, but a
// job's recorded calls and a node's requests are decoded here): decoded
// into a map the last spelling would win, or both would reach a server
// whose decoder matches keys ignoring case, while the policy's
// conditions read the first.
func TestToolArgsRepeatedKeys(t *testing.T) {
	for _, tc := range []struct{ name, args, want string }{
		{"same key twice", `{"path":"src/a","path":"/etc/shadow"}`, "path: the key is given twice"},
		{"alike under case folding", `{"path":"src/a","PATH":"/etc/shadow"}`, "PATH: the key is given twice"},
		{"nested", `{"opts":{"mode":"r","Mode":"w"}}`, "opts.Mode: the key is given twice"},
		{"two values", `{"a":1} {"b":2}`, "args: not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Call{ID: "c1", Kind: CallTool, Server: "fs", Tool: "read", Args: json.RawMessage(tc.args)}
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "args") {
				t.Fatalf("Validate: %v, want a refusal of args naming %q", err, tc.want)
			}
			if _, err := c.ToolArgs(); err == nil {
				t.Errorf("ToolArgs took %s", tc.args)
			}
		})
	}
	ok := Call{ID: "c1", Kind: CallTool, Server: "fs", Tool: "read", Args: json.RawMessage(`{"path":"src/a","mode":{"r":true}}`)}
	if err := ok.Validate(); err != nil {
		t.Fatalf("args of distinct keys: %v", err)
	}
}
