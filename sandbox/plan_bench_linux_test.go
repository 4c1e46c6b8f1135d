package sandbox

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// defaultSpec is the box the default policy asks for in workdir (the
// mediator's specFor for the workspace profile): the working directory
// readable, an environment built from nothing, the default limits and the
// kernel's caches under state.
func defaultSpec(workdir, state string) Spec {
	return Spec{
		Workdir: workdir,
		Read:    []string{workdir},
		Env: []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.bareRepository", "GIT_CONFIG_VALUE_0=explicit",
			"HOME=/home/airlock", "LANG=C.UTF-8", "LOGNAME=airlock", "PATH=/usr/local/bin:/usr/bin:/bin",
			"PWD=" + workdir, "TERM=dumb", "TMPDIR=/tmp", "USER=airlock"},
		Limits: Limits{MemoryBytes: 4 << 30, CPU: 2, Wall: 30 * time.Minute, Pids: 1024},
		Caches: NewCaches(CacheConfig{ProbeFile: filepath.Join(state, "probe.json"), EtcViewDir: filepath.Join(state, "etc")}),
	}
}

// BenchmarkPlan times one tier-1 plan of the default policy's box, cold
// (a box per call) and warm (PlanWarmKey, what a warm pool plans per call
// for the fingerprint), with the kernel's caches as the CLI wires them,
// in an empty working directory and in a checkout.
//
// Against the planner before the /etc files were known by their stat,
// /etc's names kept by its stamp, the view's key appended with strconv,
// the seccomp filter compiled once, the writable trees stat once per
// check and the sysctls read with an open and a read (best of five
// alternating runs of 800 on the 2-core machine under other work; system
// calls counted with strace -c, runtime's own left out):
//
//	warm      878 µs, 1623 allocs, 610 calls   now 718 µs, 882 allocs, 543 calls
//	checkout  903 µs, 1681 allocs              now 771 µs, 940 allocs
//
// What is left is mostly the /etc view's check: a stat of every
// directory and regular file beneath its sources and in the view (some
// 130), which no cheaper stamp stands for.
func BenchmarkPlan(b *testing.B) {
	testsupport.Require(b, testsupport.Bwrap)
	exe := testsupport.AirlockBin(b)
	state := b.TempDir()
	if err := os.Chmod(state, 0o700); err != nil {
		b.Fatal(err)
	}
	empty := defaultSpec(b.TempDir(), state)
	// A checkout: a repository's protected files and the policy file.
	repo := b.TempDir()
	for _, d := range []string{".git/hooks", ".git/objects", ".git/refs", "src"} {
		if err := os.MkdirAll(filepath.Join(repo, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	for name, content := range map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/config": "[core]\n", "airlock.yaml": "fs: {read: [.]}\n", ".envrc": "x\n"} {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	checkout := defaultSpec(repo, state)
	checkout.PolicyFile = filepath.Join(repo, "airlock.yaml")
	for _, c := range []struct {
		name string
		spec Spec
		plan func(Spec, Tier, string) (*Box, error)
	}{{"cold", empty, Plan}, {"warm", empty, PlanWarmKey}, {"checkout", checkout, Plan}} {
		b.Run(c.name, func(b *testing.B) {
			spec := c.spec
			for b.Loop() {
				box, err := c.plan(spec, Tier1, exe)
				if err != nil {
					b.Fatal(err)
				}
				box.Fingerprint()
				box.Close()
			}
		})
	}
}
