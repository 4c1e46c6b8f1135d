package importrules

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// pkg is one package of the module as the go command and the parser see it.
type pkg struct {
	ImportPath     string
	Dir            string
	Doc            string
	GoFiles        []string
	CgoFiles       []string
	IgnoredGoFiles []string
	Imports        []string // direct imports on this platform
	Deps           []string // the whole closure on this platform

	// From the source of every non-test file, whatever its build
	// constraint (scan fills them in).
	AllImports []string // direct imports
	Starts     []string // "file.go:12: os.StartProcess": ways of starting a process
}

// load lists every package of the module and scans its source.
func load(t *testing.T) map[string]*pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
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
		if err := scan(p); err != nil {
			t.Fatal(err)
		}
		pkgs[strings.TrimPrefix(p.ImportPath, module+"/")] = p
	}
	if len(pkgs) < 3 {
		t.Fatalf("go list found %d packages; the test is not looking at the module", len(pkgs))
	}
	return pkgs
}

// scan parses the package's non-test files, for every platform, and fills
// in AllImports and Starts.
func scan(p *pkg) error {
	seen := map[string]bool{}
	for _, f := range slices.Concat(p.GoFiles, p.CgoFiles, p.IgnoredGoFiles) {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		fs, err := scanFile(filepath.Join(p.Dir, f), nil)
		if err != nil {
			return fmt.Errorf("scan %s: %w", p.ImportPath, err)
		}
		if fs == nil { // //go:build ignore: a program of its own, not the package
			continue
		}
		for _, imp := range fs.imports {
			if !seen[imp] {
				seen[imp] = true
				p.AllImports = append(p.AllImports, imp)
			}
		}
		for _, s := range fs.starts {
			p.Starts = append(p.Starts, f+":"+s)
		}
	}
	slices.Sort(p.AllImports)
	return nil
}

// ioPackages are the standard and third-party packages through which a
// package touches files, processes, the network or a database.
var ioPackages = []string{
	"os", "os/exec", "os/signal", "os/user", "io/ioutil", "io/fs", "syscall",
	"golang.org/x/sys/unix", "golang.org/x/sys/execabs", "net", "net/http", "net/rpc", "database/sql",
	"modernc.org/sqlite", "path/filepath", "plugin", "runtime/cgo", "unsafe",
}

// depRules are "package P must not depend on Q" for packages outside the
// module, where the table cannot reach. A direct rule counts only P's own
// imports; the others count everything P links.
type depRule struct {
	who    func(name string, r row) bool
	banned string
	direct bool
	why    string
}

// in reports whether list holds the rule's banned package, or one under
// it; an airlock package is banned alone (sandbox, not sandbox/boxinit).
func (d depRule) in(list []string) bool {
	if exactBans[d.banned] || strings.HasPrefix(d.banned, module+"/") {
		return slices.Contains(list, d.banned)
	}
	return hasPrefixIn(list, d.banned)
}

var depRules = append([]depRule{
	{func(_ string, r row) bool { return r.layer < jobs }, "go.temporal.io/sdk", false,
		"only jobs and the layers above it reach Temporal"},
	{func(p string, r row) bool { return p != "jobs" && !strings.HasPrefix(p, "jobs/") && r.layer != tests },
		"go.temporal.io/sdk", true, "only jobs imports the Temporal SDK; the front ends go through it"},
	{func(p string, r row) bool { return p != "jobs/server" && p != "cmd/airlock-server" && r.layer != tests },
		"go.temporal.io/server", false, "only jobs/server imports the Temporal server, and only airlock-server links it (the airlock binary never carries it)"},
	{func(p string, _ row) bool { return slices.Contains(temporalFree, p) }, "go.temporal.io", false,
		"the airlock binary links no Temporal package, since every `airlock run`, its guard and every box's init pay for what it links: the node is airlock-node and the server airlock-server (internal/fleetcli), and the CLI's HTTP clients read jobs/wire and api/wire"},
	{func(p string, _ row) bool { return slices.Contains(temporalFree, p) }, "go.opentelemetry.io", false,
		"the airlock binary links no OpenTelemetry package, since every `airlock run`, its guard and every box's init pay for what it links (the SDK and its exporter are some 35 packages of initialisation and page faults): its trace file is written by audit.SpanWriter, and audit/otelaudit, which takes a tracer, is for programs that bring one"},
}, append(append(mcpDepRules(), boxDepRules()...), startLight()...)...)

