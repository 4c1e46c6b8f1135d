package policy

import "testing"

// TestToolCondFoldedKeys: a condition names an argument exactly, but a
// server written in Go reads its arguments into a struct, and Go's
// encoding/json matches field names without case: {"Path": ...} is its
// path. A rule that denies a path under /etc and allows the rest then let
// {"Path": "/etc/shadow"} through (no "path" argument: the condition did
// not hold), and the server read /etc/shadow. An argument is found under
// its name in any case; where two keys alike under folding disagree, the
// stricter verdict holds.
func TestToolCondFoldedKeys(t *testing.T) {
	p, err := Parse("p.yaml", []byte(`
tools:
  read: {verdict: deny, when: {path: ["/etc/**"]}, else: allow}
  write: {verdict: allow, when: {path: ["/w/**"]}, else: deny}
`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Compile(World{Workdir: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		want       Verdict
	}{
		{"exact name", "read", map[string]any{"path": "/etc/shadow"}, Deny},
		{"capitalised", "read", map[string]any{"Path": "/etc/shadow"}, Deny},
		{"upper case", "read", map[string]any{"PATH": "/etc/shadow"}, Deny},
		{"exact name, elsewhere", "read", map[string]any{"path": "/w/x"}, Allow},
		{"two spellings disagree (deny rule)", "read", map[string]any{"path": "/w/x", "PATH": "/etc/shadow"}, Deny},
		{"allow rule, capitalised inside", "write", map[string]any{"Path": "/w/x"}, Allow},
		{"allow rule, capitalised outside", "write", map[string]any{"Path": "/etc/x"}, Deny},
		{"two spellings disagree (allow rule)", "write", map[string]any{"path": "/w/x", "Path": "/etc/x"}, Deny},
		{"missing", "write", map[string]any{}, Deny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.Tool(tc.tool, tc.args); got.Verdict != tc.want {
				t.Errorf("%s %v: got %v (%s), want %v", tc.tool, tc.args, got.Verdict, got.Rule, tc.want)
			}
		})
	}
}
