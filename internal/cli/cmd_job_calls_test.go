package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	jobwire "github.com/airlock-run/airlock/jobs/wire"
)

// TestPrintTrace: the trace's table shows each call's node, tier, verdict
// and reason, a call still running as such, an opted-out call as tier 0,
// and escapes what a call line or reason may hold for the terminal.
func TestPrintTrace(t *testing.T) {
	now := time.Now()
	tr := jobwire.Trace{Job: "j-1", Nodes: []string{"n1"}, LowestTier: 0, Tainted: true, Taint: "hook:deploy", OutsideEvent: true,
		Calls: []jobwire.CallRecord{
			{ID: "c1", Kind: "exec", Call: "echo \x1b[31mred", Node: "n1", Tier: 1, Verdict: "allow", Decider: "policy", Rule: "default", Started: now, Ended: now},
			{ID: "c2", Kind: "shell", Call: "curl x", Node: "n1", Tier: 1, OptedOut: true, Verdict: "escalate", Decider: "person:ann",
				Rule: "taint", Reason: "the job read text from outside", Started: now, Ended: now},
			{ID: "c3", Kind: "read_file", Call: "out.txt", Node: "n1", Tier: 1, Started: now},
		}}
	var b bytes.Buffer
	printTrace(&b, tr)
	out := b.String()
	if strings.Contains(out, "\x1b") {
		t.Fatalf("the trace holds a raw escape:\n%q", out)
	}
	for _, want := range []string{
		"job j-1: nodes n1, lowest tier 0, outside event true",
		"tainted: hook:deploy",
		"0 (opted out)",
		"taint: the job read text from outside",
		"running",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the trace does not show %q:\n%s", want, out)
		}
	}
}
