package runner

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/airlock-run/airlock/sandbox"
)

// TestStartStreams: a long-lived command in a box answers over its pipes,
// and Kill leaves no process of it behind.
func TestStartStreams(t *testing.T) {
	for _, tc := range tiers() {
		t.Run(tc.name(), func(t *testing.T) {
			if tc.skip != "" {
				tc.gate(t)
			}
			marker := fmt.Sprintf("%d.%d", 5000+os.Getpid()%1000, time.Now().UnixNano()%100000)
			t.Cleanup(func() { killMarked(marker) })
			spec := withNet(t, tc, baseSpec(t))
			// cat answers; a sleep in the background must die with the box.
			p, err := Start(context.Background(), testExe(t), Request{Tier: tc.tier, Spec: spec,
				Argv: []string{"sh", "-c", "setsid sleep " + marker + " & exec cat"}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fmt.Fprintln(p.Stdin, `{"jsonrpc":"2.0","id":1}`); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(p.Stdout).ReadString('\n')
			if err != nil || line != "{\"jsonrpc\":\"2.0\",\"id\":1}\n" {
				t.Fatalf("read back %q, %v", line, err)
			}
			if d := p.Description(); d.Tier != int(tc.tier) {
				t.Errorf("Description().Tier = %d, want %d", d.Tier, tc.tier)
			}
			if err := p.Kill(); err != nil {
				t.Fatal(err)
			}
			if res, err := p.Wait(); err != nil || res.Signal != 9 {
				t.Errorf("Wait after Kill: signal %d, %v; want SIGKILL and no error", res.Signal, err)
			}
			if tc.tier > sandbox.Tier0 && !waitGone(marker, 3*time.Second) {
				t.Errorf("a process of the box survived Kill: %v", marked(marker))
			}
		})
	}
}

// TestStartEOF: closing stdin ends cat, and Wait reports exit 0.
func TestStartEOF(t *testing.T) {
	requireTier1(t)
	p, err := Start(context.Background(), testExe(t), Request{Tier: sandbox.Tier1, Spec: baseSpec(t), Argv: []string{"cat"}})
	if err != nil {
		t.Fatal(err)
	}
	p.Stdin.Close()
	res, err := p.Wait()
	if err != nil || res.ExitCode != 0 {
		t.Errorf("got exit %d, %v; want 0", res.ExitCode, err)
	}
}
