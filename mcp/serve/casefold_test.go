package serve

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// casefoldPolicy lets read_file read under docs/ only: the tool rule is
// what keeps secret.txt out, as fs read covers the whole directory.
const casefoldPolicy = `
fs:
  read: [.]
tools:
  read_file: {verdict: allow, when: {path: "docs/**"}, else: deny}
limits:
  wall: 30s
`

// TestCaseVariantKeysRefused: the tool rule read "path" exactly while the
// arguments were decoded into a struct by Go's decoder, which takes "Path"
// for path and keeps the last: {"path":"docs/a.md","Path":"secret.txt"}
// passed the condition and read secret.txt. mcp.CheckJSON now refuses two
// keys alike under case folding.
func TestCaseVariantKeysRefused(t *testing.T) {
	f := newFixture(t, casefoldPolicy, "observe", func(work string) {
		os.MkdirAll(filepath.Join(work, "docs"), 0o755)
		os.WriteFile(filepath.Join(work, "docs", "a.md"), []byte("the doc\n"), 0o644)
		os.WriteFile(filepath.Join(work, "secret.txt"), []byte("the secret\n"), 0o644)
	}, nil)
	c := newRawClient(t, f.srv, false)
	for i, args := range []string{
		`{"path":"docs/a.md","Path":"secret.txt"}`,
		`{"path":"docs/a.md","PATH":"secret.txt"}`,
		`{"path":"docs/a.md","ｐａｔｈ":"secret.txt"}`,
	} {
		res, err := c.request(int64(100+i), "tools/call", `{"name":"read_file","arguments":`+args+`}`)
		var r sdk.CallToolResult
		if err == nil {
			json.Unmarshal(res, &r)
		}
		if text := resultText(&r); strings.Contains(text, "the secret") || err == nil && !strings.Contains(text, "duplicate key") {
			t.Errorf("%s: got %q, %v; want the call refused for the duplicate key", args, text, err)
		}
	}
	res, err := c.request(200, "tools/call", `{"name":"read_file","arguments":{"path":"docs/a.md"}}`)
	var r sdk.CallToolResult
	if err != nil || json.Unmarshal(res, &r) != nil || !strings.Contains(resultText(&r), "the doc") {
		t.Errorf("an allowed read: got %s, %v", res, err)
	}
}
