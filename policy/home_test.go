package policy

import "testing"

// TestNarrowHome: narrowing may make a kept home fresh, never keep one the
// base policy does not; a narrowing that says nothing lets the base stand.
func TestNarrowHome(t *testing.T) {
	for _, c := range []struct {
		name       string
		base, narr string
		want       string
	}{
		{"both persist", HomePersist, HomePersist, HomePersist},
		{"narrowing silent", HomePersist, "", HomePersist},
		{"narrowing fresh", HomePersist, HomeFresh, HomeFresh},
		{"base fresh, narrowing persist", HomeFresh, HomePersist, HomeFresh},
		{"base unset, narrowing persist", "", HomePersist, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &Policy{Sandbox: SandboxOpts{Home: c.base}}
			n := &Policy{Sandbox: SandboxOpts{Home: c.narr}}
			if got := p.Narrow(n).Sandbox.Home; got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
