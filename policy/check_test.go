package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStrictest(t *testing.T) {
	a := Decision{Verdict: Allow, Rule: "a"}
	e1 := Decision{Verdict: Escalate, Rule: "e1"}
	e2 := Decision{Verdict: Escalate, Rule: "e2"}
	d := Decision{Verdict: Deny, Rule: "d"}
	tests := []struct {
		name string
		in   []Decision
		want string
	}{
		{"none", nil, "default"},
		{"deny wins", []Decision{a, e1, d, e2}, "d"},
		{"escalate over allow", []Decision{a, e2, e1}, "e2"},
		{"first of equals", []Decision{e1, e2}, "e1"},
		{"allow alone", []Decision{a}, "a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Strictest(tc.in...).Rule; got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestVerdictText(t *testing.T) {
	for _, v := range []Verdict{Allow, Escalate, Deny} {
		b, err := v.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Verdict
		if err := back.UnmarshalText(b); err != nil || back != v {
			t.Errorf("got %v, %v from %q; want %v", back, err, b, v)
		}
	}
	if _, err := Verdict(9).MarshalText(); err == nil {
		t.Error("got no error marshalling verdict 9")
	}
	var v Verdict
	if err := v.UnmarshalText([]byte("maybe")); err == nil {
		t.Error("got no error for verdict \"maybe\"")
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name string
		p    *Policy
		w    World
		want string
	}{
		{"nil policy", nil, World{Workdir: "/w"}, "no policy"},
		{"relative workdir", Workspace(), World{Workdir: "w"}, "absolute"},
		{"relative home", Workspace(), World{Workdir: "/w", Home: "h"}, "home directory"},
		{"bad fs entry", &Policy{FS: FS{Read: []string{"[x"}}}, World{Workdir: "/w"}, "fs.read[0]"},
		{"bad program", &Policy{Shell: Shell{Allow: []string{"a b"}}}, World{Workdir: "/w"}, "shell.allow[0]"},
		{"bad args key", &Policy{Shell: Shell{Args: map[string]ArgRules{"/bin/x": {}}}}, World{Workdir: "/w"}, "shell.args./bin/x"},
		{"bad net", &Policy{Net: Net{Allow: []string{"a b"}}}, World{Workdir: "/w"}, "net.allow[0]"},
		{"bad dns", &Policy{Net: Net{DNS: "some"}}, World{Workdir: "/w"}, "net.dns"},
		{"bad env", &Policy{Env: EnvRules{Allow: []string{"A B"}}}, World{Workdir: "/w"}, "env.allow[0]"},
		{"bad tool", &Policy{Tools: map[string]ToolRule{"a..b": {}}}, World{Workdir: "/w"}, "tools.a..b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.p.Compile(tc.w)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestIntersectNet(t *testing.T) {
	tests := []struct {
		name       string
		base, call []string
		want       []string
	}{
		{"not given", []string{"a.com"}, nil, []string{"a.com"}},
		{"subdomain of a wildcard", []string{"*.github.com"}, []string{"api.github.com", "evil.com"}, []string{"api.github.com"}},
		{"wildcard not its apex", []string{"*.github.com"}, []string{"github.com"}, []string{}},
		{"narrower wildcard", []string{"*.example.com"}, []string{"*.a.example.com", "*.example.com.evil"}, []string{"*.a.example.com"}},
		{"port inside default ports", []string{"a.com"}, []string{"a.com:443", "a.com:22", "a.com:*"}, []string{"a.com:443", "a.com"}},
		{"any port covers", []string{"a.com:*"}, []string{"a.com", "a.com:8443"}, []string{"a.com", "a.com:8443"}},
		{"base entry inside the call's", []string{"a.com:443"}, []string{"a.com:*"}, []string{"a.com:443"}},
		{"cidr", []string{"10.0.0.0/8:5432"}, []string{"10.1.2.3:5432", "10.1.0.0/16:5432", "11.0.0.1:5432", "10.1.2.3:22"},
			[]string{"10.1.2.3:5432", "10.1.0.0/16:5432"}},
		{"ip spellings", []string{"127.0.0.1:8080"}, []string{"127.1:8080"}, []string{"127.1:8080"}},
		{"names never match addresses", []string{"localhost:80"}, []string{"127.0.0.1:80"}, []string{}},
		{"v6", []string{"[::1]:8080"}, []string{"[::1]:8080", "[::2]:8080"}, []string{"[::1]:8080"}},
		{"case and trailing dot", []string{"API.github.com."}, []string{"api.github.com"}, []string{"api.github.com"}},
		{"unparsable dropped", []string{"a.com"}, []string{"a .com"}, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := intersectNet(tc.base, tc.call); !cmp.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestWorldWithoutHelpers(t *testing.T) {
	p, err := Parse("p.yaml", []byte("fs:\n  read: [\"~/.cache\", src]\nshell:\n  allow: [git]\n"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Compile(World{Workdir: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		d    Decision
		want Verdict
	}{
		{"home path without a home", c.Path(Read, "~/.cache/x"), Deny},
		{"absolute path under no home", c.Path(Read, "/root/.cache/x"), Deny},
		{"workdir entry still works", c.Path(Read, "src/a"), Allow},
		{"bare name", c.Argv([]string{"git", "status"}), Allow},
		{"qualified name without LookPath", c.Argv([]string{"/usr/bin/git", "status"}), Deny},
	} {
		if tc.d.Verdict != tc.want {
			t.Errorf("%s: got %v (%s), want %v", tc.name, tc.d.Verdict, tc.d.Rule, tc.want)
		}
	}
}

// A Checker is shared by every call of a run; decisions from many
// goroutines at once must agree with decisions made one at a time (the
// race detector checks the rest).
func TestConcurrentDecisions(t *testing.T) {
	c := bigPolicy(t)
	calls := [][]string{{"git", "status"}, {"git", "push", "--force"}, {"curl", "x"}, {"sh", "-c", "ls; rm -rf /"}, {"tool3", "publish", "x"}}
	want := make([]Decision, len(calls))
	for i, argv := range calls {
		want[i] = c.Argv(argv)
	}
	done := make(chan error)
	for g := 0; g < 8; g++ {
		go func() {
			for n := 0; n < 200; n++ {
				i := (g + n) % len(calls)
				if got := c.Argv(calls[i]); got != want[i] {
					done <- fmt.Errorf("%q: got %+v, want %+v", calls[i], got, want[i])
					return
				}
				c.Shell("git status && ls | cat > /dev/null")
				c.Path(Read, "src/x")
			}
			done <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
