package wiring

import (
	"path/filepath"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/sandbox"
)

// BenchmarkBuild times one kernel's build as `airlock run` makes it (and a
// per-user server would for every call): the policy found, read and
// compiled, the private paths checked, the audit log opened and its last
// record read, the broker and the mediator made; closing it included. The
// cases are the built-in profile and a policy file in the working
// directory.
//
// With a policy file, its parse kept by its bytes (parseKept), against
// the build before, alternating runs of 1000 on the 2-core machine under
// other work: 470-570 µs and 683 allocs, now 280-400 µs and 554 allocs.
// Most of what is left is the host's: the approvals socket made and
// removed, the private paths walked, the audit log opened.
func BenchmarkBuild(b *testing.B) {
	exe := testsupport.AirlockBin(b)
	for _, c := range []struct{ name, policy string }{
		{"builtin", ""},
		{"file", "fs: {read: [.]}\nshell: {allow: [git, ls, cat, go]}\nnet: {allow: [\"proxy.golang.org:443\"]}\n"},
	} {
		b.Run(c.name, func(b *testing.B) {
			_, work, getenv := privateWorld(b)
			if c.policy != "" {
				writeFile(b, filepath.Join(work, "airlock.yaml"), c.policy)
			}
			cfg := Config{Dir: work, Getenv: getenv, Mode: "observe", Tier: sandbox.Tier1, Exe: exe}
			for b.Loop() {
				k, err := Build(cfg)
				if err != nil {
					b.Fatal(err)
				}
				k.Close()
			}
		})
	}
}
