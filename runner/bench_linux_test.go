package runner

import (
	"context"
	"os/exec"
	"sort"
	"testing"
	"time"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/sandbox"
)

// BenchmarkTrue compares `airlock run -- /bin/true` (runner.Run with the
// default observe-mode Spec, limits included) with bubblewrap started by
// hand with the same mounts and flags running /bin/true directly. The two
// alternate within one run so the host's load weighs on both alike; it
// reports both medians and their ratio (the target is at most 1.3).
func BenchmarkTrue(b *testing.B) {
	if r := sandbox.Probe(); r.Tier() < sandbox.Tier1 {
		testsupport.Missing(b, "tier 1 unavailable here: %s", r.Why)
	}
	exe := testExe(b)
	wd := b.TempDir()
	spec := sandbox.Spec{Workdir: wd, Env: []string{"PATH=/usr/bin:/bin", "HOME=/home/box"}}
	specs := map[string]sandbox.Spec{"nolimits": spec}
	lim := spec
	lim.Limits = sandbox.Limits{MemoryBytes: 2 << 30, CPU: 1, Pids: 512, Wall: time.Hour}
	specs["limits"] = lim
	for _, name := range []string{"nolimits", "limits"} {
		spec := specs[name]
		b.Run(name, func(b *testing.B) {
			var air, bw, plan []time.Duration
			for i := 0; i < b.N; i++ {
				start := time.Now()
				res, err := Run(context.Background(), exe, Request{Argv: []string{"/bin/true"}, Spec: spec, Tier: sandbox.Tier1})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("airlock run: exit %d, %v", res.ExitCode, err)
				}
				air = append(air, time.Since(start))

				start = time.Now()
				box, err := sandbox.Plan(spec, sandbox.Tier1, exe)
				if err != nil {
					b.Fatal(err)
				}
				plan = append(plan, time.Since(start))
				argv := handArgv(box.Argv)
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.Env = []string{}
				cmd.ExtraFiles = box.ExtraFiles
				start = time.Now()
				err = cmd.Run()
				bw = append(bw, time.Since(start))
				box.Close()
				if err != nil {
					b.Fatalf("bwrap by hand: %v", err)
				}
			}
			ma, mb := median(air), median(bw)
			b.ReportMetric(float64(ma.Microseconds())/1000, "airlock-ms")
			b.ReportMetric(float64(mb.Microseconds())/1000, "bwrap-ms")
			b.ReportMetric(float64(ma)/float64(mb), "ratio")
			b.ReportMetric(float64(median(plan).Microseconds())/1000, "plan-ms")
		})
	}
}

// handArgv is bubblewrap's command line with the init replaced by
// /bin/true: the same options (passed the same way), nothing of airlock's
// inside.
func handArgv(argv []string) []string {
	for i, a := range argv {
		if a == "--" {
			return append(append([]string(nil), argv[:i+1]...), "/usr/bin/true")
		}
	}
	return argv
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
