package fleetcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/internal/wiring"
	"github.com/airlock-run/airlock/policy"
)

// TestNodeStateReach: a job's rules may reach its own working directory
// and home (its job directory) and anything outside the node's state; a
// rule that reaches the node's state anywhere else, or holds all of it,
// in any spelling (relative, "~", absolute, a glob, a symlink), refuses
// the job.
func TestNodeStateReach(t *testing.T) {
	root := t.TempDir()
	airlock := filepath.Join(root, "airlock")
	state := filepath.Join(airlock, "node", "n1")
	job := filepath.Join(state, "jobs", "j-1")
	os.MkdirAll(filepath.Join(job, "work"), 0o700)
	os.MkdirAll(filepath.Join(state, "pki"), 0o700)
	os.MkdirAll(filepath.Join(root, "elsewhere"), 0o700)
	os.MkdirAll(filepath.Join(airlock, "server"), 0o700)
	os.Symlink(filepath.Join(state, "pki"), filepath.Join(root, "elsewhere", "link"))
	tests := []struct {
		name, read, write string
		refused           bool
	}{
		{"the working directory", `["."]`, `["."]`, false},
		{"a directory below it", `["src", "./out/**"]`, `["out"]`, false},
		{"the job's home", `["~", "~/work"]`, `[]`, false},
		{"a path outside the state", `["` + filepath.Join(root, "elsewhere") + `/data"]`, `[]`, false},
		{"the jobs' directory, relative", `["../.."]`, `[]`, true},
		{"the state, relative", `[".", "../../.."]`, `[]`, true},
		{"the state from home", `["~/../.."]`, `[]`, true},
		{"the root", `["/"]`, `[]`, true},
		{"a directory above the state", `["` + root + `"]`, `[]`, true},
		{"the token, absolute", `["` + filepath.Join(state, "pki", "node.token") + `"]`, `[]`, true},
		{"a glob from above", `["` + root + `/**/node.token"]`, `[]`, true},
		{"a glob into the state", `["` + state + `/*/node.token"]`, `[]`, true},
		{"another job's directory", `["` + filepath.Join(state, "jobs", "j-2") + `"]`, `[]`, true},
		{"a symlink to the state", `["` + filepath.Join(root, "elsewhere", "link") + `"]`, `[]`, true},
		{"a write into the state", `["."]`, `["` + filepath.Join(state, "files") + `"]`, true},
		{"a server's state beside the node's", `["` + filepath.Join(airlock, "server") + `"]`, `[]`, true},
		{"airlock's state", `["` + airlock + `"]`, `[]`, true},
		// The node's caches, shared by all its jobs (jobKernel's CacheDir):
		// a job that wrote a view or the probe's answer would hand every
		// later job's box its /etc or its tier.
		{"the node's /etc views", `["` + filepath.Join(state, wiring.EtcViewDir) + `"]`, `["` + filepath.Join(state, wiring.EtcViewDir) + `"]`, true},
		{"the node's probe cache", `["."]`, `["` + filepath.Join(state, wiring.ProbeCacheFile) + `"]`, true},
		{"the views through a glob", `["."]`, `["` + state + `/etc-*/**"]`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := policy.Parse("job.yaml", []byte("fs:\n  read: "+tt.read+"\n  write: "+tt.write+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			err = checkNodeState(p, job, state, airlock)
			if (err != nil) != tt.refused {
				t.Fatalf("got %v, want refused %v", err, tt.refused)
			}
			if err != nil && !strings.Contains(err.Error(), "reaches the node's state directory or airlock's own state") {
				t.Errorf("refusal %q: want it to say what it reaches", err)
			}
		})
	}
	t.Run("a state directory every box reads", func(t *testing.T) {
		p, _ := policy.Parse("job.yaml", []byte("fs:\n  read: [\".\"]\n"))
		if err := checkNodeState(p, "/etc/airlock-node/jobs/j-1", "/etc/airlock-node"); err == nil || !strings.Contains(err.Error(), "--state") {
			t.Errorf("got %v, want refused naming --state", err)
		}
	})
}
