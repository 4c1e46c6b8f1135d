package runner

import (
	"os"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/sandbox"
)

// TestLimits shows each limit holding: the same command reaches its goal
// without the limit and fails with it, across the whole process tree.
func TestLimits(t *testing.T) {
	if os.Geteuid() != 0 {
		testsupport.Missing(t, "cgroup limits need root here (or a delegated cgroup)")
	}
	if r := sandbox.Probe(); r.Cgroup.Version == 0 || !r.Cgroup.Writable {
		testsupport.Missing(t, "no writable cgroup hierarchy on this host")
	}
	rows := []struct {
		name   string
		limits sandbox.Limits
		argv   []string
		oom    bool
	}{
		{"memory", sandbox.Limits{MemoryBytes: 32 << 20}, []string{attackArg, "alloc", "96"}, true},
		{"pids", sandbox.Limits{Pids: 40}, []string{attackArg, "fork", "60"}, false},
		// 0.05 cores is 50 ms in the second; the goal is three times that.
		{"cpu", sandbox.Limits{CPU: 0.05}, []string{attackArg, "spin", "150"}, false},
	}
	for _, tc := range tiers() {
		t.Run(tc.name(), func(t *testing.T) {
			if tc.skip != "" {
				tc.gate(t)
			}
			for _, row := range rows {
				t.Run(row.name, func(t *testing.T) {
					if tc.tier == sandbox.Tier2 && row.name == "cpu" {
						gvisorCPULimit(t, row.limits)
						return
					}
					exe := boxExe(t, tc.tier)
					free := runIn(t, tc.tier, withNet(t, tc, baseSpec(t)), "", append([]string{exe}, row.argv...)...)
					if free.err != nil || free.res.ExitCode != 0 {
						t.Skipf("untested here: without the limit the command did not reach its goal (exit %d, err %v): %s", free.res.ExitCode, free.err, free.stdout)
					}
					spec := withNet(t, tc, baseSpec(t))
					spec.Limits = row.limits
					o := runIn(t, tc.tier, spec, "", append([]string{exe}, row.argv...)...)
					if o.err != nil {
						t.Fatalf("run with the limit: %v", o.err)
					}
					if o.res.ExitCode == 0 {
						t.Errorf("with %+v the command still reached its goal: %s", row.limits, strings.TrimSpace(o.stdout))
					}
					if row.oom && !o.res.Description.Limits.OOM {
						t.Errorf("the description does not record the memory limit being hit: %+v", o.res.Description.Limits)
					}
					if o.res.Description.Limits.Cgroup == "" {
						t.Errorf("the description names no cgroup: %+v", o.res.Description.Limits)
					}
				})
			}
		})
	}
}
