package policy

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// seedPolicies are the policy documents of the golden files.
func seedPolicies(tb testing.TB) []string {
	tb.Helper()
	files, _ := filepath.Glob("testdata/decisions/*.txt")
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		_, rest, _ := strings.Cut(string(b), "-- policy --\n")
		doc, _, _ := strings.Cut(rest, "\n-- ")
		if strings.TrimSpace(doc) != "workspace" {
			out = append(out, doc)
		}
	}
	return out
}

// FuzzParse: Parse never panics, and a policy it accepts always compiles
// and decides without panicking.
func FuzzParse(f *testing.F) {
	for _, s := range seedPolicies(f) {
		f.Add([]byte(s))
	}
	for _, s := range []string{"", "{}", "fs: {read: [\"[\"]}", "tools: {a: {verdict: allow, when: {p: [x, \"src/**\"]}}}",
		"limits: {memory: 1.5G, cpu: 50%}", `{"fs": {"read": ["."]}, "fs": 1}`, "a: &a [*a]", "shell: false",
		"net: {allow: ['*.x.com:*', '[::1]:80', '10.0.0.0/8']}", "env: {set: {A: 1}}", "\t", "- - -", "!!binary x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.yaml", data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
			return
		}
		c, err := p.Compile(testWorld(Fix))
		if err != nil {
			t.Fatalf("a parsed policy did not compile: %v\n%s", err, data)
		}
		for _, call := range fuzzCalls {
			if _, err := decideLine(c, call); err != nil {
				t.Fatalf("%s: %v", call, err)
			}
		}
	})
}

var fuzzCalls = []string{
	`argv ["git","push","--force"]`, `argv ["/usr/bin/git","status"]`, `argv ["./x"]`, `argv ["sh","-c","curl x|sh"]`,
	"shell git status && rm -rf ~ > /etc/x", "shell echo $(curl x) &", "read src/../../etc/shadow", "write .git/hooks/x",
	"read ~/.ssh/id_rsa", "net api.github.com 443", "net 10.0.0.1 5432", "env GITHUB_TOKEN", "env LD_PRELOAD",
	`tool fs.write {"path":"src/a"}`, "tool x",
}

// FuzzDecide: no input makes any decision panic, and every refusal has a
// reason and a rule.
func FuzzDecide(f *testing.F) {
	f.Add("git status && curl x | sh", "src/../x", "example.com", "fs.read")
	f.Add("a\\\n\"b", "~", "127.0.0.1", "*")
	f.Add("$(${x@P})", "/", "[::1]", "")
	f.Add(":(){ :|:& };:", "\x00", "xn--nxasmq6b.com.", "a.b")
	f.Add("cat <<EOF\n$(rm -rf /)\nEOF", "../..", "1.1", "\n")
	checkers := []*Checker{}
	for _, doc := range seedPolicies(f) {
		p, err := Parse("seed.yaml", []byte(doc))
		if err != nil {
			f.Fatal(err)
		}
		c, err := p.Compile(testWorld(Fix))
		if err != nil {
			f.Fatal(err)
		}
		checkers = append(checkers, c)
	}
	f.Fuzz(func(t *testing.T, src, path, host, tool string) {
		for _, c := range checkers {
			ds := []Decision{c.Shell(src).Overall, c.Argv(strings.Fields(src)), c.Path(Read, path), c.Path(Write, path),
				c.Net(host, 443), c.Env(host), c.Tool(tool, map[string]any{"path": path})}
			for _, d := range ds {
				if d.Rule == "" {
					t.Fatalf("a decision without a rule: %+v", d)
				}
				if d.Verdict != Allow && d.Reason == "" {
					t.Fatalf("a refusal without a reason: %+v", d)
				}
			}
		}
	})
}

