package policy

import "testing"

// TestIsolationGVisor: `isolation: gvisor` parses, and narrowing never
// takes it away nor adds none to it.
func TestIsolationGVisor(t *testing.T) {
	parse := func(t *testing.T, doc string) *Policy {
		t.Helper()
		p, err := ParseNarrowing("p.yaml", []byte(doc))
		if err != nil {
			t.Fatalf("parse %q: %v", doc, err)
		}
		return p
	}
	if p := parse(t, "isolation: gvisor\n"); p.Isolation != "gvisor" {
		t.Fatalf("got isolation %q, want gvisor", p.Isolation)
	}
	rows := []struct {
		name       string
		base, narr string
		want       string
	}{
		{"gvisor base, auto narrowing", "isolation: gvisor\n", "isolation: auto\n", "gvisor"},
		{"gvisor base, none narrowing", "isolation: gvisor\n", "isolation: none\n", "gvisor"},
		{"gvisor base, silent narrowing", "isolation: gvisor\n", "fs: {read: [.]}\n", "gvisor"},
		{"auto base, gvisor narrowing", "isolation: auto\n", "isolation: gvisor\n", "gvisor"},
		{"none base, gvisor narrowing", "isolation: none\n", "isolation: gvisor\n", "gvisor"},
		{"none base, none narrowing", "isolation: none\n", "isolation: none\n", "none"},
		{"auto base, none narrowing", "isolation: auto\n", "isolation: none\n", "auto"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			base, err := Parse("base.yaml", []byte(r.base))
			if err != nil {
				t.Fatal(err)
			}
			if got := base.Narrow(parse(t, r.narr)).Isolation; got != r.want {
				t.Errorf("got isolation %q, want %q", got, r.want)
			}
		})
	}
}
