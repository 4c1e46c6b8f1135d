package policy

import (
	"fmt"
	"strings"
	"testing"
)

// bigPolicy is a 200-rule policy: 100 allowed programs, argument rules for
// 25 of them (4 patterns each), 40 fs entries, 30 net entries, 30 env names.
func bigPolicy(tb testing.TB) *Checker {
	tb.Helper()
	var b strings.Builder
	b.WriteString("shell:\n  allow: [git, go, ls, cat")
	for i := 0; i < 96; i++ {
		fmt.Fprintf(&b, ", tool%d", i)
	}
	b.WriteString("]\n  args:\n")
	b.WriteString("    git:\n      allow: [\"status *\", \"log *\", \"diff *\"]\n      deny: [\"push --force\"]\n")
	for i := 0; i < 24; i++ {
		fmt.Fprintf(&b, "    tool%d:\n      allow: [\"run *\", \"check -v\"]\n      deny: [\"--unsafe\"]\n      escalate: [\"publish *\"]\n", i)
	}
	b.WriteString("fs:\n  read: [")
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&b, "%q, ", fmt.Sprintf("/opt/r%d/**/include", i))
	}
	b.WriteString("\".\"]\n  write: [")
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&b, "%q, ", fmt.Sprintf("out%d", i))
	}
	b.WriteString("src]\nnet:\n  allow: [")
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&b, "\"h%d.example.com:443\", ", i)
	}
	b.WriteString("\"*.github.com\"]\nenv:\n  allow: [")
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&b, "VAR_%d, ", i)
	}
	b.WriteString("HOME]\n")
	p, err := Parse("big.yaml", []byte(b.String()))
	if err != nil {
		tb.Fatal(err)
	}
	c, err := p.Compile(World{Workdir: "/work/proj", Home: "/home/agent",
		LookPath: func(name string) (string, error) { return "/usr/bin/" + name, nil }})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// TestNoAllocs holds the allow path for an argv call to zero allocations:
// a listed program, and a program whose arguments pass an allow pattern.
func TestNoAllocs(t *testing.T) {
	c := bigPolicy(t)
	calls := map[string][]string{
		"listed program":                  {"ls", "-la", "src"},
		"argument allow pattern":          {"git", "status", "--short"},
		"argument rules, clustered flags": {"tool3", "check", "-v"},
	}
	for name, argv := range calls {
		t.Run(name, func(t *testing.T) {
			if d := c.Argv(argv); d.Verdict != Allow {
				t.Fatalf("got %v (%s), want allow", d.Verdict, d.Rule)
			}
			if n := testing.AllocsPerRun(1000, func() { c.Argv(argv) }); n != 0 {
				t.Errorf("got %v allocations per decision, want 0", n)
			}
		})
	}
}

func benchDecisions(b *testing.B, f func(c *Checker)) {
	c := bigPolicy(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		f(c)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}

// The baseline: the cheapest decision there is, a listed program with no
// argument rules.
func BenchmarkArgvListed(b *testing.B) {
	argv := []string{"ls", "-la"}
	benchDecisions(b, func(c *Checker) { c.Argv(argv) })
}

func BenchmarkArgvArgsAllow(b *testing.B) {
	argv := []string{"git", "log", "--oneline", "-n", "5"}
	benchDecisions(b, func(c *Checker) { c.Argv(argv) })
}

func BenchmarkArgvArgsDeny(b *testing.B) {
	argv := []string{"git", "push", "origin", "main", "--force"}
	benchDecisions(b, func(c *Checker) { c.Argv(argv) })
}

func BenchmarkArgvUnlisted(b *testing.B) {
	argv := []string{"curl", "https://example.com"}
	benchDecisions(b, func(c *Checker) { c.Argv(argv) })
}

func BenchmarkArgvPathQualified(b *testing.B) {
	argv := []string{"/usr/bin/git", "status"}
	benchDecisions(b, func(c *Checker) { c.Argv(argv) })
}

func BenchmarkPathRead(b *testing.B) {
	benchDecisions(b, func(c *Checker) { c.Path(Read, "src/pkg/file.go") })
}

func BenchmarkNet(b *testing.B) {
	benchDecisions(b, func(c *Checker) { c.Net("api.github.com", 443) })
}

func BenchmarkEnv(b *testing.B) {
	benchDecisions(b, func(c *Checker) { c.Env("VAR_17") })
}

func BenchmarkShell(b *testing.B) {
	benchDecisions(b, func(c *Checker) { c.Shell("git status && ls -la | cat") })
}