// exactBans are banned alone, not with the packages under them (unicode,
// not unicode/utf8).
var exactBans = map[string]bool{"unicode": true}

// startLight keeps reflect and unicode out of what the hand-over to
// `airlock warm` links (internal/warmhand, run while the airlock binary
// starts): Go initialises all a package imports before it, taking the ready
// one first in import-path order, and with reflect (or unicode, which makes
// it ready) come fmt, encoding/json and most of the binary's
// initialisation (crypto, compress, debug/dwarf, ...), about a millisecond
// of every warm `airlock run`.
func startLight() []depRule {
	var rules []depRule
	for _, banned := range []string{"reflect", "unicode", "fmt", "encoding/json", "golang.org/x/sys/unix", "net"} {
		rules = append(rules, depRule{who: func(p string, _ row) bool { return p == "internal/warmhand" || p == "internal/warmhand/atstart" }, banned: banned,
			why: "the hand-over runs while the airlock binary starts, before what it does not import is initialised (internal/warmhand/atstart)"})
	}
	return rules
}

// mcpBanned is what the MCP front ends and the file store's commands link
// that the airlock binary (temporalFree: its main and its CLI) must not,
// checked against its whole closure (go list -deps): every `airlock run`,
// its guard and every box's init would pay for their start (gob's and JSON
// Schema's inits alone take half a millisecond, SQLite's C runtime a
// millisecond). `airlock mcp`, `airlock files` and `airlock read-result`
// are the airlock-mcp binary (internal/mcpcli).
var mcpBanned = []struct{ pkg, what string }{
	{"github.com/modelcontextprotocol/go-sdk", "the MCP SDK"},
	{"github.com/google/jsonschema-go", "the MCP SDK's JSON Schema"},
	{"golang.org/x/oauth2", "the MCP SDK's OAuth"},
	{"github.com/segmentio/encoding", "the MCP SDK's JSON"},
	{"encoding/gob", "gob"},
	{module + "/mcp/serve", "mcp serve"},
	{module + "/mcp/gateway", "the MCP gateway"},
	{module + "/mcp/httpfront", "the MCP HTTP front"},
	{module + "/internal/mcpcli", "the MCP commands"},
	{module + "/files/sqldriver", "the file store's SQLite driver (no `airlock run` opens a store; `airlock files` and `read-result` are airlock-mcp's)"},
	{"modernc.org/sqlite", "SQLite"},
	{"modernc.org/libc", "SQLite's C runtime"},
}

// mcpDepRules are mcpBanned as depRules.
func mcpDepRules() (out []depRule) {
	for _, b := range mcpBanned {
		out = append(out, depRule{who: func(p string, _ row) bool { return slices.Contains(temporalFree, p) }, banned: b.pkg,
			why: "the airlock binary links no MCP front end and no SQLite, since every `airlock run`, its guard and every box's init pay for what it links: `airlock mcp`, `files` and `read-result` hand over to airlock-mcp (internal/mcpcli), so it never links " + b.what})
	}
	return out
}

// boxBinary is the in-box binary: every box starts it, so it pays for
// each package it links; boxBanned is what it must not link, checked
// against its whole closure (go list -deps).
const boxBinary = "cmd/airlock-box"

var boxBanned = []struct{ pkg, what string }{
	{"net/http", "the HTTP stack (the CONNECT answer is read exactly by egress/forward)"},
	{"crypto/tls", "TLS"},
	{module + "/policy", "the policy"},
	{module + "/mediator", "the mediator"},
	{module + "/runner", "the runner"},
	{module + "/sandbox", "the host planner"},
	{module + "/audit", "the audit log"},
	{module + "/egress", "the egress proxy (only its in-box half, egress/forward)"},
	{module + "/internal/cli", "the CLI"},
	{module + "/escape", "the escape matrix"},
	{"modernc.org/sqlite", "SQLite"},
	{"modernc.org/libc", "SQLite's C runtime"},
	{"github.com/modelcontextprotocol/go-sdk", "the MCP SDK"},
	{"go.temporal.io", "Temporal"},
	{"encoding/gob", "gob"},
}

// boxDepRules are boxBanned as depRules.
func boxDepRules() (out []depRule) {
	for _, b := range boxBanned {
		out = append(out, depRule{who: func(p string, _ row) bool { return p == boxBinary }, banned: b.pkg,
			why: "airlock-box, which every box starts, links only the in-box code (sandbox/boxinit, egress/forward), not " + b.what})
	}
	return out
}

