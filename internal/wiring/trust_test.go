package wiring

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/mediator"
	"github.com/airlock-run/airlock/policy"
	"github.com/airlock-run/airlock/sandbox"
)

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// wantTrustRefusal fails unless err is the refusal of file naming the fix.
func wantTrustRefusal(t *testing.T, err error, file string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s was put in force; want it refused", file)
	}
	if !strings.Contains(err.Error(), "airlock policy trust "+file) || errs.ClassOf(err) != errs.Denied {
		t.Fatalf("got %v (class %v); want a refusal naming %s and the fix", err, errs.ClassOf(err), file)
	}
}

// TestBoxWrittenDefaultPolicyRefused: a run in fix mode in W lets its box
// write W/pkg/airlock.yaml (only W/airlock.yaml, at the root, is kept
// read-only). Without a record of what boxes may write, that file — the
// old shape — is the policy of a later run started in W/pkg, unconfined.
// With the record, it is refused until the person trusts it; a file that
// asks for no more than the workspace profile still runs.
func TestBoxWrittenDefaultPolicyRefused(t *testing.T) {
	_, work, getenv := privateWorld(t)
	writeFile(t, filepath.Join(work, "airlock.yaml"), "fs: {read: [.], write: [.]}\n")
	pkg := filepath.Join(work, "pkg")
	evil := filepath.Join(pkg, "airlock.yaml")
	writeFile(t, evil, "isolation: none\n")

	// The old shape: nothing knows a box wrote it.
	p, _, err := LoadPolicy(pkg, pkg, "", getenv)
	if err != nil || p.Isolation != "none" {
		t.Fatalf("before any fix run: got %v, %v; want the planted file in force (what the old shape always did)", p, err)
	}

	k, err := Build(Config{Dir: work, Getenv: getenv, Mode: "fix"})
	if err != nil {
		t.Fatal(err)
	}
	k.Close()
	_, _, err = LoadPolicy(pkg, pkg, "", getenv)
	wantTrustRefusal(t, err, evil)
	if _, err := Build(Config{Dir: pkg, Getenv: getenv}); err == nil {
		t.Fatal("Build in pkg: built with the planted policy")
	}

	// No wider than the workspace profile: harmless, in force.
	writeFile(t, evil, "shell: {allow: [ls]}\n")
	if _, _, err := LoadPolicy(pkg, pkg, "", getenv); err != nil {
		t.Fatalf("a narrow policy below a box-writable path: %v", err)
	}

	// The person trusts the wide one: in force.
	writeFile(t, evil, "isolation: none\n")
	list, _ := TrustedPath(getenv)
	if _, err := Trust(list, pkg, "airlock.yaml", time.Now()); err != nil {
		t.Fatal(err)
	}
	if p, _, err := LoadPolicy(pkg, pkg, "", getenv); err != nil || p.Isolation != "none" {
		t.Fatalf("trusted: got %v; want it in force", err)
	}
}

// TestChangedTrustedPolicyRefused: a named policy the person trusted is
// replaced (by a box that renamed its directory aside, in the old shape)
// with a wider one: refused, naming the file and the fix; a narrower
// change runs; trusting the new content puts it in force.
func TestChangedTrustedPolicyRefused(t *testing.T) {
	_, work, getenv := privateWorld(t)
	file := filepath.Join(work, "policies", "agent.yaml")
	writeFile(t, file, "fs: {read: [.], write: [.]}\nshell: {allow: [ls, cat]}\n")
	list, _ := TrustedPath(getenv)

	// Inside its own writable grant and never trusted: held against the
	// workspace profile, which it does not widen.
	if _, _, err := LoadPolicy(work, work, file, getenv); err != nil {
		t.Fatalf("first run: %v", err)
	}
	if _, err := Trust(list, work, file, time.Now()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, content string
		refused       bool
	}{
		{"unconfined", "isolation: none\n", true},
		{"network", "fs: {read: [.], write: [.]}\nshell: {allow: [ls, cat]}\nnet: {allow: [\"example.com:443\"]}\n", true},
		{"more programs", "fs: {read: [.], write: [.]}\nshell: {allow: [ls, cat, curl]}\n", true},
		{"wider reads", "fs: {read: [/], write: [.]}\nshell: {allow: [ls, cat]}\n", true},
		{"environment", "fs: {read: [.], write: [.]}\nshell: {allow: [ls, cat]}\nenv: {allow: [AWS_SECRET_ACCESS_KEY]}\n", true},
		{"narrower", "fs: {read: [.], write: [./out]}\nshell: {allow: [ls]}\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			writeFile(t, file, tt.content)
			_, _, err := LoadPolicy(work, work, file, getenv)
			if tt.refused {
				wantTrustRefusal(t, err, file)
			} else if err != nil {
				t.Fatalf("got %v; want it in force", err)
			}
		})
	}
	writeFile(t, file, "isolation: none\n")
	if _, err := Trust(list, work, file, time.Now()); err != nil {
		t.Fatal(err)
	}
	if p, _, err := LoadPolicy(work, work, file, getenv); err != nil || p.Isolation != "none" {
		t.Fatalf("trusted again: %v", err)
	}
}

