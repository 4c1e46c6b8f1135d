package policy

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/decisions")

// testWorld is the machine every golden case runs on: a working directory
// with a few symlinks, a home, and a PATH where every program is in
// /usr/bin (and /bin is a symlink to /usr/bin, as on a merged-/usr system).
func testWorld(mode Mode) World {
	links := map[string]string{
		"/bin":                  "/usr/bin",
		"/work/proj/out-link":   "/etc",
		"/work/proj/home-link":  "/home/agent",
		"/work/proj/src/up":     "/work",
		"/work/proj/build":      "/work/proj/target",
		"/work/proj/policy.yml": "/work/proj/airlock.yaml",
		"/tmp/git":              "/tmp/evil",
		"/work/proj/loop":       "/work/proj/loop",
	}
	return World{
		Workdir: "/work/proj", Home: "/home/agent", Mode: mode, PATH: []string{"/usr/bin"},
		Resolve:  func(p string) (string, error) { return resolveLinks(links, p) },
		LookPath: func(name string) (string, error) { return "/usr/bin/" + name, nil },
	}
}

// resolveLinks walks p component by component the way the kernel does,
// following the links in the table.
func resolveLinks(links map[string]string, p string) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("not absolute: %q", p)
	}
	todo := strings.Split(strings.TrimPrefix(p, "/"), "/")
	cur := "/"
	for hops := 0; len(todo) > 0; {
		seg := todo[0]
		todo = todo[1:]
		switch seg {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, seg)
		if t, ok := links[next]; ok {
			if hops++; hops > 40 {
				return "", fmt.Errorf("too many links")
			}
			todo = append(strings.Split(strings.TrimPrefix(t, "/"), "/"), todo...)
			cur = "/"
			continue
		}
		cur = next
	}
	return cur, nil
}

// A golden file holds sections "-- policy --" (YAML; "workspace" for the
// built-in profile), optionally "-- narrow --" (a narrowing policy),
// "-- grants --" (JSON list) and "-- mode --" (observe or fix), then
// "-- cases --": one call a line, `KIND ARGS => VERDICT RULE`.
//
//	argv ["git","status"]        argv as JSON
//	shell git status && ls       the rest of the line, or a Go-quoted string
//	read PATH / write PATH       a file access
//	net HOST PORT
//	tool NAME {"arg":"value"}
//	env NAME
type goldenFile struct {
	sections map[string]string
	order    []string
}

func readGolden(t *testing.T, name string) goldenFile {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	g := goldenFile{sections: map[string]string{}}
	cur := ""
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if s := strings.TrimSpace(line); strings.HasPrefix(s, "-- ") && strings.HasSuffix(s, " --") {
			cur = strings.TrimSuffix(strings.TrimPrefix(s, "-- "), " --")
			g.order = append(g.order, cur)
			continue
		}
		g.sections[cur] += line
	}
	return g
}

func goldenChecker(t *testing.T, g goldenFile, file string) *Checker {
	t.Helper()
	load := func(sec string, narrowing bool) *Policy {
		src := strings.TrimSpace(g.sections[sec])
		if src == "workspace" {
			return Workspace()
		}
		var p *Policy
		var err error
		if narrowing {
			p, err = ParseNarrowing(file, []byte(src))
		} else {
			p, err = Parse(file, []byte(src))
		}
		if err != nil {
			t.Fatalf("%s: %v", sec, err)
		}
		return p
	}
	p := load("policy", false)
	if p.Source == file {
		p.Source = "/work/proj/airlock.yaml"
	}
	if _, ok := g.sections["narrow"]; ok {
		p = p.Narrow(load("narrow", true))
	}
	if gs := strings.TrimSpace(g.sections["grants"]); gs != "" {
		var grants []Grant
		if err := json.Unmarshal([]byte(gs), &grants); err != nil {
			t.Fatalf("grants: %v", err)
		}
		p = p.WithGrants(grants)
	}
	mode := Observe
	if strings.TrimSpace(g.sections["mode"]) == "fix" {
		mode = Fix
	}
	c, err := p.Compile(testWorld(mode))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// decideLine runs one case line and returns "VERDICT RULE".
func decideLine(c *Checker, call string) (string, error) {
	kind, rest, _ := strings.Cut(call, " ")
	var d Decision
	switch kind {
	case "argv":
		var argv []string
		if err := json.Unmarshal([]byte(rest), &argv); err != nil {
			return "", fmt.Errorf("argv: %v", err)
		}
		d = c.Argv(argv)
	case "shell":
		src := rest
		if strings.HasPrefix(rest, `"`) {
			s, err := strconv.Unquote(rest)
			if err != nil {
				return "", fmt.Errorf("shell: %v", err)
			}
			src = s
		}
		d = c.Shell(src).Overall
	case "read", "write":
		a := Read
		if kind == "write" {
			a = Write
		}
		d = c.Path(a, rest)
	case "net":
		host, port, _ := strings.Cut(rest, " ")
		n, err := strconv.Atoi(port)
		if err != nil {
			return "", fmt.Errorf("net: %v", err)
		}
		d = c.Net(host, n)
	case "tool":
		name, js, _ := strings.Cut(rest, " ")
		var args map[string]any
		if js != "" {
			if err := json.Unmarshal([]byte(js), &args); err != nil {
				return "", fmt.Errorf("tool: %v", err)
			}
		}
		d = c.Tool(name, args)
	case "env":
		d = c.Env(rest)
	default:
		return "", fmt.Errorf("unknown kind %q", kind)
	}
	if d.Verdict != Allow && d.Reason == "" {
		return "", fmt.Errorf("%s without a reason (rule %s)", d.Verdict, d.Rule)
	}
	// The reason is for the agent: it never names the rule.
	if strings.Contains(d.Rule, ".") && strings.Contains(d.Reason, d.Rule) {
		return "", fmt.Errorf("reason %q quotes the rule %s", d.Reason, d.Rule)
	}
	if d.Category != CatTools && (strings.Contains(d.Reason, "shell.") || strings.Contains(d.Reason, "fs.") || strings.Contains(d.Reason, "builtin.")) {
		return "", fmt.Errorf("reason %q names a policy field", d.Reason)
	}
	return d.Verdict.String() + " " + d.Rule, nil
}

func TestGoldenDecisions(t *testing.T) {
	files, err := filepath.Glob("testdata/decisions/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	total := 0
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			g := readGolden(t, file)
			c := goldenChecker(t, g, file)
			var out []string
			for i, line := range strings.Split(strings.TrimRight(g.sections["cases"], "\n"), "\n") {
				s := strings.TrimSpace(line)
				if s == "" || strings.HasPrefix(s, "#") {
					out = append(out, line)
					continue
				}
				call, want, ok := cutLast(s, " => ")
				if !ok {
					call = s
				}
				got, err := decideLine(c, call)
				if err != nil {
					t.Errorf("line %d: %s: %v", i+1, call, err)
					out = append(out, line)
					continue
				}
				total++
				if *update {
					out = append(out, call+" => "+got)
					continue
				}
				if got != want {
					t.Errorf("%s\n  got  %s\n  want %s", call, got, want)
				}
			}
			if *update {
				var b strings.Builder
				for _, sec := range g.order {
					if sec == "cases" {
						continue
					}
					b.WriteString("-- " + sec + " --\n" + g.sections[sec])
				}
				b.WriteString("-- cases --\n" + strings.Join(out, "\n") + "\n")
				if err := os.WriteFile(file, []byte(g.sections[""]+b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	t.Logf("%d golden decisions", total)
	if total < 150 {
		t.Errorf("got %d golden decisions, want at least 150", total)
	}
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}