// temporalFree are the packages of the airlock binary that must link no
// Temporal package at all: its main and the CLI it runs.
var temporalFree = []string{"cmd/airlock", "internal/cli"}

// violations checks pkgs against the table tab and the rules outside it.
func violations(pkgs map[string]*pkg, tab map[string]row) []violation {
	var out []violation
	add := func(name, imp, format string, args ...any) {
		out = append(out, violation{pkg: name, imp: imp, what: fmt.Sprintf(format, args...)})
	}
	for _, name := range sorted(pkgs) {
		p := pkgs[name]
		r, placed := tab[name]
		if !placed {
			add(name, "", "is not in the table: place it in its layer in internal/importrules/table_test.go (DESIGN.md, Parts and their boundaries)")
		}
		for _, imp := range p.AllImports {
			rest, ours := strings.CutPrefix(imp, module+"/")
			switch {
			case ours && placed && !mayImport(r, rest):
				add(name, rest, "imports %s: %s", rest, whyNot(tab, name, rest))
			case !ours && r.pure && slices.Contains(ioPackages, imp):
				add(name, "", "imports %s: %s does no I/O (DESIGN.md)", imp, name)
			}
		}
		if placed && r.starts != "" && len(p.Starts) == 0 {
			add(name, "", "starts no process, yet its row lets it (%s): clear the row's starts field", r.starts)
		}
		if r.starts == "" {
			for _, s := range p.Starts {
				add(name, "", "starts a process (%s): only runner and the in-box init start processes (DESIGN.md: runner is the only code that executes processes; the table's starts field names the rest)", s)
			}
		}
		for _, d := range depRules {
			switch {
			case !d.who(name, r):
			case d.in(p.AllImports):
				add(name, "", "imports %s: %s", d.banned, d.why)
			case !d.direct && d.in(p.Deps):
				add(name, "", "depends on %s: %s", d.banned, d.why)
			}
		}
	}
	return out
}

// mayImport reports whether the row lets its package import imp.
func mayImport(r row, imp string) bool {
	return slices.Contains(r.may, imp) || (imp == universal && r.layer != tests)
}

// whyNot explains a forbidden import with the rule it breaks, where one
// does, else with the table.
func whyNot(tab map[string]row, name, imp string) string {
	switch {
	case tab[name].layer == frontEnds && bannedForFrontEnd(imp):
		return "a front end translates; the loop's work (boxes, runs, fitting, offloading, files) is the mediator's"
	case imp == "runner":
		return "only the mediator drives runner (DESIGN.md: runner executes, the mediator decides)"
	case name == "sandbox/boxinit":
		return "the in-box init imports only " + strings.Join(boxInitMay, ", ") + ", never the host planner"
	case imp == "internal/cli":
		return "the CLI is wiring; no part imports it"
	case tab[imp].layer == tests:
		return "only _test.go files import a package of tests"
	case tab[name].layer == tests:
		return "a package of tests imports no airlock package, so every package's own tests can use it"
	}
	if _, ok := tab[imp]; !ok {
		return imp + " is not in the table"
	}
	return fmt.Sprintf("not in its row of the table (%s may import: %s)", name, strings.Join(tab[name].may, ", "))
}

// hasPrefixIn reports whether a path in list is prefix or under it.
func hasPrefixIn(list []string, prefix string) bool {
	for _, s := range list {
		if s == prefix || strings.HasPrefix(s, prefix+"/") {
			return true
		}
	}
	return false
}

// settle splits vs into what fails and what is tolerated by a pending
// entry, and fails every pending entry that is no longer a violation (the
// lists only shrink).
func settle(vs []violation, lists ...[]pending) (fail, tolerated []string) {
	waiting := map[[2]string]pending{} // {pkg, import} -> its entry
	for _, l := range lists {
		for _, p := range l {
			waiting[[2]string{p.pkg, p.imp}] = p
		}
	}
	used := map[[2]string]bool{}
	for _, v := range vs {
		key := [2]string{v.pkg, v.imp}
		if p, ok := waiting[key]; ok && v.imp != "" {
			used[key] = true
			tolerated = append(tolerated, fmt.Sprintf("pending: %s (%s)", v, p.why))
			continue
		}
		fail = append(fail, v.String())
	}
	for _, l := range lists {
		for _, p := range l {
			if !used[[2]string{p.pkg, p.imp}] {
				fail = append(fail, fmt.Sprintf("pending entry {%s, %s} is no longer a violation: remove it from the pending list", p.pkg, p.imp))
			}
		}
	}
	return fail, tolerated
}
