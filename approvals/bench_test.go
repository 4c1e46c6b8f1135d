package approvals

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkSocketRoundTrip measures one escalation answered over the
// socket: Ask, List from "another terminal", Decide. BenchmarkList alone in
// the same run is the baseline of one socket exchange.
func BenchmarkSocketRoundTrip(b *testing.B) {
	dir, _ := os.MkdirTemp("", "alkb")
	defer os.RemoveAll(dir)
	br, err := New(Options{SocketDir: filepath.Join(dir, "s")})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	ctx := context.Background()
	for b.Loop() {
		done := make(chan Outcome, 1)
		go func() { done <- br.Ask(ctx, gitPush(), time.Hour) }()
		var ps []Pending
		for len(ps) == 0 {
			ps, _ = List(ctx, filepath.Join(dir, "s"))
		}
		if _, err := Decide(ctx, filepath.Join(dir, "s"), ps[0].ID, AllowOnce, ""); err != nil {
			b.Fatal(err)
		}
		if o := <-done; o.Answer != AllowOnce {
			b.Fatal(o.Answer)
		}
	}
}

func BenchmarkList(b *testing.B) {
	dir, _ := os.MkdirTemp("", "alkb")
	defer os.RemoveAll(dir)
	br, err := New(Options{SocketDir: filepath.Join(dir, "s")})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	for b.Loop() {
		if _, err := List(context.Background(), filepath.Join(dir, "s")); err != nil {
			b.Fatal(err)
		}
	}
}
