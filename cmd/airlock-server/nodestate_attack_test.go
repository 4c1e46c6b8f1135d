package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFleetJobReadsNodeState: a job's policy is the job's own, and a
// policy may name any path, relative to the job's working directory
// (STATE/jobs/ID/work) or absolute. One naming the node's state
// directory would let the job's box read the node's own token and key,
// the other jobs' directories and the node's file store (another job's
// results without their taint). The node refuses such a job's every
// call, naming the fix, and nothing of the node's reaches its result.
func TestFleetJobReadsNodeState(t *testing.T) {
	requireTier1(t)
	f := startFleet(t, 30*time.Second)
	f.node("n1", "1")
	state := filepath.Join(f.dir, "nodes", "n1")
	tok, err := os.ReadFile(filepath.Join(state, "pki", "node.token"))
	if err != nil || len(strings.TrimSpace(string(tok))) < 16 {
		t.Fatalf("the node's token: %v", err)
	}
	secret := strings.TrimSpace(string(tok))
	for _, tc := range []struct{ name, policy, calls string }{
		{"a relative path climbing to the state directory",
			"fs:\n  read: [\".\", \"../../..\"]\n",
			`[{"kind":"read_file","path":"../../../pki/node.token"},{"kind":"exec","argv":["cat","../../../pki/node.token"]}]`},
		{"an absolute path above it",
			"fs:\n  read: [\".\", \"" + filepath.Dir(state) + "\"]\n",
			`[{"kind":"exec","argv":["cat","` + filepath.Join(state, "pki", "node.token") + `"]}]`},
		{"a glob reaching into it",
			"fs:\n  read: [\".\", \"" + state + "/*/node.token\"]\n",
			`[{"kind":"read_file","path":"` + filepath.Join(state, "pki", "node.token") + `"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			pol, calls := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "calls.json")
			os.WriteFile(pol, []byte(tc.policy), 0o600)
			os.WriteFile(calls, []byte(tc.calls), 0o600)
			_, v := f.startJob("--policy", pol, "--calls", calls)
			if v.Result == nil && v.Error == "" {
				t.Fatalf("no result: %+v", v)
			}
			all := v.Error
			if v.Result != nil {
				for _, c := range v.Result.Calls {
					all += "\n" + c.Stdout + c.Stderr + c.Text + c.Reason
				}
				all += v.Result.Stdout + v.Result.Reason
			}
			if strings.Contains(all, secret) {
				t.Fatalf("the job read the node's token: %s", all)
			}
			if !strings.Contains(all, "the node's state directory") {
				t.Errorf("state %s, result %q: want the job refused naming the node's state directory", v.State, all)
			}
		})
	}
}
