package policy

import "strings"

// ToolRule decides calls of one tool. The short forms `true`, `false` and
// `escalate` set only Verdict. The long form adds conditions on arguments:
//
//	tools:
//	  fs.write: {verdict: allow, when: {path: "src/**"}, else: deny}
//
// When every argument named in When is a string matching one of its
// patterns, the verdict is Verdict; otherwise it is Else (escalate unless
// given). A missing argument, or one that is not a string, never matches.
// An argument is found under its name in any case (a Go server reads
// "Path" as "path"); two spellings that disagree get the stricter verdict.
type ToolRule struct {
	Verdict Verdict             `json:"verdict"`
	When    map[string][]string `json:"when,omitempty"`
	Else    Verdict             `json:"else,omitempty"`
}

// isPathPattern tells a path condition ("src/**", "./out", "/etc/*",
// "~/x") from a word condition ("main", "feature-*"). Path conditions are
// matched after the argument is made canonical like any fs path, so
// "src/../../etc/passwd" is never under "src/**".
func isPathPattern(s string) bool {
	return strings.Contains(s, "/") || s == "." || s == ".." || s == "~" || strings.HasPrefix(s, "./") || strings.HasPrefix(s, "~/")
}

// compiledTool is a ToolRule with its conditions ready to match.
type compiledTool struct {
	rule     string // "tools.fs.read"
	verdict  Verdict
	elseV    Verdict
	conds    []toolCond
	hasConds bool
}

type toolCond struct {
	arg   string
	words []string
	paths []pathPattern
}

func (c *Checker) compileTool(name string, r ToolRule) compiledTool {
	ct := compiledTool{rule: "tools." + name, verdict: r.Verdict, elseV: r.Else, hasConds: len(r.When) > 0}
	for _, arg := range sortedKeys(r.When) {
		tc := toolCond{arg: arg}
		for _, p := range r.When[arg] {
			if isPathPattern(p) {
				tc.paths = append(tc.paths, c.patternsFor(p)...)
			} else {
				tc.words = append(tc.words, p)
			}
		}
		ct.conds = append(ct.conds, tc)
	}
	return ct
}

func (ct *compiledTool) decide(c *Checker, args map[string]any) (Verdict, string) {
	if !ct.hasConds {
		return ct.verdict, ct.rule
	}
	for i := range ct.conds {
		switch ct.conds[i].holds(c, args) {
		case condFails:
			return ct.elseV, ct.rule + ".else"
		case condSplit:
			// A server reads one of the spellings, and which one is
			// its parser's choice: the stricter verdict holds.
			if ct.elseV > ct.verdict {
				return ct.elseV, ct.rule + ".else"
			}
			return ct.verdict, ct.rule + ".when"
		}
	}
	return ct.verdict, ct.rule + ".when"
}

// condResult is how a condition met a call's arguments.
type condResult uint8

const (
	condHolds condResult = iota
	condFails
	condSplit // keys alike under case folding, one matching and one not
)

// holds matches the condition against the argument it names, found under
// its name in any case: a server written in Go reads its arguments into a
// struct, and encoding/json matches field names without case, so for it
// "Path" is "path". The gateway refuses two keys alike under folding, but
// a call may come from elsewhere: when they disagree, the result is split.
func (tc *toolCond) holds(c *Checker, args map[string]any) condResult {
	var vals []any
	if v, ok := args[tc.arg]; ok {
		vals = append(vals, v)
	}
	for k, v := range args {
		if k != tc.arg && strings.EqualFold(k, tc.arg) {
			vals = append(vals, v)
		}
	}
	if len(vals) == 0 {
		return condFails
	}
	first := tc.holdsValue(c, vals[0])
	for _, v := range vals[1:] {
		if tc.holdsValue(c, v) != first {
			return condSplit
		}
	}
	if first {
		return condHolds
	}
	return condFails
}

// holdsValue matches one argument's value: a string under one of the
// condition's words or paths.
func (tc *toolCond) holdsValue(c *Checker, arg any) bool {
	v, ok := arg.(string)
	if !ok {
		return false
	}
	for _, w := range tc.words {
		if wordGlob(w, v) {
			return true
		}
	}
	if len(tc.paths) == 0 || v == "" || strings.ContainsRune(v, 0) {
		return false
	}
	forms, ok := c.canonical(v)
	if !ok {
		return false
	}
	// Every form of the argument must be under a condition pattern, the same
	// rule as fs: a symlink cannot carry a path out of its condition.
	for _, f := range forms.list() {
		hit := false
		for i := range tc.paths {
			if tc.paths[i].covers(f) {
				hit = true
				break
			}
		}
		if !hit {
			return false
		}
	}
	return true
}

// toolLookup finds the rule for name: the exact name, then "server.*", then
// "*". Specific beats general, so `"*": false` with `fs.read: true` allows
// fs.read.
func (c *Checker) toolLookup(name string) (*compiledTool, bool) {
	if t, ok := c.tools[name]; ok {
		return t, true
	}
	if server, _, ok := strings.Cut(name, "."); ok {
		if t, ok := c.tools[server+".*"]; ok {
			return t, true
		}
	}
	if t, ok := c.tools["*"]; ok {
		return t, true
	}
	return nil, false
}
