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

func TestToolCallFlags(t *testing.T) {
	tests := []struct {
		name, tool, args string
		want             string // the call's args, or the error's part
		wantErr          bool
	}{
		{"a tool with args", "fs/read_file", `{"path":"a"}`, `{"path":"a"}`, false},
		{"a tool without args", "fs/list", "", "", false},
		{"no server", "read_file", "", "want SERVER/TOOL", true},
		{"an empty tool", "fs/", "", "want SERVER/TOOL", true},
		{"args that are an array", "fs/t", `[1]`, "args: not a JSON object", true},
		{"args with a key given twice", "fs/t", `{"a":1,"a":2}`, "--args", true},
		{"a server that is not a name", "F S/t", "", `server "F S"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := toolCall(tt.tool, tt.args)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("got %v, want an error with %q", err, tt.want)
				}
				return
			}
			if err != nil || c.Kind != "tool" || string(c.Args) != tt.want {
				t.Fatalf("got %+v, %v", c, err)
			}
		})
	}
}
