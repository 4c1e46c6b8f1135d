package sandbox

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// planPinEnv names a directory that holds the workdirs of
// TestPlanPinnedOutput and the record of what their plans were. Set, the
// test compares every plan with the record there (and writes it when
// there is none): run once on the tree before a change to the planner and
// once after, the record proves the change planned exactly the same boxes
// (the workdirs persist, so their inodes, which the fingerprint holds, do
// too).
const planPinEnv = "AIRLOCK_PLAN_PIN"

// planOutput is what a plan makes a box of: bubblewrap's options and
// command line, the fingerprint a warm pool matches boxes by, the notes.
type planOutput struct {
	Options     []string
	Argv        []string
	Fingerprint string
	Notes       []string
}

func outputOf(b *Box) planOutput {
	return planOutput{Options: b.options, Argv: b.Argv, Fingerprint: b.Fingerprint(), Notes: b.Notes}
}

// planPinCases are the workdirs pinned: an empty directory in observe
// mode, a git checkout with its policy file, a workdir with a link out and
// a read grant elsewhere, the warm plan of the first, and a writable
// checkout (its protected paths held, its placeholders made).
var planPinCases = []struct {
	name  string
	setup func(t *testing.T, wd string)
	spec  func(wd, state string) Spec
	plan  func(Spec, Tier, string) (*Box, error)
	// fresh: the box holds placeholders made afresh by every plan (a
	// writable checkout's), whose inodes are in its fingerprint: all but
	// the fingerprint is compared.
	fresh bool
}{
	{"empty", nil, defaultSpec, Plan, false},
	{"git", checkout(map[string]string{".git/config": "[core]\n\tbare = false\n", "airlock.yaml": "fs: {read: [.]}\n"}), func(wd, state string) Spec {
		s := defaultSpec(wd, state)
		s.PolicyFile = filepath.Join(wd, "airlock.yaml")
		return s
	}, Plan, false},
	{"link-and-read", func(t *testing.T, wd string) {
		other := wd + "-other"
		mustDo(t, os.MkdirAll(other, 0o755))
		mustDo(t, os.WriteFile(filepath.Join(other, "data"), []byte("d"), 0o644))
		mustDo(t, os.Symlink(other, filepath.Join(wd, "out")))
	}, func(wd, state string) Spec {
		s := defaultSpec(wd, state)
		s.Read = append(s.Read, wd+"-other")
		return s
	}, Plan, false},
	{"empty-warm", nil, defaultSpec, PlanWarm, false},
	{"git-fix", checkout(map[string]string{"airlock.yaml": "fs: {write: [.]}\n"}), func(wd, state string) Spec {
		s := defaultSpec(wd, state)
		s.Writable, s.Write, s.PolicyFile = true, []string{wd}, filepath.Join(wd, "airlock.yaml")
		return s
	}, Plan, true},
}

// checkout makes a git checkout in wd: its directories, its HEAD and
// files.
func checkout(files map[string]string) func(t *testing.T, wd string) {
	return func(t *testing.T, wd string) {
		for _, d := range []string{".git/hooks", ".git/objects", ".git/refs", "src"} {
			mustDo(t, os.MkdirAll(filepath.Join(wd, d), 0o755))
		}
		files[".git/HEAD"] = "ref: refs/heads/main\n"
		for name, content := range files {
			mustDo(t, os.WriteFile(filepath.Join(wd, name), []byte(content), 0o644))
		}
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestPlanPinnedOutput plans each case twice in one process (the second
// with whatever the first left memoised or cached) and wants the same box
// both times; with AIRLOCK_PLAN_PIN set it also wants the box recorded
// there by an earlier run.
func TestPlanPinnedOutput(t *testing.T) {
	testsupport.Require(t, testsupport.Bwrap)
	exe := testsupport.AirlockBin(t)
	root := os.Getenv(planPinEnv)
	persistent := root != ""
	if !persistent {
		root = t.TempDir()
	}
	state := filepath.Join(root, "state")
	mustDo(t, os.MkdirAll(state, 0o700))
	mustDo(t, os.Chmod(root, 0o755))
	for _, c := range planPinCases {
		t.Run(c.name, func(t *testing.T) {
			wd := filepath.Join(root, "wd-"+c.name)
			if _, err := os.Stat(wd); err != nil {
				mustDo(t, os.MkdirAll(wd, 0o755))
				if c.setup != nil {
					c.setup(t, wd)
				}
			}
			var outs []planOutput
			for range 2 {
				box, err := c.plan(c.spec(wd, state), Tier1, exe)
				if err != nil {
					t.Fatal(err)
				}
				out := outputOf(box)
				if c.fresh {
					out.Fingerprint = ""
				}
				outs = append(outs, out)
				box.Close()
			}
			if !reflect.DeepEqual(outs[0], outs[1]) {
				t.Fatalf("two plans of one spec differ:\nfirst  %+v\nsecond %+v", outs[0], outs[1])
			}
			if !strings.Contains(strings.Join(outs[0].Options, " "), "--ro-bind-fd") {
				t.Fatalf("options hold no pinned bind: %q", outs[0].Options)
			}
			if !persistent {
				return
			}
			rec := filepath.Join(root, c.name+".json")
			data, err := os.ReadFile(rec)
			if os.IsNotExist(err) {
				data, _ = json.MarshalIndent(outs[0], "", " ")
				mustDo(t, os.WriteFile(rec, data, 0o644))
				t.Logf("recorded %s", rec)
				return
			}
			mustDo(t, err)
			var want planOutput
			mustDo(t, json.Unmarshal(data, &want))
			if !reflect.DeepEqual(outs[0], want) {
				got, _ := json.MarshalIndent(outs[0], "", " ")
				t.Fatalf("plan differs from the record %s:\ngot  %s\nwant %s", rec, got, data)
			}
		})
	}
}