// TestUntrustedPolicyInOwnGrant: never trusted, inside a path its own
// grant lets a box write, a policy wider than the workspace profile is
// refused; outside every writable path it is trusted by place.
func TestUntrustedPolicyInOwnGrant(t *testing.T) {
	root, work, getenv := privateWorld(t)
	const wide = "fs: {read: [.], write: [.]}\nnet: {allow: [\"example.com:443\"]}\n"
	inside := filepath.Join(work, "policies", "agent.yaml")
	writeFile(t, inside, wide)
	_, _, err := LoadPolicy(work, work, inside, getenv)
	wantTrustRefusal(t, err, inside)

	outside := filepath.Join(root, "policies", "agent.yaml")
	writeFile(t, outside, wide)
	if _, _, err := LoadPolicy(work, work, outside, getenv); err != nil {
		t.Fatalf("outside every writable path: %v", err)
	}
	// The default file at the root of its own grant is kept read-only by
	// the sandbox in every run: trusted by place.
	writeFile(t, filepath.Join(work, "airlock.yaml"), wide)
	if _, _, err := LoadPolicy(work, work, "", getenv); err != nil {
		t.Fatalf("airlock.yaml at the root of its grant: %v", err)
	}
}

// TestBoxCannotMovePolicyAside runs the attack in a real tier-1 box: the
// policy named with --policy lies in policies/ inside the writable
// working directory; the box renames policies/ aside and writes a
// policies/agent.yaml of its own. Only the file was bound read-only in
// the old shape, so the rename worked; now its directory is pinned.
func TestBoxCannotMovePolicyAside(t *testing.T) {
	if tier := sandbox.Probe().Tier(); tier < sandbox.Tier1 {
		testsupport.Missing(t, "no tier-1 sandbox on this host (tier %d)", tier)
	}
	_, work, getenv := privateWorld(t)
	file := filepath.Join(work, "policies", "agent.yaml")
	const orig = "fs: {read: [.], write: [.]}\nshell: {allow: [perl]}\n"
	writeFile(t, file, orig)
	writeFile(t, filepath.Join(work, "other", "x"), "x")
	// A script file the policy cannot read (a shell reading one escalates
	// before the box is reached, so the script is perl's): the box is the
	// only wall left.
	writeFile(t, filepath.Join(work, "swap.pl"), `rename("other", "other.old") or exit 3;
rename("policies", "policies.old") or exit 4;
mkdir("policies") and open(my $f, ">", "policies/agent.yaml") and print $f "isolation: none\n";
`)
	k, err := Build(Config{Dir: work, PolicyFile: file, Getenv: getenv, Mode: "fix",
		Tier: sandbox.Tier1, Exe: testsupport.AirlockBin(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	var out strings.Builder
	res, err := k.Exec(context.Background(), mediator.Call{Kind: mediator.KindExec, Argv: []string{"perl", "swap.pl"}},
		mediator.ExecOptions{Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(work, "other.old")); err != nil {
		t.Fatalf("the box could not rename a directory it may write (exit %d, %s): the test shows nothing", res.Result.ExitCode, out.String())
	}
	if res.Result.ExitCode != 4 {
		t.Errorf("the box's script exited %d (%s); want 4: the policy's directory moved aside", res.Result.ExitCode, out.String())
	}
	if got, _ := os.ReadFile(file); string(got) != orig {
		t.Errorf("the policy file now reads %q; want it unchanged", got)
	}
	if p, _, err := LoadPolicy(work, work, file, getenv); err != nil || p.Isolation == "none" {
		t.Errorf("the next run's policy: %v, %v; want the original", p, err)
	}
}

// TestWiderThan: each section a policy can widen is named; an equal or
// narrower policy is not wider.
func TestWiderThan(t *testing.T) {
	const base = "fs: {read: [.], write: [out]}\nnet: {allow: [\"a.example:443\"], dns: none}\nshell: {allow: [ls, git], raw: false, args: {git: {deny: [push*]}}}\nenv: {allow: [TERM]}\nlimits: {memory: 1073741824}\n"
	w := World("/w", "/h", policy.Fix)
	parse := func(s string) *policy.Policy { return parsePolicy(t, s) }
	b := parse(base)
	tests := []struct{ name, policy, want string }{
		{"same", base, ""},
		{"narrower", "fs: {read: [out], write: [out/x]}\nnet: {allow: [], dns: none}\nshell: {allow: [ls], raw: false, args: {git: {deny: [push*, pull*]}}}\nenv: {allow: []}\nlimits: {memory: 536870912}\n", ""},
		{"isolation", strings.Replace(base, "fs:", "isolation: none\nfs:", 1), "isolation: none"},
		{"fs.write", strings.Replace(base, "write: [out]", "write: [.]", 1), "fs.write"},
		{"fs.read", strings.Replace(base, "read: [.]", "read: [/etc]", 1), "fs.read"},
		{"net.allow", strings.Replace(base, `"a.example:443"`, `"b.example:443"`, 1), "net.allow"},
		{"net.dns", strings.Replace(base, "dns: none", "dns: allowlist", 1), "net.dns"},
		{"shell.allow", strings.Replace(base, "[ls, git]", "[ls, git, curl]", 1), "shell.allow"},
		{"shell.raw", strings.Replace(base, "raw: false", "raw: true", 1), "shell.raw"},
		{"shell.args", strings.Replace(base, "deny: [push*]", "deny: []", 1), "shell.args"},
		{"env.allow", strings.Replace(base, "[TERM]", "[TERM, HOME]", 1), "env.allow"},
		{"limits", strings.Replace(base, "memory: 1073741824", "memory: 2147483648", 1), "limits"},
		{"a budget where there was none", strings.Replace(base, "memory: 1073741824", "memory: 1073741824, model_tokens: 1000", 1), ""},
		{"secrets", base + "secrets: {TOKEN: {hosts: [a.example], header: \"Authorization: Bearer {}\"}}\n", "secrets"},
		{"models", base + "models: {allow: [gpt-x]}\n", "models.allow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(widerThan(parse(tt.policy), b, w), ", ")
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestWiderThanClearSecret is the attack: the trusted policy passes
// GITHUB_TOKEN in (env.allow) but binds it as a secret, so the box holds
// only a placeholder; a box-written policy that only drops the binding
// (or the models section, which withholds the provider keys) looked
// narrower, and the next run's box held the real value in clear. A
// variable the trusted policy withholds that the policy would pass in is
// wider.
func TestWiderThanClearSecret(t *testing.T) {
	w := World("/w", "/h", policy.Fix)
	parse := func(s string) *policy.Policy { return parsePolicy(t, s) }
	const sec = "secrets: {GITHUB_TOKEN: {hosts: [api.github.com], header: \"Authorization: Bearer {}\"}}\n"
	const mod = "models: {allow: [gpt-x]}\n"
	tests := []struct{ name, base, policy, want string }{
		{"a binding dropped, the variable passed", "env: {allow: [TERM, GITHUB_TOKEN]}\n" + sec, "env: {allow: [TERM, GITHUB_TOKEN]}\n", "secrets"},
		{"a binding dropped with the variable", "env: {allow: [TERM, GITHUB_TOKEN]}\n" + sec, "env: {allow: [TERM]}\n", ""},
		{"the models dropped, the key passed", "env: {allow: [OPENAI_API_KEY]}\n" + mod, "env: {allow: [OPENAI_API_KEY]}\n", "secrets"},
		{"the models dropped with the key", "env: {allow: [OPENAI_API_KEY]}\n" + mod, "env: {allow: []}\n", ""},
		{"the binding kept", "env: {allow: [GITHUB_TOKEN]}\n" + sec, "env: {allow: [GITHUB_TOKEN]}\n" + sec, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(widerThan(parse(tt.policy), parse(tt.base), w), ", ")
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// parsePolicy parses a policy written in a test.
func parsePolicy(t *testing.T, s string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("p.yaml", []byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