// Narrowing never makes a decision more permissive: for random base and
// narrowing policies, every call's verdict under the narrowed policy is at
// least as strict as under the base.
func FuzzNarrowNeverWidens(f *testing.F) {
	for i := uint64(0); i < 8; i++ {
		f.Add(i, i*7919+3)
	}
	f.Fuzz(func(t *testing.T, a, b uint64) {
		checkNarrowing(t, rand.New(rand.NewPCG(a, b)))
	})
}

// TestNarrowNeverWidens runs the property on many generated pairs as an
// ordinary test.
func TestNarrowNeverWidens(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300; i++ {
		checkNarrowing(t, r)
	}
}

func pick[T any](r *rand.Rand, pool []T) []T {
	if r.IntN(5) == 0 {
		return nil // not given
	}
	out := []T{}
	for _, x := range pool {
		if r.IntN(3) == 0 {
			out = append(out, x)
		}
	}
	return out
}

var (
	fsPool  = []string{".", "src", "src/**/*.go", "/etc", "~", "~/.cache", "out", "../x", "/tmp", "*", "/", "src/gen"}
	netPool = []string{"example.com", "*.example.com", "api.example.com:443", "10.0.0.0/8", "127.0.0.1:8080", "*.github.com:*",
		"10.1.0.0/16:80", "x.github.com", "*.a.example.com", "[::1]:8080", "127.1:8080", "api.example.com:*"}
	progPool  = []string{"git", "ls", "cat", "rm", "curl", "sh", "/usr/bin/git", "./run.sh", "env", "xargs"}
	argPool   = []string{"push --force", "push *", "status *", "-r", "*", "log -n *", "--unsafe"}
	envPool   = []string{"HOME", "GIT_*", "*", "LD_PRELOAD", "TOKEN"}
	toolNames = []string{"fs.read", "fs.*", "*", "web.fetch", "fs.write"}
)

func randomPolicy(r *rand.Rand) *Policy {
	p := &Policy{}
	if r.IntN(4) == 0 {
		p.Isolation = "none"
	}
	p.FS.Read, p.FS.Write = pick(r, fsPool), pick(r, fsPool)
	p.Net.Allow, p.Net.Deny = pick(r, netPool), pick(r, netPool[:2])
	if r.IntN(4) == 0 {
		p.Net.DNS = "none"
	}
	p.Shell.Allow = pick(r, progPool)
	if r.IntN(2) == 0 {
		p.Shell.Args = map[string]ArgRules{}
		for _, prog := range []string{"git", "rm", "curl"} {
			if r.IntN(2) == 0 {
				p.Shell.Args[prog] = ArgRules{Allow: pick(r, argPool), Deny: pick(r, argPool), Escalate: pick(r, argPool)}
			}
		}
	}
	if r.IntN(3) == 0 {
		b := r.IntN(2) == 0
		p.Shell.Raw = &b
	}
	p.Shell.Spawn = r.IntN(2) == 0
	p.Shell.RunWritten = r.IntN(2) == 0
	p.Env.Allow = pick(r, envPool)
	if r.IntN(2) == 0 {
		p.Tools = map[string]ToolRule{}
		for _, n := range toolNames {
			if r.IntN(2) == 0 {
				tr := ToolRule{Verdict: Verdict(r.IntN(3))}
				if r.IntN(3) == 0 {
					tr.When = map[string][]string{"path": {"src/**"}}
					tr.Else = Verdict(r.IntN(3))
				}
				p.Tools[n] = tr
			}
		}
	}
	p.Limits = Limits{Memory: int64(r.IntN(3)) << 30, Pids: r.IntN(3) * 100}
	return p
}

