package policy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestGrantFor(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.FixedZone("x", 3600))
	tests := []struct {
		name    string
		call    Call
		want    string // Grant.String(), or "" for an error
		wantErr string
	}{
		{"argv", Call{Argv: []string{"git", "push", "origin", "feature"}}, `run exactly ["git","push","origin","feature"]`, ""},
		{"script file", Call{Argv: []string{"python3", "tools/gen.py", "--out", "x"}}, `run exactly ["python3","tools/gen.py","--out","x"]`, ""},
		{"python module", Call{Argv: []string{"python3", "-m", "pytest"}}, `run exactly ["python3","-m","pytest"]`, ""},
		{"tool", Call{Tool: "fs.write", Args: map[string]any{"path": "src/a.go", "n": 1}}, `call fs.write with exactly {"n":1,"path":"src/a.go"}`, ""},
		{"tool without args", Call{Tool: "deploy"}, "call deploy with exactly {}", ""},
		{"python -c", Call{Argv: []string{"python3", "-c", "print(1)"}}, "", "python3 -c runs inline code"},
		{"bash -c", Call{Argv: []string{"bash", "-c", "ls"}}, "", "bash -c runs inline code"},
		{"bash -lc", Call{Argv: []string{"/bin/bash", "-lc", "ls"}}, "", "bash -lc runs inline code"},
		{"node -e", Call{Argv: []string{"node", "-e", "1"}}, "", "node -e runs inline code"},
		{"node --eval=", Call{Argv: []string{"node", "--eval=1"}}, "", "runs inline code"},
		{"perl -E", Call{Argv: []string{"perl", "-E", "say 1"}}, "", "perl -E runs inline code"},
		{"ruby -e", Call{Argv: []string{"ruby", "-e", "1"}}, "", "runs inline code"},
		{"php -r", Call{Argv: []string{"php", "-r", "1;"}}, "", "runs inline code"},
		{"sh from stdin", Call{Argv: []string{"sh"}}, "", "reads a program from standard input"},
		{"python from stdin dash", Call{Argv: []string{"python3", "-"}}, "", "runs inline code"},
		{"versioned python", Call{Argv: []string{"python3.12", "-c", "1"}}, "", "runs inline code"},
		{"awk", Call{Argv: []string{"awk", "{print}", "f"}}, "", "awk runs the program text"},
		{"env wrapper", Call{Argv: []string{"env", "X=1", "git", "push"}}, "", "env starts another program"},
		{"sudo wrapper", Call{Argv: []string{"sudo", "rm", "-rf", "/"}}, "", "sudo starts another program"},
		{"xargs", Call{Argv: []string{"xargs", "rm"}}, "", "xargs starts another program"},
		{"nothing", Call{}, "", "nothing to grant"},
		{"both", Call{Argv: []string{"ls"}, Tool: "x"}, "", "not both"},
		{"tool star", Call{Tool: "*"}, "", "exactly one tool"},
		{"tool bad arg", Call{Tool: "x", Args: map[string]any{"f": func() {}}}, "", "not a JSON value"},
		{"empty program", Call{Argv: []string{""}}, "", "needs a program"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := GrantFor(tc.call, now)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got grant %v, error %v; want an error containing %q", g, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want grant %s", err, tc.want)
			}
			if got := g.String(); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
			if !g.Created.Equal(now) || g.Created.Location() != time.UTC {
				t.Errorf("got created %v, want %v in UTC", g.Created, now)
			}
			// A grant survives a trip through the grants file.
			b, err := json.Marshal(g)
			if err != nil {
				t.Fatal(err)
			}
			var back Grant
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if err := ValidateGrant(back); err != nil {
				t.Errorf("the stored grant no longer validates: %v", err)
			}
		})
	}
}

// A grant copies the call: changing the caller's slice or map afterwards
// does not change what was granted.
func TestGrantForCopies(t *testing.T) {
	argv := []string{"git", "push"}
	args := map[string]any{"path": "a", "list": []any{"x"}}
	ga, _ := GrantFor(Call{Argv: argv}, time.Time{})
	gt, _ := GrantFor(Call{Tool: "t", Args: args}, time.Time{})
	argv[1] = "pull"
	args["path"] = "b"
	args["list"].([]any)[0] = "y"
	if want := []string{"git", "push"}; !cmp.Equal(ga.Argv, want) {
		t.Errorf("got argv %q, want %q", ga.Argv, want)
	}
	if gt.Args["path"] != "a" || gt.Args["list"].([]any)[0] != "x" {
		t.Errorf("got args %v, want the values at grant time", gt.Args)
	}
}

// Grants lift an escalation whether they are added before or after a
// narrowing, and never lift a denial of either policy.
func TestGrantsAndNarrowing(t *testing.T) {
	base, err := Parse("b.yaml", []byte("shell:\n  args:\n    git:\n      escalate: [\"push *\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	narrow, err := ParseNarrowing("n.yaml", []byte("shell:\n  args:\n    git:\n      deny: [\"push * main\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	grants := []Grant{{Kind: "argv", Argv: []string{"git", "push", "origin", "x"}}, {Kind: "argv", Argv: []string{"git", "push", "origin", "main"}}}
	for name, p := range map[string]*Policy{
		"grants then narrow": base.WithGrants(grants).Narrow(narrow),
		"narrow then grants": base.Narrow(narrow).WithGrants(grants),
	} {
		t.Run(name, func(t *testing.T) {
			c, err := p.Compile(World{Workdir: "/w"})
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				argv []string
				want Verdict
			}{
				{[]string{"git", "push", "origin", "x"}, Allow},
				{[]string{"git", "push", "origin", "y"}, Escalate},
				{[]string{"git", "push", "origin", "main"}, Deny},
			} {
				if got := c.Argv(tc.argv); got.Verdict != tc.want {
					t.Errorf("%q: got %v (%s), want %v", tc.argv, got.Verdict, got.Rule, tc.want)
				}
			}
		})
	}
}

// A World that knows less allows less: no home means no "~" path, no
// LookPath means no path-qualified program passes as an allowed name.
