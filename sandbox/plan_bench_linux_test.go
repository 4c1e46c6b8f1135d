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
// for the fingerprint), with the kernel's caches as the CLI wires them.
func BenchmarkPlan(b *testing.B) {
	testsupport.Require(b, testsupport.Bwrap)
	exe := testsupport.AirlockBin(b)
	state := b.TempDir()
	if err := os.Chmod(state, 0o700); err != nil {
		b.Fatal(err)
	}
	spec := defaultSpec(b.TempDir(), state)
	for _, c := range []struct {
		name string
		plan func(Spec, Tier, string) (*Box, error)
	}{{"cold", Plan}, {"warm", PlanWarmKey}} {
		b.Run(c.name, func(b *testing.B) {
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