var narrowCalls = []string{
	`argv ["git","status"]`, `argv ["git","push","--force"]`, `argv ["git","push","origin"]`, `argv ["rm","-r","x"]`,
	`argv ["rm","x"]`, `argv ["curl","x"]`, `argv ["/usr/bin/git","log"]`, `argv ["./run.sh"]`, `argv ["sh","-c","ls"]`,
	`argv ["env","git","status"]`, "shell ls | xargs rm", "shell git status && cat x > out/y", "shell sleep 1 &",
	"shell curl x | sh", "read src/a.go", "read /etc/hosts", "read ~/.cache/x", "read ../x/y", "read ~/.ssh/k",
	"write src/gen/a", "write out/x", "write /tmp/x", "write src/a.go", "net example.com 443", "net api.example.com 443",
	"net x.github.com 22", "net 10.1.1.1 80", "net 127.0.0.1 8080", "net b.a.example.com 443", "net ::1 8080",
	"net api.example.com 8443", "net x.github.com 443", "net 10.2.0.1 443", "env HOME", "env GIT_DIR", "env LD_PRELOAD", "env TOKEN",
	`tool fs.read {}`, `tool fs.write {"path":"src/a"}`, `tool fs.write {"path":"x"}`, `tool web.fetch {}`, `tool other {}`,
}

func checkNarrowing(t *testing.T, r *rand.Rand) {
	t.Helper()
	base, narrow := randomPolicy(r), randomPolicy(r)
	if r.IntN(2) == 0 {
		base = base.WithGrants([]Grant{{Kind: "argv", Argv: []string{"rm", "-r", "x"}}, {Kind: "tool", Tool: "web.fetch"}})
	}
	mode := Mode(r.IntN(2))
	bc, err := base.Compile(testWorld(mode))
	if err != nil {
		t.Fatalf("base: %v", err)
	}
	q := base.Narrow(narrow)
	nc, err := q.Compile(testWorld(mode))
	if err != nil {
		t.Fatalf("narrowed: %v", err)
	}
	// The flattened fs lists alone (what a sandbox plan mounts) never
	// exceed the base either.
	flat := *q
	flat.within = nil
	fc, err := flat.Compile(testWorld(mode))
	if err != nil {
		t.Fatalf("flattened: %v", err)
	}
	for _, call := range narrowCalls {
		b, err := decideLine(bc, call)
		if err != nil {
			t.Fatalf("base: %s: %v", call, err)
		}
		n, err := decideLine(nc, call)
		if err != nil {
			t.Fatalf("narrowed: %s: %v", call, err)
		}
		if verdictOf(n) < verdictOf(b) {
			t.Fatalf("narrowing widened %s: base %s, narrowed %s\nbase %+v\nnarrow %+v", call, b, n, base, narrow)
		}
		if strings.HasPrefix(call, "read ") || strings.HasPrefix(call, "write ") || strings.HasPrefix(call, "net ") {
			f, err := decideLine(fc, call)
			if err != nil {
				t.Fatalf("flattened: %s: %v", call, err)
			}
			if verdictOf(f) < verdictOf(b) {
				t.Fatalf("flattened lists widened %s: base %s, flattened %s\nbase %+v %+v\nnarrow %+v %+v", call, b, f, base.FS, base.Net, narrow.FS, narrow.Net)
			}
		}
	}
	for _, pair := range [][2]float64{
		{float64(base.Limits.Memory), float64(q.Limits.Memory)}, {float64(base.Limits.Pids), float64(q.Limits.Pids)},
	} {
		if pair[0] != 0 && (pair[1] == 0 || pair[1] > pair[0]) {
			t.Fatalf("limits widened: base %+v, narrowed %+v", base.Limits, q.Limits)
		}
	}
	if base.Isolation != "none" && q.Isolation == "none" {
		t.Fatalf("isolation widened to none")
	}
	if !base.Shell.Spawn && q.Shell.Spawn || !base.Shell.RawAllowed() && q.Shell.RawAllowed() || !base.Shell.RunWritten && q.Shell.RunWritten {
		t.Fatalf("shell switches widened: base %+v, narrowed %+v", base.Shell, q.Shell)
	}
}

func verdictOf(s string) Verdict {
	v, _, _ := strings.Cut(s, " ")
	var out Verdict
	if err := out.UnmarshalText([]byte(v)); err != nil {
		panic(fmt.Sprintf("bad verdict in %q", s))
	}
	return out
}
