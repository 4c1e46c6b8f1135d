package serve

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkCall measures what a call costs through the server against
// reading the file directly in this process (the baseline): the decision
// alone (a denied read), and a decided read or command run in the box.
func BenchmarkCall(b *testing.B) {
	f := newFixture(b, testPolicy, "observe", setupWork, nil)
	ctx := context.Background()
	call := func(b *testing.B, name string, args map[string]any, denied bool) {
		for b.Loop() {
			_, err := f.cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
			if (err != nil) != denied {
				b.Fatalf("%s: %v", name, err)
			}
		}
	}
	b.Run("baseline os.ReadFile", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.ReadFile(filepath.Join(f.Work, "hello.txt")); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read_file denied (decision only)", func(b *testing.B) {
		call(b, "read_file", map[string]any{"path": "../outside/x"}, true)
	})
	b.Run("read_file in the box", func(b *testing.B) {
		call(b, "read_file", map[string]any{"path": "hello.txt"}, false)
	})
	b.Run("exec true in the box", func(b *testing.B) {
		call(b, "exec", map[string]any{"argv": []string{"true"}}, false)
	})
}
