package serve

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

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

// BenchmarkWarmExec measures `exec true` through the server in the
// session's warm box against a fresh box per call (FreshBoxes), the two
// measured alternately in one run, and prints the ratio.
func BenchmarkWarmExec(b *testing.B) {
	warm := newFixture(b, testPolicy, "observe", setupWork, nil)
	fresh := newFixture(b, testPolicy, "observe", setupWork, func(c *fixtureConfig) { c.serve.FreshBoxes = true })
	ctx := context.Background()
	args := &sdk.CallToolParams{Name: "exec", Arguments: map[string]any{"argv": []string{"true"}}}
	one := func(b *testing.B, f *fixture) time.Duration {
		t0 := time.Now()
		res, err := f.cs.CallTool(ctx, args)
		if err != nil || res.IsError {
			b.Fatalf("exec true: %v %+v", err, res)
		}
		return time.Since(t0)
	}
	one(b, warm) // the warm box is made by the session's first call
	var w, c []time.Duration
	for b.Loop() {
		w = append(w, one(b, warm))
		c = append(c, one(b, fresh))
	}
	mw, mc := medianOf(w), medianOf(c)
	b.ReportMetric(float64(mw.Microseconds())/1000, "warm-ms")
	b.ReportMetric(float64(mc.Microseconds())/1000, "fresh-ms")
	b.ReportMetric(float64(mc)/float64(mw), "fresh/warm")
	b.Logf("exec true through mcp serve: warm box %v, fresh box %v (median of %d each): %.1fx", mw, mc, len(w), float64(mc)/float64(mw))
}

func medianOf(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	slices.Sort(s)
	return s[len(s)/2]
}
