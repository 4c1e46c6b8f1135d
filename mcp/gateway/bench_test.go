package gateway

import (
	"bytes"
	"context"
	"io"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkCall measures one tools/call of a small tool made directly to the
// server and through the gateway (decision, relay both ways, result check),
// in the same run so their ratio is the gateway's cost.
func BenchmarkCall(b *testing.B) {
	t := &testing.T{}
	args := map[string]any{"message": "hi"}
	b.Run("direct", func(b *testing.B) {
		srv := testServer("echoes")
		c2sR, c2sW := io.Pipe()
		s2cR, s2cW := io.Pipe()
		ss, err := srv.Connect(b.Context(), &sdk.IOTransport{Reader: c2sR, Writer: s2cW}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer ss.Close()
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "b", Version: "1"}, nil).Connect(b.Context(), &sdk.IOTransport{Reader: s2cR, Writer: c2sW}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		b.ResetTimer()
		for b.Loop() {
			if _, err := cs.CallTool(b.Context(), &sdk.CallToolParams{Name: "echo", Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gateway", func(b *testing.B) {
		f := newFixture(t, testServer("echoes"))
		f.t = t
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cs, _ := f.connect(ctx)
		defer cs.Close()
		if _, err := cs.ListTools(ctx, nil); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for b.Loop() {
			if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzLineConn feeds arbitrary bytes to the stdio framing: it must never
// panic, and every line is either a message or a *BadFrame.
func FuzzLineConn(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n",
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"x"}]` + "\n",
		"garbage\n\n{\"a\":1,\"a\":2}\n",
		`[]` + "\n" + `[1,2]` + "\n",
		`{"jsonrpc":"2.0","id":"x","result":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n" + `[{"jsonrpc":"2.0","id":1,"method":"ping"}]` + "\n",
		`{"jsonrpc":"2.0","id":1,"METHOD":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"x","params":{"name":"a","Name":"b"}}` + "\n",
		`{"jsonrpc":"2.0","id":1.5,"error":{"code":1,"message":"m","Data":1}}` + "\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		c := newLineConn(bytes.NewReader(data), &out, 1<<10, nil)
		for i := 0; i < 1000; i++ {
			m, err := c.Read(context.Background())
			if err == io.EOF {
				return
			}
			if _, bad := err.(*BadFrame); err != nil && !bad {
				return
			}
			if err == nil && m == nil {
				t.Fatalf("no message and no error")
			}
		}
	})
}
