package policy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/airlock-run/airlock/errs"
)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"empty", "", "p.yaml:1:1: policy is empty"},
		{"comment only", "# nothing\n", "p.yaml:1:1: policy is empty"},
		{"not yaml", "fs: [\n", "p.yaml:"},
		{"top level list", "- a\n", "p.yaml:1:1: want a mapping, got a list"},
		{"unknown top key", "isolation: auto\nfilesystem: {}\n", "p.yaml:2:1: filesystem: unknown field"},
		{"duplicate key", "fs:\n  read: [a]\n  read: [b]\n", "p.yaml:3:3: fs.read: duplicate key"},
		{"duplicate json key", `{"fs": {"read": ["a"]}, "fs": {}}`, "p.yaml:1:25: fs: duplicate key"},
		{"run_written not bool", "shell:\n  run_written: 1\n", "p.yaml:2:16: shell.run_written: want"},
		{"isolation value", "isolation: off\n", `p.yaml:1:12: isolation: "off": want auto or none`},
		{"fs read not list", "fs:\n  read: src\n", `p.yaml:2:9: fs.read: want a list, got the string "src"`},
		{"fs read null", "fs:\n  read:\n", "p.yaml:2:8: fs.read: want a list, got nothing (null)"},
		{"fs entry number", "fs:\n  read: [1]\n", "p.yaml:2:10: fs.read[0]: want a string, got a number (quote it)"},
		{"bad glob", "fs:\n  write: [ok, \"src/[a\"]\n", `p.yaml:2:15: fs.write[1]: "src/[a": bad glob`},
		{"double star inside", "fs:\n  read: [\"src/a**\"]\n", `fs.read[0]: "src/a**": "**" must be a whole path segment`},
		{"tilde user", "fs:\n  read: [\"~bob/x\"]\n", `fs.read[0]: "~bob/x": only "~" and "~/..." are expanded`},
		{"dotdot after glob", "fs:\n  read: [\"src/*/../x\"]\n", `fs.read[0]: "src/*/../x": ".." after a glob segment`},
		{"net bad entry", "net:\n  allow: [\"exa mple.com\"]\n", "p.yaml:2:11: net.allow[0]: \"exa mple.com\""},
		{"net bad port", "net:\n  allow: [\"example.com:99999\"]\n", "net.allow[0]"},
		{"net deny bad", "net:\n  deny: [\"a@b\"]\n", "net.deny[0]"},
		{"dns", "net:\n  dns: yes\n", `net.dns: "yes": want allowlist or none`},
		{"shell allow glob", "shell:\n  allow: [\"git*\"]\n", `shell.allow[0]: "git*": a program is a bare name`},
		{"shell raw string", "shell:\n  raw: \"false\"\n", `p.yaml:2:8: shell.raw: want true or false, got the string "false"`},
		{"shell true", "shell: true\n", "shell: only `shell: false` is a shorthand"},
		{"args unknown", "shell:\n  args:\n    git:\n      forbid: [x]\n", "p.yaml:4:7: shell.args.git.forbid: unknown field"},
		{"args path key", "shell:\n  args:\n    /usr/bin/git:\n      deny: [x]\n", "shell.args./usr/bin/git: argument rules are keyed by a bare program name"},
		{"args bad pattern", "shell:\n  args:\n    git:\n      deny: [\"push [\"]\n", `shell.args.git.deny[0]: "push [": bad glob`},
		{"args empty pattern", "shell:\n  args:\n    git:\n      deny: [\" \"]\n", "shell.args.git.deny[0]"},
		{"env bad name", "env:\n  allow: [\"A-B C\"]\n", `env.allow[0]: "A-B C"`},
		{"env set bad", "env:\n  set:\n    1X: y\n", "p.yaml:3:5: env.set.1X"},
		{"env set list", "env:\n  set:\n    X: [y]\n", "env.set.X: want a string, got a list"},
		{"tools verdict", "tools:\n  fs.read: maybe\n", `p.yaml:2:12: tools.fs.read: want true, false or escalate, got the string "maybe"`},
		{"tools name", "tools:\n  \"a b\": true\n", "tools.a b: a tool name"},
		{"tools empty function", "tools:\n  a.: true\n", "tools.a."},
		{"tools star server", "tools:\n  \"*.read\": true\n", "tools.*.read"},
		{"tools nested too deep", "tools:\n  fs:\n    read:\n      x: true\n", "tools.fs.read"},
		{"tools when empty list", "tools:\n  fs.write: {verdict: allow, when: {path: []}}\n", "tools.fs.write.when.path: an empty list never matches"},
		{"tools else without when", "tools:\n  fs.write: {verdict: allow, else: deny}\n", "tools.fs.write.else: else needs a when"},
		{"tools unknown rule key", "tools:\n  fs.write: {verdict: allow, unless: {}}\n", "tools.fs.write.unless: unknown field"},
		{"tools dup flattened", "tools:\n  fs.read: true\n  fs:\n    read: false\n", "tools.fs.read: given twice"},
		{"memory unit", "limits:\n  memory: 2Q\n", `p.yaml:2:11: limits.memory: "2Q" is not a size`},
		{"memory tiny", "limits:\n  memory: 2\n", `limits.memory: "2" is below the minimum of 1M`},
		{"memory negative", "limits:\n  memory: -1G\n", "limits.memory"},
		{"cpu bad", "limits:\n  cpu: lots\n", `limits.cpu: "lots" is not a CPU share`},
		{"cpu zero", "limits:\n  cpu: 0%\n", "limits.cpu"},
		{"wall bad", "limits:\n  wall: 30\n", `limits.wall: "30" is not a duration`},
		{"wall negative", "limits:\n  wall: -5m\n", "limits.wall: \"-5m\" must be longer than zero"},
		{"pids bad", "limits:\n  pids: 1.5\n", "limits.pids"},
		{"pids zero", "limits:\n  pids: 0\n", "limits.pids"},
		{"escalation", "escalation:\n  timeout: soon\n", "escalation.timeout"},
		{"sandbox", "sandbox:\n  ptrace: 1\n", "sandbox.ptrace: want true or false, got a number"},
		{"sandbox home", "sandbox:\n  home: kept\n", `sandbox.home: "kept" is not fresh or persist`},
		{"sandbox home number", "sandbox:\n  home: 1\n", "sandbox.home: want a string, got a number"},
		{"alias", "a: &x [1]\nfs:\n  read: *x\n", "p.yaml:1:1: a: unknown field"},
		{"alias value", "fs:\n  read: &x [\".\"]\n  write: *x\n", "p.yaml:3:10: fs.write: aliases are not supported"},
		{"merge key", "fs:\n  <<: {read: [x]}\n", "merge keys"},
		{"two documents", "isolation: auto\n---\nisolation: none\n", "p.yaml:2:1: more than one YAML document"},
		{"control char", "fs:\n  read: [\"a\\u0007b\"]\n", "fs.read[0]: contains a control character"},
		{"nul", "isolation: auto\x00", "document contains a NUL byte"},
		{"huge", "isolation: auto\n#" + strings.Repeat("x", MaxPolicySize), "larger than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse("p.yaml", []byte(tc.doc))
			if err == nil {
				t.Fatalf("got policy %+v, want error containing %q", p, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %q, want it to contain %q", err, tc.want)
			}
			if !errs.Is(err, errs.Invalid) {
				t.Errorf("got class %v, want invalid", errs.ClassOf(err))
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

func TestParseFull(t *testing.T) {
	doc := `
isolation: auto
fs:
  read: [".", "~/.cache"]
  write: ["./out"]
net:
  allow: ["api.github.com:443"]
  dns: allowlist
shell:
  allow: [git, bun]
  args:
    git: {deny: ["push --force*"], escalate: ["push*"]}
  raw: false
  spawn: false
  run_written: true
env:
  allow: [GITHUB_TOKEN]
  set: {CI: 1, LANG: C.UTF-8}
tools:
  fs: {read: true, remove: false}
  fs.write: {verdict: allow, when: {path: "src/**", mode: [a, b]}, else: deny}
  "*": escalate
limits: {memory: 2G, cpu: "150%", wall: 30m, pids: 256}
escalation: {timeout: 45s}
sandbox: {ptrace: true, home: persist}
`
	p, err := Parse("airlock.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	f := false
	want := &Policy{
		Isolation: "auto",
		FS:        FS{Read: []string{".", "~/.cache"}, Write: []string{"./out"}},
		Net:       Net{Allow: []string{"api.github.com:443"}, DNS: "allowlist"},
		Shell: Shell{Allow: []string{"git", "bun"}, Args: map[string]ArgRules{"git": {Deny: []string{"push --force*"}, Escalate: []string{"push*"}}},
			Raw: &f, RunWritten: true},
		Env: EnvRules{Allow: []string{"GITHUB_TOKEN"}, Set: map[string]string{"CI": "1", "LANG": "C.UTF-8"}},
		Tools: map[string]ToolRule{
			"fs.read": {Verdict: Allow}, "fs.remove": {Verdict: Deny}, "*": {Verdict: Escalate},
			"fs.write": {Verdict: Allow, When: map[string][]string{"path": {"src/**"}, "mode": {"a", "b"}}, Else: Deny},
		},
		Limits:     Limits{Memory: 2 << 30, CPU: 1.5, Wall: 30 * time.Minute, Pids: 256},
		Escalation: Escalation{Timeout: 45 * time.Second},
		Sandbox:    SandboxOpts{Ptrace: true, Home: HomePersist},
		Source:     "airlock.yaml",
	}
	if d := cmp.Diff(want, p, cmpopts.IgnoreUnexported(Policy{})); d != "" {
		t.Errorf("parsed policy differs (-want +got):\n%s", d)
	}
}

func TestParseJSON(t *testing.T) {
	doc := `{"fs": {"read": ["src"]}, "net": {"allow": []}, "limits": {"memory": "512M", "cpu": 1.5}}`
	p, err := Parse("p.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.FS.Read, []string{"src"}; !cmp.Equal(got, want) {
		t.Errorf("got fs.read %q, want %q", got, want)
	}
	if got, want := p.Limits.Memory, int64(512<<20); got != want {
		t.Errorf("got memory %d, want %d", got, want)
	}
	if got, want := p.Limits.CPU, 1.5; got != want {
		t.Errorf("got cpu %v, want %v", got, want)
	}
	if len(p.Net.Allow) != 0 || p.Net.Allow == nil {
		t.Errorf("got net.allow %#v, want an empty list", p.Net.Allow)
	}
}

func TestParseDefaults(t *testing.T) {
	p, err := Parse("p.yaml", []byte("isolation: auto\n"))
	if err != nil {
		t.Fatal(err)
	}
	w := Workspace()
	w.Source = "p.yaml"
	if d := cmp.Diff(w, p, cmpopts.IgnoreUnexported(Policy{})); d != "" {
		t.Errorf("a policy that gives nothing differs from the workspace profile (-want +got):\n%s", d)
	}
	n, err := ParseNarrowing("n.yaml", []byte("fs:\n  read: [src]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if n.FS.Write != nil || n.Limits != (Limits{}) || n.Net.Allow != nil {
		t.Errorf("a narrowing policy got defaults: %+v", n)
	}
}

func TestUnits(t *testing.T) {
	sizes := map[string]int64{"512M": 512 << 20, "2G": 2 << 30, "2Gi": 2 << 30, "2GB": 2 << 30, "1.5g": 3 << 29,
		"1T": 1 << 40, "1048576": 1 << 20, "4096K": 4 << 20}
	for in, want := range sizes {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "G", "1e9", "0x10M", "-1G", "1_000M", "NaN", "Inf", "1 G B", "99999999999T"} {
		if got, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", bad, got)
		}
	}
	cpus := map[string]float64{"150%": 1.5, "1.5": 1.5, "2": 2, "50%": 0.5, " 100% ": 1}
	for in, want := range cpus {
		got, err := parseCPU(in)
		if err != nil || got != want {
			t.Errorf("parseCPU(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "%", "0", "-1", "1e3", "abc", "100000"} {
		if got, err := parseCPU(bad); err == nil {
			t.Errorf("parseCPU(%q) = %v, want an error", bad, got)
		}
	}
}

// The JSON form of a parsed policy (what `airlock policy show` prints) is
// itself a policy that parses to the same thing.
func TestJSONRoundTrip(t *testing.T) {
	for _, doc := range seedPolicies(t) {
		p, err := Parse("a.yaml", []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		q, err := Parse("a.yaml", b)
		if err != nil {
			t.Fatalf("the JSON form does not parse: %v\n%s", err, b)
		}
		if d := cmp.Diff(p, q, cmpopts.IgnoreUnexported(Policy{}), cmpopts.EquateEmpty()); d != "" {
			t.Errorf("round trip differs (-before +after):\n%s\n%s", d, b)
		}
	}
}
