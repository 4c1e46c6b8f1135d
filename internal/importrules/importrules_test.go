package importrules

import (
	"encoding/json"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/airlock-run/airlock"

type pkg struct {
	ImportPath string
	Doc        string
	Imports    []string
	Deps       []string
}

// load lists every package of the module with its direct imports and its
// whole dependency closure, as the go command sees them for this platform.
func load(t *testing.T) map[string]*pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]*pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		p := new(pkg)
		if err := dec.Decode(p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs[strings.TrimPrefix(p.ImportPath, module+"/")] = p
	}
	if len(pkgs) < 3 {
		t.Fatalf("go list found %d packages; the test is not looking at the module", len(pkgs))
	}
	return pkgs
}

// pure packages decide and compute; they never touch the machine. Their
// direct imports may not include any package that does I/O, and every airlock
// package they depend on must be pure too.
var pure = []string{"policy", "policy/shellread", "netrule", "fit"}

// ioPackages are the standard and third-party packages through which a
// package touches files, processes, the network or a database.
var ioPackages = []string{
	"os", "os/exec", "os/signal", "os/user", "io/ioutil", "io/fs", "syscall",
	"golang.org/x/sys/unix", "net", "net/http", "net/rpc", "database/sql",
	"modernc.org/sqlite", "path/filepath", "plugin", "runtime/cgo", "unsafe",
}

// rules are "package P must not depend on Q" (transitively), with the reason.
// A direct rule looks only at what the package itself imports: os/exec
// reaches many packages through third-party code they do not run (the MCP
// SDK's command transport), and what matters is who calls it.
var rules = []struct {
	who    func(string) bool
	banned string
	direct bool
	why    string
}{
	{func(p string) bool { return p != "runner" }, "os/exec", true,
		"only runner starts processes on the host (DESIGN.md: runner is the only code that executes processes)"},
	{func(p string) bool { return p == "egress" || strings.HasPrefix(p, "egress/") }, module + "/policy", false,
		"egress takes a check function; it must not import policy"},
	{func(p string) bool {
		return p != "jobs/temporal" && !strings.HasPrefix(p, "cmd/") && !strings.HasPrefix(p, "internal/")
	}, "go.temporal.io/sdk", false,
		"only jobs/temporal imports Temporal"},
	{func(p string) bool { return !strings.HasPrefix(p, "cmd/") && !strings.HasPrefix(p, "internal/cli") }, module + "/internal/cli", false,
		"the CLI is wiring; no part imports it"},
}

func TestImportRules(t *testing.T) {
	for _, v := range violations(load(t)) {
		t.Error(v)
	}
}

// violations checks pkgs against the rules and the pure list.
func violations(pkgs map[string]*pkg) []string {
	names := make([]string, 0, len(pkgs))
	for n := range pkgs {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	for _, name := range names {
		p := pkgs[name]
		for _, r := range rules {
			if r.who(name) && (contains(p.Imports, r.banned) || (!r.direct && contains(p.Deps, r.banned))) {
				out = append(out, name+" imports "+r.banned+": "+r.why)
			}
		}
		if !contains(pure, name) {
			continue
		}
		for _, imp := range p.Imports {
			if contains(ioPackages, imp) {
				out = append(out, name+" imports "+imp+": "+name+" does no I/O (DESIGN.md)")
			}
		}
		for _, d := range p.Deps {
			if rest, ok := strings.CutPrefix(d, module+"/"); ok && !contains(pure, rest) && rest != "errs" {
				out = append(out, name+" depends on "+rest+", which is not a pure package")
			}
		}
	}
	return out
}

func TestEveryPackageHasADocComment(t *testing.T) {
	for name, p := range load(t) {
		if strings.TrimSpace(p.Doc) == "" {
			t.Errorf("package %s has no doc comment saying what it does and who may import it", name)
		}
	}
}

// TestRulesCanFail proves the checker is not vacuous: made-up packages that
// break each rule are all reported, and a clean one is not.
func TestRulesCanFail(t *testing.T) {
	fake := map[string]*pkg{
		"mediator":      {Imports: []string{"os/exec"}},
		"policy":        {Imports: []string{"os"}, Deps: []string{module + "/runner"}},
		"egress":        {Deps: []string{module + "/policy"}},
		"egress/inner":  {Deps: []string{module + "/policy"}},
		"files":         {Deps: []string{"go.temporal.io/sdk"}},
		"fit":           {Imports: []string{"net"}},
		"audit":         {Imports: []string{module + "/internal/cli"}},
		"runner":        {Imports: []string{"os/exec", "os"}},
		"mcp":           {Deps: []string{"os/exec"}}, // through a third party: allowed
		"jobs/temporal": {Deps: []string{"go.temporal.io/sdk"}},
	}
	got := violations(fake)
	want := []string{"audit imports", "egress imports", "egress/inner imports", "files imports", "fit imports net",
		"mediator imports os/exec", "policy imports os", "policy depends on runner"}
	if len(got) != len(want) {
		t.Fatalf("got %d violations, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("violation %d: got %q, want it to start with %q", i, got[i], want[i])
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
